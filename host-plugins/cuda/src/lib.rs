//! The CUDA plugin: runs clang-22's `--offload-arch=sm_XX` images on NVIDIA GPUs through the
//! CUDA driver API, loaded at run time (`libcuda.so.1`; nothing links against CUDA).
//!
//! Contract:
//! - Constructing the plugin does nothing; the driver is loaded, initialized and its GPUs listed
//!   the first time the front asks for devices, i.e. when a program registers an image this
//!   plugin can run (LLVM initializes a plugin only then, too). A missing library, a missing
//!   entry point, a failing `cuInit` or zero GPUs all mean zero devices, with the reason in
//!   [`Plugin::unavailable_reason`]. Nothing here panics on driver failures.
//! - Images: device-linked cubins (the ELF clang-22 embeds, `sm_XX` in its flags), PTX (compiled
//!   by the driver's JIT) and fatbinaries. A cubin runs on GPUs of its major compute capability
//!   with an equal or higher minor one; PTX on any GPU at or above its target.
//! - Every `Device` operation is synchronous: it waits for its stream before returning. Errors
//!   keep the driver call, the CUDA error name and text, and the device and symbol involved.
//!
//! Layers (cudarc style): `driver::sys` (declarations, the resolved entry-point table),
//! `driver::result` (one checked function per call), `driver::safe` (owning types); then
//! `device` and `module` implement the plugin traits. The pure parts — `image` (formats and
//! compatibility), `geometry` (teams and threads per launch), `layout` (environment bytes,
//! indirect table) — are unit-tested without a GPU, and `tests` drives the whole plugin through
//! a fake driver.

mod device;
mod diag;
pub mod driver;
pub mod geometry;
pub mod image;
pub mod layout;
mod module;

#[cfg(test)]
mod tests;

use device::{CudaDevice, DeviceCore, DeviceProps};
use driver::result as r;
use driver::sys::{self, Api};
use rustomp_plugin::{Device, ErrorKind, ImageInfo, OffloadError, Plugin, Result};
use std::sync::OnceLock;

/// `CUDA_ERROR_NO_DEVICE`.
const NO_DEVICE: i32 = 100;

/// What loading the driver found.
enum DriverState {
    Ready { api: &'static Api, devices: Vec<DeviceProps> },
    Unavailable(String),
}

pub struct CudaPlugin {
    /// The driver library (`RUSTOMP_CUDA_DRIVER` overrides `libcuda.so.1`).
    library: String,
    /// A driver table given by the caller instead of loading `library` (tests).
    injected: Option<&'static Api>,
    state: OnceLock<DriverState>,
}

impl CudaPlugin {
    pub fn new() -> Self {
        let library = std::env::var("RUSTOMP_CUDA_DRIVER").unwrap_or_else(|_| sys::DRIVER_LIBRARY.to_string());
        Self { library, injected: None, state: OnceLock::new() }
    }

    /// A plugin that loads the driver from `library` instead.
    pub fn with_library(library: &str) -> Self {
        Self { library: library.to_string(), injected: None, state: OnceLock::new() }
    }

    /// A plugin over an already resolved driver table.
    pub fn with_api(api: &'static Api) -> Self {
        Self { library: "<injected driver>".into(), injected: Some(api), state: OnceLock::new() }
    }

    fn state(&self) -> &DriverState {
        self.state.get_or_init(|| {
            let api = match self.injected {
                Some(api) => api,
                None => match sys::load(&self.library) {
                    Ok(api) => api,
                    Err(why) => return DriverState::Unavailable(format!("no CUDA driver: {why}")),
                },
            };
            let state = initialize(api);
            match &state {
                DriverState::Ready { devices, .. } => {
                    for (i, d) in devices.iter().enumerate() {
                        diag::debug(format_args!("CUDA device {i}: {} ({}, {} SMs)", d.name, d.capability, d.multiprocessors));
                    }
                }
                DriverState::Unavailable(why) => diag::debug(format_args!("{why}")),
            }
            state
        })
    }

    fn devices(&self) -> &[DeviceProps] {
        match self.state() {
            DriverState::Ready { devices, .. } => devices,
            DriverState::Unavailable(_) => &[],
        }
    }
}

impl Default for CudaPlugin {
    fn default() -> Self {
        Self::new()
    }
}

/// `cuInit` and the list of GPUs.
fn initialize(api: &'static Api) -> DriverState {
    match r::init(api) {
        Ok(()) => {}
        Err(e) if e.code == NO_DEVICE => {
            return DriverState::Unavailable(format!("no CUDA device: {e}"));
        }
        Err(e) => return DriverState::Unavailable(format!("the CUDA driver does not initialize: {e}")),
    }
    let count = match r::device_count(api) {
        Ok(n) => n,
        Err(e) => return DriverState::Unavailable(format!("the CUDA driver cannot count its devices: {e}")),
    };
    let mut devices = Vec::with_capacity(count);
    for ordinal in 0..count {
        match DeviceProps::query(api, ordinal) {
            Ok(props) => devices.push(props),
            Err(e) => return DriverState::Unavailable(format!("CUDA device {ordinal} cannot be queried: {e}")),
        }
    }
    if devices.is_empty() {
        return DriverState::Unavailable("no CUDA device: the driver reports 0 GPUs".into());
    }
    DriverState::Ready { api, devices }
}

impl Plugin for CudaPlugin {
    fn name(&self) -> &str {
        "cuda"
    }

    fn number_of_devices(&self) -> usize {
        self.devices().len()
    }

    fn unavailable_reason(&self) -> Option<String> {
        match self.state() {
            DriverState::Unavailable(why) => Some(why.clone()),
            DriverState::Ready { .. } => None,
        }
    }

    /// An NVIDIA image (by triple and contents): decided without the driver.
    fn is_compatible(&self, image: &ImageInfo<'_>) -> bool {
        image::triple_matches(&image.triple) && image::classify(image.bytes).is_some()
    }

    fn device_compatibility(&self, index: usize, image: &ImageInfo<'_>) -> std::result::Result<(), String> {
        let kind = image::classify(image.bytes).ok_or_else(|| "not a CUDA cubin, PTX or fatbinary image".to_string())?;
        let props = self.devices().get(index).ok_or_else(|| format!("the cuda plugin has no device {index}"))?;
        image::runs_on(kind, &image.arch, props.capability)
    }

    fn open_device(&self, index: usize, global: usize, total: usize) -> Result<Box<dyn Device>> {
        let DriverState::Ready { api, devices } = self.state() else {
            let why = self.unavailable_reason().unwrap_or_default();
            return Err(OffloadError::new(ErrorKind::DeviceUnavailable, format!("device {global} (cuda plugin): {why}")));
        };
        let props = devices.get(index).cloned().ok_or_else(|| {
            OffloadError::new(ErrorKind::InvalidArgument, format!("device {global}: the cuda plugin has no device {index}"))
        })?;
        let core = DeviceCore::open(api, props, index, global, total)?;
        Ok(Box::new(CudaDevice::new(core)))
    }
}
