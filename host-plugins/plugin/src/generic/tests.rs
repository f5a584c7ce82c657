//! The generic layer on its own, over a small in-memory backend: "device" memory is host
//! memory, a module is a table of globals and kernels the test gives, a launch is recorded.
//! What the backends' own tests check through their fake drivers, checked here once for every
//! backend: symbols by kind, the device environment, launch arguments against the kernel's
//! parameters, launch environments, staged copies.

use super::*;
use crate::image::{testing, ImageKind};
use crate::{AllocKind, Device, ErrorKind, ImageInfo, LaunchConfig, OffloadError, Plugin, Result};
use core::ffi::c_void;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What the in-memory driver's next loaded module holds.
#[derive(Clone, Default)]
struct ModuleSpec {
    globals: Vec<(&'static str, Vec<u8>)>,
    /// Kernels and how many 8-byte parameters each declares.
    kernels: Vec<(&'static str, usize)>,
}

/// One recorded launch: kernel, blocks, threads, the values passed.
type LaunchRecord = (String, [u32; 3], [u32; 3], Vec<u64>);

/// Everything the backend saw, shared with the test.
#[derive(Default)]
struct Record {
    /// Names asked of `global` and of `function`.
    global_lookups: Vec<String>,
    function_lookups: Vec<String>,
    /// (kernel, blocks, threads, values) of every launch.
    launches: Vec<LaunchRecord>,
    /// (host address, bytes) of every host-to-device copy.
    copies_in: Vec<(u64, usize)>,
    /// Live allocations: address -> (bytes, kind).
    live: HashMap<u64, (usize, AllocKind)>,
    /// Every block of "device" memory handed out, freed when the record goes (so Miri's leak
    /// check holds), not at `free`: a test may still look at freed memory.
    owned: Vec<(u64, std::alloc::Layout)>,
}

impl Drop for Record {
    fn drop(&mut self) {
        for &(address, layout) in &self.owned {
            // SAFETY: allocated by `MemoryBackend::memory` with this layout, freed once here;
            // the devices that used it are gone with the last reference to the record.
            unsafe { std::alloc::dealloc(address as *mut u8, layout) };
        }
    }
}

struct MemoryDriver {
    module: ModuleSpec,
    /// Whether large pageable copies should be staged.
    staged: bool,
    record: Arc<Mutex<Record>>,
}

struct MemoryBackend {
    info: DeviceInfo,
    module: ModuleSpec,
    staged: bool,
    record: Arc<Mutex<Record>>,
}

/// A loaded module: its globals in "device" memory, its kernels by name.
struct MemoryModule {
    globals: HashMap<&'static str, (u64, usize)>,
    kernels: HashMap<&'static str, usize>,
}

#[derive(Clone, Copy)]
struct KernelId(usize);

impl Driver for MemoryDriver {
    type Device = MemoryBackend;
    type Properties = ();
    fn name(&self) -> &'static str {
        "memory"
    }
    fn accepts(&self, kind: &ImageKind, _triple: &str) -> bool {
        matches!(kind, ImageKind::Cubin { .. })
    }
    fn initialize(&self) -> std::result::Result<Vec<()>, String> {
        Ok(vec![()])
    }
    fn runs(
        &self,
        _device: &(),
        _kind: &ImageKind,
        _arch: &str,
    ) -> std::result::Result<(), String> {
        Ok(())
    }
    fn open(&self, _device: &(), _index: usize) -> Result<MemoryBackend> {
        Ok(MemoryBackend {
            info: DeviceInfo {
                name: "in-memory GPU".into(),
                arch: "sm_90".into(),
                grid_values: crate::geometry::NVPTX_GRID_VALUES,
                max_block_threads: 1024,
                max_grid_teams: 1 << 30,
                hardware_parallelism: 64,
                clock_frequency: 1_000_000_000,
                total_memory: 1 << 30,
            },
            module: self.module.clone(),
            staged: self.staged,
            record: Arc::clone(&self.record),
        })
    }
}

impl MemoryBackend {
    fn record(&self) -> std::sync::MutexGuard<'_, Record> {
        self.record.lock().unwrap()
    }

