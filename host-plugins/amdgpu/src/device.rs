//! One GPU agent as a [`Backend`] of the generic layer: [`AmdgpuDevice`], opened with its queue,
//! its memory (allocations, copies), delegating to [`crate::module`] (code objects, symbols) and
//! [`crate::queue`] (dispatch). Nothing here knows about OpenMP beyond the code object v5
//! implicit kernel arguments.

use crate::agent::AgentProps;
use crate::hsa::result as r;
use crate::hsa::sys::*;
use crate::hsa::{failed, released};
use crate::module::{Function, Module};
use crate::queue::{AqlQueue, CompletionSignal};
use core::ffi::c_void;
use rustomp_plugin::diag::Settings;
use rustomp_plugin::generic::{Backend, DeviceInfo, GlobalSymbol, Initializers, KernelLaunch};
use rustomp_plugin::image::ImageKind;
use rustomp_plugin::{AllocKind, ErrorKind, OffloadError, Result};

/// Private segment per work-item of a kernel with a dynamic call stack, unless
/// `LIBOMPTARGET_STACK_SIZE` says otherwise (LLVM's default).
const DEFAULT_STACK_SIZE: u64 = 16 * 1024;

pub struct AmdgpuDevice {
    pub(crate) api: &'static Api,
    pub(crate) props: AgentProps,
    pub(crate) info: DeviceInfo,
    pub(crate) stack_size: u64,
    pub(crate) queue: AqlQueue,
}

// Send and Sync come from the fields: the queue says why it may be shared.
static_assertions::assert_impl_all!(AmdgpuDevice: Send, Sync);

impl AmdgpuDevice {
    pub fn open(api: &'static Api, props: &AgentProps, settings: &Settings) -> Result<Self> {
        let queue = AqlQueue::create(api, props)?;
        Ok(Self {
            api,
            info: props.info(),
            props: props.clone(),
            stack_size: settings.stack_size.unwrap_or(DEFAULT_STACK_SIZE),
            queue,
        })
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
        self.allocate(bytes, kind)
    }

    unsafe fn free(&self, address: u64, _kind: AllocKind) -> Result<()> {
        // SAFETY: the caller's contract: `address` came from `alloc`, once.
        unsafe { self.deallocate(address) }
    }

    unsafe fn copy_to_device(&self, device: u64, host: *const u8, bytes: usize) -> Result<()> {
        // SAFETY: the caller's contract, which the callee repeats.
        unsafe { self.copy_host_to_device(device, host, bytes) }
    }

    unsafe fn copy_from_device(&self, host: *mut u8, device: u64, bytes: usize) -> Result<()> {
        // SAFETY: the caller's contract, which the callee repeats.
        unsafe { self.copy_device_to_host(host, device, bytes) }
    }

    unsafe fn copy_within_device(&self, dst: u64, src: u64, bytes: usize) -> Result<()> {
        // SAFETY: the caller's contract, which the callee repeats.
        unsafe { self.copy_device_to_device(dst, src, bytes) }
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
        // SAFETY: the caller's contract, which the callee repeats.
        unsafe { self.run_kernel(function, launch, while_running) }
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

impl AmdgpuDevice {
    /// [`Backend::alloc`](rustomp_plugin::generic::Backend::alloc): device memory from the
    /// GPU's pool, host and shared memory from the host's fine-grained pool.
    pub(crate) fn allocate(&self, bytes: usize, kind: AllocKind) -> Result<u64> {
        let address = match kind {
            AllocKind::Device => self.pool_allocate(self.props.device_pool, bytes, false),
            // Fine-grained host memory: the GPU may use it directly.
            AllocKind::Host | AllocKind::Shared => {
                self.pool_allocate(self.props.host_pool, bytes, true)
            }
        };
        address.map(|a| a as u64)
    }

    /// [`Backend::free`](rustomp_plugin::generic::Backend::free), of any kind.
    ///
    /// # Safety
    /// `address` came from [`Self::allocate`] and is not used afterwards.
    pub(crate) unsafe fn deallocate(&self, address: u64) -> Result<()> {
        // SAFETY: the caller's contract: `address` came from `alloc`, once.
        unsafe { r::amd_memory_pool_free(self.api, address as *mut c_void) }
            .map_err(failed(ErrorKind::InvalidArgument))
    }

    /// `bytes` (at least 1) from `pool`; with `gpu_access`, host memory the GPU is then
    /// allowed to reach (freed again when that fails).
    pub(crate) fn pool_allocate(
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

    /// [`Backend::copy_to_device`](rustomp_plugin::generic::Backend::copy_to_device).
    ///
    /// # Safety
    /// `host` is readable for `bytes`; `device` is this GPU's memory holding `bytes`.
    pub(crate) unsafe fn copy_host_to_device(
        &self,
        device: u64,
        host: *const u8,
        bytes: usize,
    ) -> Result<()> {
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

    /// [`Backend::copy_from_device`](rustomp_plugin::generic::Backend::copy_from_device).
    ///
    /// # Safety
    /// `host` is writable for `bytes`; `device` is this GPU's memory holding `bytes`.
    pub(crate) unsafe fn copy_device_to_host(
        &self,
        host: *mut u8,
        device: u64,
        bytes: usize,
    ) -> Result<()> {
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

    /// [`Backend::copy_within_device`](rustomp_plugin::generic::Backend::copy_within_device).
    ///
    /// # Safety
    /// Both ranges are this GPU's memory holding `bytes`.
    pub(crate) unsafe fn copy_device_to_device(
        &self,
        dst: u64,
        src: u64,
        bytes: usize,
    ) -> Result<()> {
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
        let buffer = device.allocate(bytes, AllocKind::Host)? as *mut c_void;
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
