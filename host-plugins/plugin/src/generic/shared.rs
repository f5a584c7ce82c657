//! What a device and the images loaded on it share ([`DeviceCore`]: the backend, the device's
//! label, grid and environment) and the memory the generic layer owns ([`Allocation`]). A leaf
//! of the generic layer: the device, its images, launches and staged copies all build on it.

use super::{Backend, DeviceInfo};
use crate::diag;
use crate::geometry::DeviceGrid;
use crate::{AllocKind, Result};
use rustomp_abi::DeviceEnvironment;
use std::fmt;
use std::sync::{Arc, Mutex};

/// What a device and the images loaded on it share.
pub(super) struct DeviceCore<B: Backend> {
    pub(super) backend: B,
    pub(super) plugin: &'static str,
    pub(super) global: usize,
    pub(super) index: usize,
    /// "device N (cuda plugin)" for messages.
    pub(super) label: String,
    pub(super) grid: DeviceGrid,
    pub(super) environment: DeviceEnvironment,
    /// A zeroed launch environment shared by the launches of kernels without a teams reduction
    /// (device code only writes a launch environment during a teams reduction). Its address
    /// only, freed in `drop`: an `Allocation` would keep the core alive in a cycle.
    pub(super) idle_launch_environment: Mutex<Option<u64>>,
}

impl<B: Backend> Drop for DeviceCore<B> {
    fn drop(&mut self) {
        let idle = self
            .idle_launch_environment
            .get_mut()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(address) = idle.take() {
            // SAFETY: allocated as device memory in `launch_environment`; no image (and so no
            // launch) of this device is left.
            if let Err(e) = unsafe { self.backend.free(address, AllocKind::Device) } {
                diag::debug(self.plugin, format_args!("{}: {e}", self.label));
            }
        }
    }
}

impl<B: Backend> DeviceCore<B> {
    pub(super) fn info(&self) -> &DeviceInfo {
        self.backend.info()
    }

    pub(super) fn upload(&self, address: u64, bytes: &[u8], what: impl fmt::Display) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        // SAFETY: `bytes` is a live slice; callers pass device ranges they allocated or looked
        // up with at least this size.
        unsafe {
            self.backend
                .copy_to_device(address, bytes.as_ptr(), bytes.len())
        }
        .map_err(|e| e.context(format_args!("{}: writing {what}", self.label)))
    }

    pub(super) fn download(
        &self,
        address: u64,
        out: &mut [u8],
        what: impl fmt::Display,
    ) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        // SAFETY: as in `upload`, for a writable slice.
        unsafe {
            self.backend
                .copy_from_device(out.as_mut_ptr(), address, out.len())
        }
        .map_err(|e| e.context(format_args!("{}: reading {what}", self.label)))
    }
}

/// Device memory the generic layer owns (launch environments, reduction buffers, the indirect
/// table, constructor arrays, the host-call port); freed on drop.
pub(super) struct Allocation<B: Backend> {
    pub(super) core: Arc<DeviceCore<B>>,
    pub(super) address: u64,
    pub(super) kind: AllocKind,
}

impl<B: Backend> Allocation<B> {
    pub(super) fn new(
        core: &Arc<DeviceCore<B>>,
        bytes: usize,
        kind: AllocKind,
        what: impl fmt::Display,
    ) -> Result<Self> {
        let address = core
            .backend
            .alloc(bytes, kind)
            .map_err(|e| e.context(format_args!("{}: allocating {what}", core.label)))?;
        Ok(Self {
            core: Arc::clone(core),
            address,
            kind,
        })
    }
}

impl<B: Backend> Drop for Allocation<B> {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this kind, freed once; nothing uses it after its owner.
        if let Err(e) = unsafe { self.core.backend.free(self.address, self.kind) } {
            // At process exit the driver may be shut down already: nothing left to do.
            diag::debug(self.core.plugin, format_args!("{}: {e}", self.core.label));
        }
    }
}