    /// Zeroed "device" memory, aligned as a driver's allocations are.
    fn memory(&self, bytes: usize) -> u64 {
        let layout = std::alloc::Layout::from_size_align(bytes.max(1), 256).unwrap();
        // SAFETY: the layout's size is not zero.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of host memory");
        self.record().owned.push((ptr as u64, layout));
        ptr as u64
    }
}

impl Backend for MemoryBackend {
    type Module = MemoryModule;
    type Function = KernelId;
    const INITIALIZERS: Initializers = Initializers::ObjectArray {
        init_kernel: "nvptx$device$init",
        fini_kernel: "nvptx$device$fini",
    };

    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn alloc(&self, bytes: usize, kind: AllocKind) -> Result<u64> {
        let address = self.memory(bytes);
        self.record().live.insert(address, (bytes, kind));
        Ok(address)
    }
    unsafe fn free(&self, address: u64, _kind: AllocKind) -> Result<()> {
        // The memory itself stays until the record goes.
        match self.record().live.remove(&address) {
            Some(_) => Ok(()),
            None => Err(OffloadError::new(
                ErrorKind::InvalidArgument,
                format!("{address:#x} is no allocation"),
            )),
        }
    }
    unsafe fn copy_to_device(&self, device: u64, host: *const u8, bytes: usize) -> Result<()> {
        self.record().copies_in.push((host as u64, bytes));
        // SAFETY: "device" memory is host memory; the generic layer passes valid ranges.
        unsafe { std::ptr::copy(host, device as *mut u8, bytes) };
        Ok(())
    }
    unsafe fn copy_from_device(&self, host: *mut u8, device: u64, bytes: usize) -> Result<()> {
        // SAFETY: as above.
        unsafe { std::ptr::copy(device as *const u8, host, bytes) };
        Ok(())
    }
    unsafe fn copy_within_device(&self, dst: u64, src: u64, bytes: usize) -> Result<()> {
        // SAFETY: as above.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
        Ok(())
    }
    fn load_module(&self, _bytes: &[u8], _kind: &ImageKind) -> Result<MemoryModule> {
        let globals = self
            .module
            .globals
            .iter()
            .map(|(name, initial)| {
                let address = self.memory(initial.len());
                // SAFETY: fresh memory of the initial bytes' size.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        initial.as_ptr(),
                        address as *mut u8,
                        initial.len(),
                    )
                };
                (*name, (address, initial.len()))
            })
            .collect();
        let kernels = self
            .module
            .kernels
            .iter()
            .enumerate()
            .map(|(i, (name, _))| (*name, i))
            .collect();
        Ok(MemoryModule { globals, kernels })
    }
    /// As CUDA's driver: the name of a kernel is an error, not "no such global".
    fn global(&self, module: &MemoryModule, name: &str) -> Result<Option<GlobalSymbol>> {
        self.record().global_lookups.push(name.into());
        if module.kernels.contains_key(name) {
            return Err(OffloadError::new(
                ErrorKind::SymbolNotFound,
                format!("{name} is a kernel, not a global"),
            ));
        }
        Ok(module
            .globals
            .get(name)
            .map(|&(address, size)| GlobalSymbol { address, size }))
    }
    fn function(&self, module: &MemoryModule, name: &str) -> Result<Option<KernelId>> {
        self.record().function_lookups.push(name.into());
        Ok(module.kernels.get(name).map(|&i| KernelId(i)))
    }
    fn function_parameters(&self, function: KernelId) -> Result<Option<KernelParameters>> {
        let count = self.module.kernels[function.0].1;
        Ok(Some(KernelParameters {
            count,
            bytes: 8 * count,
        }))
    }
    fn function_max_threads(&self, _function: KernelId) -> Result<u32> {
        Ok(1024)
    }
    unsafe fn launch(
        &self,
        function: KernelId,
        launch: &KernelLaunch<'_>,
        _while_running: Option<&mut dyn FnMut() -> bool>,
    ) -> Result<()> {
        let name = self.module.kernels[function.0].0.to_string();
        self.record()
            .launches
            .push((name, launch.blocks, launch.threads, launch.args.to_vec()));
        Ok(())
    }
    fn describe(&self) -> String {
        "in memory".into()
    }
    fn stages_pageable_copies(&self) -> bool {
        self.staged
    }
}

