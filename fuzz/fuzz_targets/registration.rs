//! Registration of a whole `__tgt_bin_desc` in-process, through the front's exported
//! `__tgt_register_lib` / `__tgt_unregister_lib` (the `omptarget` rlib of
//! `host-plugins/front`), with device images made of the fuzz input.
//!
//! Registration parses each image's `OffloadBinary` container, asks every plugin whether it runs
//! the image and numbers the devices; no device is opened, so no image is loaded (the CPU
//! plugin's `dlopen` happens at a device's first use, which this target never reaches).
//!
//! Input: byte 0 chooses how the rest is presented (bits 0-1: bare, or inside an
//! `OffloadBinary` for x86_64, amdgcn gfx90a or nvptx64 sm_90; bit 2: a second image, the bare
//! bytes; bit 3: a second program registered with the same images); the rest is the image.

#![no_main]

use libfuzzer_sys::fuzz_target;
use omptarget::{__tgt_register_lib, __tgt_unregister_lib};
use rustomp_abi::{
    BinDesc, DeviceImage, EntryFlags, OffloadEntry, RequiresFlags, OFFLOAD_KIND_OPENMP,
};
use rustomp_plugin::image::{self, testing, ImageKind};
use std::ffi::c_void;
use std::sync::OnceLock;

unsafe extern "C" {
    /// The front's export (its module is private; the symbol is in the linked rlib).
    fn omp_get_num_devices() -> i32;
}

static KERNEL_ID: u8 = 0;
static mut GLOBAL: [u32; 4] = [0; 4];

/// A kernel, a global and the `requires` entry clang emits (always the same flags: differing
/// ones end the process with LLVM's fatal error 2, by design).
fn host_entries() -> Vec<OffloadEntry> {
    let entry = |flags: EntryFlags,
                 address: *mut c_void,
                 name: &'static std::ffi::CStr,
                 size: u64,
                 data: u64| OffloadEntry {
        reserved: 0,
        version: 1,
        kind: OFFLOAD_KIND_OPENMP,
        flags: flags.bits(),
        address,
        symbol_name: name.as_ptr(),
        size,
        data,
        aux_address: std::ptr::null_mut(),
    };
    vec![
        entry(
            EntryFlags::empty(),
            &KERNEL_ID as *const u8 as *mut c_void,
            c"__omp_offloading_fuzz_kernel_l1",
            0,
            0,
        ),
        entry(
            EntryFlags::empty(),
            &raw mut GLOBAL as *mut c_void,
            c"fuzz_global",
            16,
            0,
        ),
        entry(
            EntryFlags::REQUIRES,
            std::ptr::null_mut(),
            c"",
            0,
            RequiresFlags::UNSPECIFIED.bits(),
        ),
    ]
}

/// Runs `f` with stderr on /dev/null (the front reports every refused image there), unless
/// RUSTOMP_FUZZ_VERBOSE is set. A panic puts stderr back first, so its message shows.
fn quietly<T>(f: impl FnOnce() -> T) -> T {
    static FDS: OnceLock<Option<(i32, i32)>> = OnceLock::new();
    let fds = *FDS.get_or_init(|| {
        if std::env::var_os("RUSTOMP_FUZZ_VERBOSE").is_some() {
            return None;
        }
        // SAFETY: plain descriptor calls on a valid path.
        let (saved, null) = unsafe {
            (
                libc::dup(2),
                libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY),
            )
        };
        if saved < 0 || null < 0 {
            return None;
        }
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // SAFETY: `saved` stays open for the whole process.
            unsafe { libc::dup2(saved, 2) };
            previous(info)
        }));
        Some((saved, null))
    });
    let Some((saved, null)) = fds else { return f() };
    // SAFETY: both descriptors stay open for the whole process.
    unsafe { libc::dup2(null, 2) };
    let result = f();
    // SAFETY: as above.
    unsafe { libc::dup2(saved, 2) };
    result
}

fuzz_target!(|input: &[u8]| {
    let Some((&control, bytes)) = input.split_first() else {
        return;
    };
    let (triple, arch) = match control & 3 {
        0 => ("", ""),
        1 => (image::TRIPLE_X86_64, ""),
        2 => (image::TRIPLE_AMDGCN, "gfx90a"),
        _ => (image::TRIPLE_NVPTX, "sm_90"),
    };
    // Each image in a buffer of its own: reading past its end is an ASan error.
    let mut images: Vec<Vec<u8>> = vec![if triple.is_empty() {
        bytes.to_vec()
    } else {
        testing::offload_binary(bytes, &[("triple", triple), ("arch", arch)])
    }];
    if control & 4 != 0 {
        images.push(bytes.to_vec());
    }
    let mut entries = host_entries();
    let entries_range = entries.as_mut_ptr_range();
    let mut device_images: Vec<DeviceImage> = images
        .iter_mut()
        .map(|bytes| {
            let range = bytes.as_mut_ptr_range();
            DeviceImage {
                image_start: range.start as *mut c_void,
                image_end: range.end as *mut c_void,
                entries_begin: entries_range.start,
                entries_end: entries_range.end,
            }
        })
        .collect();
    let programs = if control & 8 != 0 { 2 } else { 1 };
    let mut descriptors: Vec<BinDesc> = (0..programs)
        .map(|_| BinDesc {
            num_device_images: device_images.len() as i32,
            device_images: device_images.as_mut_ptr(),
            host_entries_begin: entries_range.start,
            host_entries_end: entries_range.end,
        })
        .collect();
    // SAFETY: the descriptors, images and entries outlive the registrations.
    let devices = quietly(|| unsafe {
        for desc in descriptors.iter_mut() {
            __tgt_register_lib(desc);
        }
        omp_get_num_devices()
    });
    assert!((0..1024).contains(&devices), "{devices} devices");
    // An x86_64 shared object in a container for x86_64 runs on the CPU plugin's devices,
    // unless its headers fail validation (then it goes to no plugin).
    let host_runs = control & 3 == 1 && image::validate(bytes) == Ok(ImageKind::HostElf);
    assert!(
        !host_runs || devices > 0,
        "a host image registered, yet no device"
    );
    // SAFETY: registered just above.
    quietly(|| unsafe {
        for desc in descriptors.iter_mut().rev() {
            __tgt_unregister_lib(desc);
        }
    });
});
