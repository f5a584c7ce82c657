//! The AMDGPU plugin: runs clang-22's `--offload-arch=gfxNNNN` code objects on AMD GPUs through
//! the HSA runtime, loaded at run time (`libhsa-runtime64.so.1`; nothing links against ROCm).
//!
//! A backend of the generic GPU layer (`rustomp_plugin::generic`), like the CUDA plugin: this
//! crate finds the GPU agents and their memory pools, allocates, copies, loads code objects,
//! looks symbols up and dispatches AQL packets; the device environment, the indirect-call
//! table, constructors, kernel environments, geometry and the device `printf` buffer are the
//! generic layer's.
//!
//! Where things are: [`hsa`] is the runtime in cudarc's layers (`sys` declarations, `result` one
//! checked function per call); above it, `agent` discovers the GPUs, `memory` allocates and
//! copies, `module` loads code objects and finds symbols, `queue` owns the AQL queue and writes
//! its packets, `launch` runs a kernel and waits for it, and `device` is the [`AmdgpuDevice`]
//! the generic layer drives, delegating to them.
//!
//! Contract:
//! - Constructing the plugin does nothing; the runtime is loaded and initialized the first time
//!   the front asks for devices. A missing library, a failing `hsa_init` (no `/dev/kfd`) or no GPU
//!   agent all mean zero devices, with the reason in `Plugin::unavailable_reason`, which names
//!   HSA and the library.
//! - A code object runs on an agent whose ISA has the same processor and agrees with every
//!   target-id feature (xnack, sramecc) the image fixes, as LLVM decides.
//! - Memory: device allocations come from the GPU's coarse-grained pool, host and shared ones
//!   from the host's fine-grained pool (made accessible to the GPU), kernel arguments from the
//!   host's kernarg pool. Copies are `hsa_amd_memory_async_copy`s waited for, the host side
//!   locked with `hsa_amd_memory_lock` or staged through fine-grained memory.
//! - Launches are AQL kernel-dispatch packets on one queue per device, with the code object v5
//!   implicit arguments clang-22's kernels read (block counts, group sizes, grid dimensions,
//!   dynamic LDS size) and a completion signal; a queue error (a faulting kernel) ends the wait
//!   with an error instead of a hang.

mod agent;
mod device;
pub mod hsa;
mod launch;
mod memory;
mod module;
mod profiling;
mod queue;

#[cfg(test)]
mod tests;

pub use agent::AgentProps;
pub use device::AmdgpuDevice;
use hsa::sys::{self, Api};
use rustomp_plugin::diag::Settings;
use rustomp_plugin::generic::{Driver, GenericPlugin};
use rustomp_plugin::image::{ImageKind, TRIPLE_AMDGCN};
use rustomp_plugin::Result;
use std::sync::OnceLock;

/// The plugin the front constructs.
pub type AmdgpuPlugin = GenericPlugin<AmdgpuDriver>;

/// The HSA runtime, loaded on first use.
pub struct AmdgpuDriver {
    /// The runtime library (`RUSTOMP_HSA_RUNTIME` overrides `libhsa-runtime64.so.1`).
    library: String,
    /// An entry-point table given by the caller instead of loading `library` (tests).
    injected: Option<&'static Api>,
    api: OnceLock<&'static Api>,
}

impl AmdgpuDriver {
    pub fn new() -> Self {
        let library = std::env::var("RUSTOMP_HSA_RUNTIME")
            .unwrap_or_else(|_| sys::RUNTIME_LIBRARY.to_string());
        Self::with_library(&library)
    }

    /// A runtime loaded from `library` instead.
    pub fn with_library(library: &str) -> Self {
        Self {
            library: library.to_string(),
            injected: None,
            api: OnceLock::new(),
        }
    }

    /// A runtime over an already resolved entry-point table.
    pub fn with_api(api: &'static Api) -> Self {
        Self {
            library: "<injected HSA runtime>".into(),
            injected: Some(api),
            api: OnceLock::new(),
        }
    }

    fn api(&self) -> &'static Api {
        self.api
            .get()
            .copied()
            .expect("devices are opened only after initialize found some")
    }
}

impl Default for AmdgpuDriver {
    fn default() -> Self {
        Self::new()
    }
}

impl Driver for AmdgpuDriver {
    type Device = AmdgpuDevice;
    type Properties = AgentProps;

    fn name(&self) -> &'static str {
        "amdgpu"
    }

    fn accepts(&self, kind: &ImageKind, triple: &str) -> bool {
        let ours = triple.is_empty() || triple.starts_with("amdgcn");
        ours && matches!(kind, ImageKind::AmdgpuCodeObject { .. })
    }

    /// Loads the runtime, `hsa_init`, and lists the GPU agents with their pools.
    fn initialize(&self) -> std::result::Result<Vec<AgentProps>, String> {
        let api = match self.injected {
            Some(api) => api,
            None => sys::load(&self.library).map_err(|why| {
                format!(
                    "no HSA runtime ({TRIPLE_AMDGCN} images need {}): {why}",
                    sys::RUNTIME_LIBRARY
                )
            })?,
        };
        // Kept before `hsa_init`, which may fail: the loaded table is the plugin's either way.
        self.api.get_or_init(|| api);
        hsa::result::init(api).map_err(|e| format!("the HSA runtime ({}) does not initialize: {e} (no /dev/kfd or no permission to use it?)", self.library))?;
        let agents = agent::discover(api)
            .map_err(|e| format!("the HSA runtime cannot list its agents: {e}"))?;
        if agents.is_empty() {
            return Err(format!(
                "no AMD GPU: the HSA runtime ({}) reports no GPU agent",
                self.library
            ));
        }
        for (i, a) in agents.iter().enumerate() {
            rustomp_plugin::diag::debug(
                "amdgpu",
                format_args!(
                    "HSA agent {i}: {} ({}, {} compute units)",
                    a.product, a.target, a.compute_units
                ),
            );
        }
        Ok(agents)
    }

    fn runs(
        &self,
        device: &AgentProps,
        kind: &ImageKind,
        _arch: &str,
    ) -> std::result::Result<(), String> {
        match kind {
            ImageKind::AmdgpuCodeObject { target } => target.runs_on(&device.target),
            other => Err(format!("a {} is not an AMDGPU code object", other.label())),
        }
    }

    fn open(&self, device: &AgentProps, _index: usize) -> Result<AmdgpuDevice> {
        AmdgpuDevice::open(self.api(), device, Settings::get())
    }
}