fn environment_module() -> ModuleSpec {
    ModuleSpec {
        globals: vec![
            ("__omp_rtl_device_environment", vec![0; 48]),
            ("counter", 7u32.to_le_bytes().to_vec()),
        ],
        kernels: vec![("spmd", 3), ("nvptx$device$init", 0)],
    }
}

/// A device of the in-memory plugin (device 2 of 3) and what its backend records.
fn device(module: ModuleSpec, staged: bool) -> (Box<dyn Device>, Arc<Mutex<Record>>) {
    let record = Arc::new(Mutex::new(Record::default()));
    let plugin = GenericPlugin::new(MemoryDriver {
        module,
        staged,
        record: Arc::clone(&record),
    });
    (plugin.open_device(0, 2, 3).unwrap(), record)
}

fn cubin() -> Vec<u8> {
    testing::elf(crate::image::machine::CUDA, 8, 90 << 8 | 4)
}

fn image(bytes: &[u8]) -> ImageInfo<'_> {
    ImageInfo {
        bytes,
        triple: crate::image::TRIPLE_NVPTX.into(),
        arch: "sm_90".into(),
    }
}

#[test]
fn kernels_are_never_asked_for_as_globals() {
    let (device, record) = device(environment_module(), false);
    let bytes = cubin();
    let loaded = device.load_image(&image(&bytes)).unwrap();
    let spmd = loaded
        .kernel("spmd")
        .unwrap()
        .expect("found by `function` alone");
    let args = [std::ptr::null_mut(); 2];
    // SAFETY: the in-memory kernel takes the launch environment and two values.
    unsafe { loaded.launch(spmd, &args, &LaunchConfig::default()) }.unwrap();
    let record = record.lock().unwrap();
    assert!(
        !record
            .global_lookups
            .iter()
            .any(|n| n == "spmd" || n == "nvptx$device$init"),
        "{:?}",
        record.global_lookups
    );
    assert!(
        !record
            .function_lookups
            .iter()
            .any(|n| n == "counter" || n.starts_with("__omp_rtl")),
        "{:?}",
        record.function_lookups
    );
    assert_eq!(record.launches.iter().filter(|l| l.0 == "spmd").count(), 1);
    drop(record);
    // Asked anyway, the backend's error reaches the caller: never "not in the image".
    let e = loaded.global("spmd").unwrap_err();
    assert!(
        e.message.contains("spmd is a kernel, not a global")
            && e.message.contains("looking up global spmd"),
        "{}",
        e.message
    );
    assert_eq!(loaded.global("counter").unwrap().unwrap().size, 4);
    assert!(loaded.kernel("counter").unwrap().is_none());
}

#[test]
fn the_device_environment_is_written_at_load() {
    let (device, _record) = device(environment_module(), false);
    let bytes = cubin();
    let loaded = device.load_image(&image(&bytes)).unwrap();
    let env = loaded
        .global("__omp_rtl_device_environment")
        .unwrap()
        .unwrap();
    let mut bytes = [0u8; 48];
    // SAFETY: the 48-byte global of this device.
    unsafe { device.copy_from_device(bytes.as_mut_ptr() as *mut c_void, env.address, 48) }.unwrap();
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    assert_eq!((u32_at(4), u32_at(8)), (3, 2), "num_devices, device_num");
    assert_eq!(
        u64::from_le_bytes(bytes[16..24].try_into().unwrap()),
        1_000_000_000,
        "clock"
    );
    assert_eq!(
        u64::from_le_bytes(bytes[40..48].try_into().unwrap()),
        64,
        "hardware parallelism"
    );
}

