//! One GPU agent as a [`Backend`] of the generic layer (memory pools, copies, code objects,
//! symbols, AQL dispatch). Nothing here knows about OpenMP beyond the code object v5 implicit
//! kernel arguments.

use crate::agent::AgentProps;
use crate::hsa::result as r;
use crate::hsa::sys::*;
use crate::hsa::{check, failed, released, HsaResult};
use crate::module::{Function, Module};
use core::ffi::c_void;
use rustomp_plugin::diag::Settings;
use rustomp_plugin::generic::{Backend, DeviceInfo, GlobalSymbol, Initializers, KernelLaunch};
use rustomp_plugin::image::ImageKind;
use rustomp_plugin::{AllocKind, ErrorKind, OffloadError, Result};
use std::sync::atomic::{AtomicU32, Ordering};

/// Packets per queue (`LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE`, as LLVM).
const DEFAULT_QUEUE_SIZE: u32 = 512;
/// Private segment per work-item of a kernel with a dynamic call stack, unless
/// `LIBOMPTARGET_STACK_SIZE` says otherwise (LLVM's default).
const DEFAULT_STACK_SIZE: u64 = 16 * 1024;
/// Offsets in the code object v5 implicit-argument block (256 bytes after the explicit
/// arguments) of the fields the host fills (AMDGPUUsage: `hidden_block_count_*`,
/// `hidden_group_size_*`, `hidden_grid_dims`, `hidden_dynamic_lds_size`); the rest stays zero,
/// as LLVM leaves it.
pub mod implicit {
    pub const BLOCK_COUNT: usize = 0;
    pub const GROUP_SIZE: usize = 12;
    pub const GRID_DIMS: usize = 64;
    pub const DYNAMIC_LDS_SIZE: usize = 120;
}

/// The queue-error callback: records the first error of the device's queue (a kernel fault),
/// which ends every wait on the queue.
unsafe extern "C" fn on_queue_error(status: Status, _queue: *mut Queue, data: *mut c_void) {
    // SAFETY: `data` is the device's `queue_error`, which outlives its queue.
    let slot = unsafe { &*(data as *const AtomicU32) };
    let _ = slot.compare_exchange(STATUS_SUCCESS, status, Ordering::AcqRel, Ordering::Relaxed);
}

pub struct AmdgpuDevice {
    api: &'static Api,
    props: AgentProps,
    info: DeviceInfo,
    stack_size: u64,
    queue: *mut Queue,
    /// Written by `on_queue_error`; boxed so its address stays put.
    queue_error: Box<AtomicU32>,
}

// SAFETY: the queue is used only through the runtime's thread-safe calls and atomic packet
// writes (a MULTI queue takes packets from any thread); the rest is plain data.
unsafe impl Send for AmdgpuDevice {}
// SAFETY: as above.
unsafe impl Sync for AmdgpuDevice {}

impl Drop for AmdgpuDevice {
    fn drop(&mut self) {
        released("an HSA queue", {
            // SAFETY: created in `open`, destroyed once; every dispatch waited for its packet.
            unsafe { r::queue_destroy(self.api, self.queue) }
        });
    }
}

/// A completion signal, destroyed on drop.
struct CompletionSignal<'a> {
    api: &'a Api,
    signal: Signal,
}

impl<'a> CompletionSignal<'a> {
    fn new(api: &'a Api) -> HsaResult<Self> {
        let signal = r::signal_create(api, 1)?;
        Ok(Self { api, signal })
    }
}

impl Drop for CompletionSignal<'_> {
    fn drop(&mut self) {
        released("a completion signal", {
            // SAFETY: created in `new`, destroyed once, after the wait on it ended.
            unsafe { r::signal_destroy(self.api, self.signal) }
        });
    }
}

/// Host memory locked for the GPU for the duration of one copy (or staged, when the runtime
/// cannot lock it): the address the copy engine uses.
struct HostSide<'a> {
    device: &'a AmdgpuDevice,
    locked: Option<*mut c_void>,
    staging: Option<(*mut c_void, *mut u8, usize)>,
}

