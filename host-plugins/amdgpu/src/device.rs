//! One GPU agent as a [`Backend`] of the generic layer: [`AmdgpuDevice`], opened with its queue,
//! delegating to [`crate::memory`] (allocations, copies), [`crate::module`] (code objects,
//! symbols) and [`crate::queue`] (dispatch). Nothing here knows about OpenMP beyond the code
//! object v5 implicit kernel arguments.

use crate::agent::AgentProps;
use crate::hsa::failed;
use crate::hsa::result as r;
use crate::hsa::sys::Api;
use crate::module::{Function, Module};
use crate::queue::AqlQueue;
use core::ffi::c_void;
use rustomp_plugin::diag::Settings;
use rustomp_plugin::generic::{Backend, DeviceInfo, GlobalSymbol, Initializers, KernelLaunch};
use rustomp_plugin::image::ImageKind;
use rustomp_plugin::{AllocKind, ErrorKind, Result};

/// Private segment per work-item of a kernel with a dynamic call stack, unless
/// `LIBOMPTARGET_STACK_SIZE` says otherwise (LLVM's default).
const DEFAULT_STACK_SIZE: u64 = 16 * 1024;

pub struct AmdgpuDevice {
    pub(crate) api: &'static Api,
    pub(crate) props: AgentProps,
    pub(crate) info: DeviceInfo,
    pub(crate) stack_size: u64,
    pub(crate) queue: AqlQueue,
    pub(crate) profiling: Profiling,
}

/// What profiling the device has switched on for OMPT tracing, and its clock pairing, each
/// made once (`profiling.rs`).
#[derive(Default)]
pub(crate) struct Profiling {
    pub(crate) dispatches: std::sync::OnceLock<bool>,
    pub(crate) copies: std::sync::OnceLock<bool>,
    /// (system ticks, host monotonic ns, system ticks per second).
    pub(crate) clock: std::sync::OnceLock<Option<(u64, u64, u64)>>,
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
            profiling: Default::default(),
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

    /// `hsa_amd_memory_lock` for this GPU; copies then find the range locked
    /// (`hsa_amd_pointer_info`) and use it without locking it again.
    unsafe fn lock_host(&self, host: u64, bytes: usize) -> Result<u64> {
        let mut agents = [self.props.agent];
        // SAFETY: the caller's contract: live memory, unlocked before it is freed.
        let agent_address =
            unsafe { r::amd_memory_lock(self.api, host as *mut c_void, bytes, &mut agents) }
                .map_err(failed(ErrorKind::InvalidArgument))?;
        Ok(if agent_address.is_null() {
            host
        } else {
            agent_address as u64
        })
    }

    unsafe fn unlock_host(&self, host: u64) -> Result<()> {
        // SAFETY: the caller's contract: locked by `lock_host`, unused now.
        unsafe { r::amd_memory_unlock(self.api, host as *mut c_void) }
            .map_err(failed(ErrorKind::InvalidArgument))
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