#[test]
fn launch_values_must_match_the_kernels_parameters() {
    let (device, record) = device(environment_module(), false);
    let bytes = cubin();
    let loaded = device.load_image(&image(&bytes)).unwrap();
    let spmd = loaded.kernel("spmd").unwrap().unwrap();
    for wrong in [0usize, 1, 3, 9] {
        let args = vec![std::ptr::null_mut(); wrong];
        // SAFETY: refused before the backend sees it.
        let e = unsafe { loaded.launch(spmd, &args, &LaunchConfig::default()) }.unwrap_err();
        assert_eq!(e.kind, ErrorKind::LaunchFailed);
        assert!(
            e.message.contains(
                "mismatch in kernel arguments: kernel spmd declares 3 parameter(s) (24 bytes)"
            ),
            "{}",
            e.message
        );
    }
    assert!(
        record
            .lock()
            .unwrap()
            .launches
            .iter()
            .all(|l| l.0 != "spmd"),
        "none reached the backend"
    );
    let args = [0x10 as *mut c_void, 0x20 as *mut c_void];
    // SAFETY: the in-memory kernel takes the launch environment and two values.
    unsafe { loaded.launch(spmd, &args, &LaunchConfig::default()) }.unwrap();
    let launch = record
        .lock()
        .unwrap()
        .launches
        .iter()
        .find(|l| l.0 == "spmd")
        .cloned()
        .unwrap();
    assert_eq!(
        &launch.3[1..],
        &[0x10, 0x20],
        "the values after the launch environment"
    );
    assert_ne!(launch.3[0], 0, "a launch environment");
}

#[test]
#[cfg_attr(
    miri,
    ignore = "megabytes through the interpreter take many minutes; run natively and under ThreadSanitizer"
)]
fn only_large_pageable_copies_are_staged_and_nothing_leaks() {
    let (device, record) = device(environment_module(), true);
    let bytes = (3 << 20) + 5;
    let input: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
    let mut output = vec![0u8; bytes];
    let d = device.alloc(bytes, AllocKind::Device).unwrap();
    let pinned = device.alloc(bytes, AllocKind::Host).unwrap();
    // SAFETY: host buffers and allocations of `bytes` on this device.
    unsafe {
        device
            .copy_to_device(d, input.as_ptr() as *const c_void, bytes)
            .unwrap();
        device
            .copy_from_device(output.as_mut_ptr() as *mut c_void, d, bytes)
            .unwrap();
        device.copy_to_device(d, pinned, bytes).unwrap();
        device
            .copy_to_device(d, input.as_ptr() as *const c_void, 4096)
            .unwrap();
    }
    assert!(input == output);
    let copies = std::mem::take(&mut record.lock().unwrap().copies_in);
    let user = input.as_ptr() as u64;
    assert!(
        copies
            .iter()
            .all(|&(host, _)| host != user || copies.last() == Some(&(user, 4096))),
        "{copies:?}"
    );
    let staged: usize = copies
        .iter()
        .filter(|&&(host, n)| host != user && host != pinned as u64 && n < bytes)
        .map(|c| c.1)
        .sum();
    assert_eq!(
        staged, bytes,
        "the pageable copy went through pinned buffers in chunks"
    );
    assert!(
        copies.contains(&(pinned as u64, bytes)),
        "memory the device pinned goes straight"
    );
    assert_eq!(
        copies.last(),
        Some(&(user, 4096)),
        "small copies go straight"
    );
    // SAFETY: allocations of this device, freed once.
    unsafe {
        device.free(d, AllocKind::Device).unwrap();
        device.free(pinned, AllocKind::Host).unwrap();
    }
    drop(device);
    assert!(
        record.lock().unwrap().live.is_empty(),
        "the staging buffers go with the device"
    );
}