impl<'a> HostSide<'a> {
    /// `host` for `bytes`; `fill` copies the user's bytes into a staging buffer first.
    fn new(
        device: &'a AmdgpuDevice,
        host: *mut u8,
        bytes: usize,
        fill: bool,
    ) -> Result<(Self, *mut c_void)> {
        let mut agents = [device.props.agent];
        // SAFETY: `host` is the caller's live range of `bytes`; the lock is undone in `drop`.
        match unsafe { r::amd_memory_lock(device.api, host as *mut c_void, bytes, &mut agents) } {
            Ok(agent_address) => {
                let locked = Self {
                    device,
                    locked: Some(host as *mut c_void),
                    staging: None,
                };
                if !agent_address.is_null() {
                    return Ok((locked, agent_address));
                }
                // No address for the GPU: unlocked again (by `drop`) and staged instead.
            }
            // Memory the runtime cannot lock is staged instead.
            Err(e) => rustomp_plugin::diag::debug(
                "amdgpu",
                format_args!("staging host memory instead: {e}"),
            ),
        }
        let buffer = device.alloc(bytes, AllocKind::Host)? as *mut c_void;
        if fill {
            // SAFETY: `buffer` is fresh host memory of `bytes`; `host` is readable for `bytes`.
            unsafe { std::ptr::copy_nonoverlapping(host, buffer as *mut u8, bytes) };
        }
        Ok((
            Self {
                device,
                locked: None,
                staging: Some((buffer, host, bytes)),
            },
            buffer,
        ))
    }

    /// Copies a staging buffer back to the user's memory (device-to-host copies).
    fn deliver(&self) {
        if let Some((buffer, host, bytes)) = self.staging {
            // SAFETY: the copy into `buffer` finished; `host` is writable for `bytes`.
            unsafe { std::ptr::copy_nonoverlapping(buffer as *const u8, host, bytes) };
        }
    }
}

impl Drop for HostSide<'_> {
    fn drop(&mut self) {
        let api = self.device.api;
        if let Some(host) = self.locked {
            released("locked host memory", {
                // SAFETY: locked in `new`; the copy using it has finished.
                unsafe { r::amd_memory_unlock(api, host) }
            });
        }
        if let Some((buffer, _, _)) = self.staging {
            released("a staging buffer", {
                // SAFETY: allocated in `new` from the host pool; the copy using it has finished.
                unsafe { r::amd_memory_pool_free(api, buffer) }
            });
        }
    }
}

impl AmdgpuDevice {
    pub fn open(api: &'static Api, props: &AgentProps, settings: &Settings) -> Result<Self> {
        let queue_error = Box::new(AtomicU32::new(STATUS_SUCCESS));
        let size = rustomp_plugin::diag::env_u64("LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE")
            .map_or(DEFAULT_QUEUE_SIZE, |v| {
                v.clamp(2, u64::from(u32::MAX)) as u32
            });
        // Queue sizes are powers of two within the agent's limit.
        let size = size.next_power_of_two().min(props.queue_max_size.max(2));
        // SAFETY: a GPU agent of this runtime; the callback data outlives the queue (it is
        // dropped after the queue is destroyed, see `Drop`).
        let queue = unsafe {
            r::queue_create(
                api,
                props.agent,
                size,
                queue_type::MULTI,
                Some(on_queue_error),
                &*queue_error as *const AtomicU32 as *mut c_void,
            )
        }
        .map_err(failed(ErrorKind::DeviceUnavailable))?;
        if queue.is_null() {
            return Err(OffloadError::new(
                ErrorKind::DeviceUnavailable,
                "hsa_queue_create returned no queue",
            ));
        }
        Ok(Self {
            api,
            info: props.info(),
            props: props.clone(),
            stack_size: settings.stack_size.unwrap_or(DEFAULT_STACK_SIZE),
            queue,
            queue_error,
        })
    }

    /// Waits for `signal` to drop below 1, calling `while_running` meanwhile; a queue error
    /// ends the wait.
    fn wait(
        &self,
        signal: Signal,
        mut while_running: Option<&mut dyn FnMut() -> bool>,
    ) -> std::result::Result<(), String> {
        let api = self.api;
        // Sleep at most 100 microseconds between checks when serving host calls, else 10 ms.
        let ticks_per_us = (self.props.timestamp_frequency / 1_000_000).max(1);
        let hint = ticks_per_us * if while_running.is_some() { 100 } else { 10_000 };
        loop {
            let served = while_running.as_mut().is_some_and(|serve| serve());
            // SAFETY: a live signal of this runtime.
            if unsafe { r::signal_load_scacquire(api, signal) } < 1 {
                return Ok(());
            }
            let error = self.queue_error.load(Ordering::Acquire);
            if error != STATUS_SUCCESS {
                let text = check(api, "the GPU queue", error)
                    .err()
                    .map_or_else(String::new, |e| e.to_string());
                return Err(format!(
                    "{text}; the queue of {} is unusable",
                    self.info.name
                ));
            }
            if !served {
                // SAFETY: as above; returns on the condition or after about `hint` ticks. The
                // value it saw is not needed: the loop loads the signal again.
                unsafe {
                    r::signal_wait_scacquire(
                        api,
                        signal,
                        signal_condition::LT,
                        1,
                        hint,
                        wait_state::BLOCKED,
                    )
                };
            }
        }
    }

