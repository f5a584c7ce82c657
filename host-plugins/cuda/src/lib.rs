//! The CUDA plugin: runs clang-22's `--offload-arch=sm_XX` images on NVIDIA GPUs through the
//! CUDA driver API, loaded at run time (`libcuda.so.1`; nothing links against CUDA).
//!
//! This crate is a backend of the generic GPU layer (`rustomp_plugin::generic`): it says how to
//! find GPUs, allocate, copy, load a module, look up a symbol and launch; the device
//! environment, constructors, the indirect-call table, kernel environments, geometry and
//! messages are the generic layer's.
//!
//! Contract:
//! - Constructing the plugin does nothing; the driver is loaded, initialized and its GPUs listed
//!   the first time the front asks for devices, i.e. when a program registers an image this
//!   plugin can run. A missing library, a missing entry point, a failing `cuInit` or zero GPUs
//!   all mean zero devices, with the reason in `Plugin::unavailable_reason`. Nothing here panics
//!   on driver failures.
//! - Images: device-linked cubins, PTX (compiled by the driver's JIT) and fatbinaries; which GPU
//!   runs which is in [`compat`].
//! - Errors keep the driver call and the CUDA error name and text.
//!
//! Layers (cudarc style): `driver::sys` (declarations, the resolved entry-point table),
//! `driver::result` (one checked function per call), `driver::safe` (owning types); then
//! `device` implements the backend. `tests` drives the whole plugin through a fake driver.

pub mod compat;
mod device;
pub mod driver;

#[cfg(test)]
mod tests;

pub use device::{CudaDevice, DeviceProps};
use driver::result as r;
use driver::sys::{self, Api};
use rustomp_plugin::diag::Settings;
use rustomp_plugin::generic::{Driver, GenericPlugin};
use rustomp_plugin::image::ImageKind;
use rustomp_plugin::Result;

/// `CUDA_ERROR_NO_DEVICE`.
const NO_DEVICE: i32 = 100;

/// The plugin the front constructs.
pub type CudaPlugin = GenericPlugin<CudaDriver>;

/// The CUDA driver, loaded on first use.
pub struct CudaDriver {
    /// The driver library (`RUSTOMP_CUDA_DRIVER` overrides `libcuda.so.1`).
    library: String,
    /// A driver table given by the caller instead of loading `library` (tests).
    injected: Option<&'static Api>,
    api: std::sync::OnceLock<&'static Api>,
}

impl CudaDriver {
    pub fn new() -> Self {
        let library = std::env::var("RUSTOMP_CUDA_DRIVER")
            .unwrap_or_else(|_| sys::DRIVER_LIBRARY.to_string());
        Self::with_library(&library)
    }

    /// A driver loaded from `library` instead.
    pub fn with_library(library: &str) -> Self {
        Self {
            library: library.to_string(),
            injected: None,
            api: std::sync::OnceLock::new(),
        }
    }

    /// A driver over an already resolved entry-point table.
    pub fn with_api(api: &'static Api) -> Self {
        Self {
            library: "<injected driver>".into(),
            injected: Some(api),
            api: std::sync::OnceLock::new(),
        }
    }

    fn api(&self) -> &'static Api {
        self.api
            .get()
            .copied()
            .expect("devices are opened only after initialize found some")
    }
}

impl Default for CudaDriver {
    fn default() -> Self {
        Self::new()
    }
}

impl Driver for CudaDriver {
    type Device = CudaDevice;
    type Properties = DeviceProps;

    fn name(&self) -> &'static str {
        "cuda"
    }

    fn accepts(&self, kind: &ImageKind, triple: &str) -> bool {
        compat::accepts(kind, triple)
    }

    /// Loads the driver, `cuInit`, and lists the GPUs.
    fn initialize(&self) -> std::result::Result<Vec<DeviceProps>, String> {
        let api = match self.injected {
            Some(api) => api,
            None => sys::load(&self.library).map_err(|why| format!("no CUDA driver: {why}"))?,
        };
        match r::init(api) {
            Ok(()) => {}
            Err(e) if e.code == NO_DEVICE => return Err(format!("no CUDA device: {e}")),
            Err(e) => return Err(format!("the CUDA driver does not initialize: {e}")),
        }
        let count = r::device_count(api)
            .map_err(|e| format!("the CUDA driver cannot count its devices: {e}"))?;
        let devices = (0..count)
            .map(|ordinal| {
                DeviceProps::query(api, ordinal)
                    .map_err(|e| format!("CUDA device {ordinal} cannot be queried: {e}"))
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        if devices.is_empty() {
            return Err("no CUDA device: the driver reports 0 GPUs".into());
        }
        for (i, d) in devices.iter().enumerate() {
            rustomp_plugin::diag::debug(
                "cuda",
                format_args!(
                    "CUDA device {i}: {} ({}, {} SMs)",
                    d.name, d.capability, d.multiprocessors
                ),
            );
        }
        let _ = self.api.set(api);
        Ok(devices)
    }

    fn runs(
        &self,
        device: &DeviceProps,
        kind: &ImageKind,
        arch: &str,
    ) -> std::result::Result<(), String> {
        compat::runs_on(kind, arch, device.capability)
    }

    fn open(&self, device: &DeviceProps, _index: usize) -> Result<CudaDevice> {
        CudaDevice::open(self.api(), device, Settings::get())
    }
}