    /// One `hsa_amd_memory_async_copy`, waited for.
    ///
    /// # Safety
    /// `dst` and `src` are valid for `bytes` for the agents given.
    unsafe fn async_copy(
        &self,
        dst: *mut c_void,
        dst_agent: Agent,
        src: *const c_void,
        src_agent: Agent,
        bytes: usize,
    ) -> Result<()> {
        let api = self.api;
        let signal = CompletionSignal::new(api).map_err(failed(ErrorKind::TransferFailed))?;
        // SAFETY: the caller's ranges, valid until the wait below ends; the signal lives until then.
        unsafe {
            r::amd_memory_async_copy(api, dst, dst_agent, src, src_agent, bytes, signal.signal)
        }
        .map_err(failed(ErrorKind::TransferFailed))?;
        self.wait(signal.signal, None)
            .map_err(|why| OffloadError::new(ErrorKind::TransferFailed, why))
    }

    /// Fills the kernel-argument buffer: the explicit arguments, then the implicit block (as
    /// much of it as the kernel's segment holds).
    fn kernel_arguments(launch: &KernelLaunch<'_>, segment_bytes: usize) -> Vec<u8> {
        let explicit = launch.args.len() * 8;
        let mut bytes = vec![0u8; segment_bytes.max(explicit)];
        for (i, value) in launch.args.iter().enumerate() {
            bytes[i * 8..i * 8 + 8].copy_from_slice(&value.to_le_bytes());
        }
        let base = explicit.next_multiple_of(8);
        let mut put = |offset: usize, value: &[u8]| {
            if let Some(slot) = bytes.get_mut(base + offset..base + offset + value.len()) {
                slot.copy_from_slice(value);
            }
        };
        for (d, (blocks, group)) in launch.blocks.iter().zip(workgroup_size(launch)).enumerate() {
            put(implicit::BLOCK_COUNT + 4 * d, &blocks.to_le_bytes());
            put(implicit::GROUP_SIZE + 2 * d, &group.to_le_bytes());
        }
        put(implicit::GRID_DIMS, &grid_dimensions(launch).to_le_bytes());
        put(
            implicit::DYNAMIC_LDS_SIZE,
            &launch.dynamic_shared_bytes.to_le_bytes(),
        );
        bytes
    }

    /// Writes a kernel-dispatch packet to the queue, rings the doorbell; returns when the
    /// packet processor has it.
    ///
    /// # Safety
    /// The packet's kernel object and kernel-argument address are live until it completes.
    unsafe fn dispatch(&self, packet: KernelDispatchPacket) {
        let api = self.api;
        let queue = self.queue;
        // SAFETY: the runtime's queue, alive while the device is; its fields are read-only to us.
        let (base, size, doorbell) = unsafe {
            (
                (*queue).base_address as *mut KernelDispatchPacket,
                u64::from((*queue).size),
                (*queue).doorbell_signal,
            )
        };
        // SAFETY: a valid queue; the index reserves one slot for this thread.
        let index = unsafe { r::queue_add_write_index_relaxed(api, queue, 1) };
        // SAFETY: as above.
        while index.wrapping_sub(unsafe { r::queue_load_read_index_scacquire(api, queue) }) >= size
        {
            std::thread::yield_now();
        }
        // SAFETY: `index % size` is a slot of the queue's ring that this thread reserved and
        // the packet processor has consumed; the body is written before the header publishes it.
        unsafe {
            let slot = base.add((index % size) as usize);
            let body = (&packet as *const KernelDispatchPacket as *const u8).add(4);
            std::ptr::copy_nonoverlapping(
                body,
                (slot as *mut u8).add(4),
                std::mem::size_of::<KernelDispatchPacket>() - 4,
            );
            let header_and_setup = u32::from(packet.header) | u32::from(packet.setup) << 16;
            AtomicU32::from_ptr(slot as *mut u32).store(header_and_setup, Ordering::Release);
            r::signal_store_relaxed(api, doorbell, index as i64);
        }
    }
}

/// Threads per workgroup in x, y, z as AQL and the implicit arguments hold them (16 bits).
fn workgroup_size(launch: &KernelLaunch<'_>) -> [u16; 3] {
    launch.threads.map(|t| t.min(u32::from(u16::MAX)) as u16)
}

/// How many dimensions a launch uses (the packet's setup and `hidden_grid_dims`, as LLVM).
fn grid_dimensions(launch: &KernelLaunch<'_>) -> u16 {
    if launch.blocks[2] * launch.threads[2] > 1 {
        3
    } else if launch.blocks[1] * launch.threads[1] > 1 {
        2
    } else {
        1
    }
}

impl Backend for AmdgpuDevice {
    type Module = Module;
    type Function = Function;
    const INITIALIZERS: Initializers = Initializers::LinkedArray {
        init_kernel: "amdgcn.device.init",
        fini_kernel: "amdgcn.device.fini",
    };

    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn alloc(&self, bytes: usize, kind: AllocKind) -> Result<u64> {
        let address = match kind {
            AllocKind::Device => self.pool_allocate(self.props.device_pool, bytes, false),
            // Fine-grained host memory: the GPU may use it directly.
            AllocKind::Host | AllocKind::Shared => {
                self.pool_allocate(self.props.host_pool, bytes, true)
            }
        };
        address.map(|a| a as u64)
    }

    unsafe fn free(&self, address: u64, _kind: AllocKind) -> Result<()> {
        // SAFETY: the caller's contract: `address` came from `alloc`, once.
        unsafe { r::amd_memory_pool_free(self.api, address as *mut c_void) }
            .map_err(failed(ErrorKind::InvalidArgument))
    }

    unsafe fn copy_to_device(&self, device: u64, host: *const u8, bytes: usize) -> Result<()> {
        let (host_side, source) = HostSide::new(self, host as *mut u8, bytes, true)?;
        // SAFETY: the caller's device range; `source` is the host range as the GPU sees it.
        let copied = unsafe {
            self.async_copy(
                device as *mut c_void,
                self.props.agent,
                source,
                self.props.host_agent,
                bytes,
            )
        };
        drop(host_side);
        copied
    }

    unsafe fn copy_from_device(&self, host: *mut u8, device: u64, bytes: usize) -> Result<()> {
        let (host_side, target) = HostSide::new(self, host, bytes, false)?;
        // SAFETY: the caller's device range; `target` is the host range as the GPU sees it.
        unsafe {
            self.async_copy(
                target,
                self.props.host_agent,
                device as *const c_void,
                self.props.agent,
                bytes,
            )
        }?;
        host_side.deliver();
        Ok(())
    }

    unsafe fn copy_within_device(&self, dst: u64, src: u64, bytes: usize) -> Result<()> {
        // SAFETY: the caller's contract: both ranges are this GPU's memory.
        unsafe {
            self.async_copy(
                dst as *mut c_void,
                self.props.agent,
                src as *const c_void,
                self.props.agent,
                bytes,
            )
        }
    }

    fn load_module(&self, bytes: &[u8], _kind: &ImageKind) -> Result<Module> {
        Module::load(self.api, self.props.agent, bytes)
    }

    fn global(&self, module: &Module, name: &str) -> Result<Option<GlobalSymbol>> {
        module.global(self.props.agent, name)
    }

    fn function(&self, module: &Module, name: &str) -> Result<Option<Function>> {
        module.function(self.props.agent, name)
    }

    fn function_max_threads(&self, _function: Function) -> Result<u32> {
        // The code object's `.max_flat_workgroup_size` is in its metadata note, which HSA does
        // not report; OpenMP kernels bound their threads in the kernel environment instead.
        Ok(self.info.max_block_threads)
    }

    unsafe fn launch(
        &self,
        function: Function,
        launch: &KernelLaunch<'_>,
        while_running: Option<&mut dyn FnMut() -> bool>,
    ) -> Result<()> {
        let api = self.api;
        let arguments = Self::kernel_arguments(launch, function.kernarg_size as usize);
        let kernarg = self.alloc_kernarg(&arguments)?;
        let signal = CompletionSignal::new(api).map_err(failed(ErrorKind::LaunchFailed))?;
        let private_size = if function.dynamic_stack {
            self.stack_size.min(u64::from(u32::MAX)) as u32
        } else {
            0
        }
        .max(function.private_size);
        let group = workgroup_size(launch);
        let mut packet = KernelDispatchPacket {
            header: packet::PACKET_TYPE_KERNEL_DISPATCH << packet::HEADER_TYPE
                | packet::FENCE_SCOPE_SYSTEM << packet::HEADER_SCACQUIRE_FENCE_SCOPE
                | packet::FENCE_SCOPE_SYSTEM << packet::HEADER_SCRELEASE_FENCE_SCOPE,
            setup: grid_dimensions(launch) << packet::KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS,
            workgroup_size_x: group[0],
            workgroup_size_y: group[1],
            workgroup_size_z: group[2],
            private_segment_size: private_size,
            group_segment_size: function
                .group_size
                .saturating_add(launch.dynamic_shared_bytes),
            kernel_object: function.kernel_object,
            kernarg_address: kernarg.address,
            completion_signal: signal.signal,
            ..Default::default()
        };
        (packet.grid_size_x, packet.grid_size_y, packet.grid_size_z) = (
            launch.blocks[0].saturating_mul(u32::from(group[0])),
            launch.blocks[1].saturating_mul(u32::from(group[1])),
            launch.blocks[2].saturating_mul(u32::from(group[2])),
        );
        // SAFETY: the kernel object belongs to a loaded executable; the kernel arguments live in
        // `kernarg` until after the wait below.
        unsafe { self.dispatch(packet) };
        self.wait(signal.signal, while_running).map_err(|why| {
            OffloadError::new(
                ErrorKind::LaunchFailed,
                format!("failure while running: {why}"),
            )
        })
    }

    /// LLVM's automatic zero-copy with `OMPX_APU_MAPS=1` when XNACK is on (the GPU can fault
    /// host pages in). LLVM also turns it on by itself on an APU (MI300A, told apart by its chip
    /// id); this plugin does not detect APUs: set the variable there.
    fn uses_auto_zero_copy(&self) -> bool {
        let forced = std::env::var("OMPX_APU_MAPS")
            .is_ok_and(|v| matches!(v.trim(), "1" | "true" | "TRUE" | "on" | "ON" | "yes"));
        forced && self.props.target.xnack == rustomp_plugin::image::FeatureSetting::On
    }

    /// With XNACK on, the GPU faults host pages in and can use any host address.
    fn unified_memory(&self) -> std::result::Result<(), String> {
        if self.props.target.xnack == rustomp_plugin::image::FeatureSetting::On {
            Ok(())
        } else {
            Err(format!("the GPU runs with XNACK off ({}), so it cannot use pageable host memory (run with HSA_XNACK=1 on a GPU that supports it)", self.props.target))
        }
    }

    fn describe(&self) -> String {
        let p = &self.props;
        format!(
            "{} compute units, wavefront {}, {} MiB, HSA runtime {}.{}",
            p.compute_units,
            p.wavefront_size,
            p.device_memory >> 20,
            p.runtime_version.0,
            p.runtime_version.1
        )
    }
}

/// Kernel arguments in kernarg memory, freed on drop.
struct Kernarg<'a> {
    device: &'a AmdgpuDevice,
    address: u64,
}

impl Drop for Kernarg<'_> {
    fn drop(&mut self) {
        released("kernel arguments", {
            // SAFETY: allocated in `alloc_kernarg`; the dispatch using it has completed.
            unsafe { r::amd_memory_pool_free(self.device.api, self.address as *mut c_void) }
        });
    }
}

impl AmdgpuDevice {
    /// `bytes` (at least 1) from `pool`; with `gpu_access`, host memory the GPU is then
    /// allowed to reach (freed again when that fails).
    fn pool_allocate(
        &self,
        pool: MemoryPool,
        bytes: usize,
        gpu_access: bool,
    ) -> Result<*mut c_void> {
        let api = self.api;
        // SAFETY: a pool of this runtime.
        let address = unsafe { r::amd_memory_pool_allocate(api, pool, bytes.max(1)) }
            .map_err(failed(ErrorKind::OutOfMemory))?;
        if gpu_access {
            let agents = std::slice::from_ref(&self.props.agent);
            // SAFETY: an agent of this runtime; `address` was just allocated from a pool of it.
            let allowed = unsafe { r::amd_agents_allow_access(api, agents, address) };
            if let Err(e) = allowed {
                released("memory the GPU may not use", {
                    // SAFETY: allocated just above, not handed out.
                    unsafe { r::amd_memory_pool_free(api, address) }
                });
                return Err(e.error(ErrorKind::OutOfMemory));
            }
        }
        Ok(address)
    }

    fn alloc_kernarg(&self, arguments: &[u8]) -> Result<Kernarg<'_>> {
        let address = self
            .pool_allocate(self.props.kernarg_pool, arguments.len().max(8), true)
            .map_err(|e| e.context("allocating kernel arguments"))?;
        let kernarg = Kernarg {
            device: self,
            address: address as u64,
        };
        // SAFETY: fresh host-visible memory of at least `arguments.len()` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(arguments.as_ptr(), address as *mut u8, arguments.len())
        };
        Ok(kernarg)
    }
}
