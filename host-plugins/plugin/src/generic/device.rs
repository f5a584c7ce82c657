//! [`GenericDevice`]: one device of a backend as the front's [`Device`]: memory of each kind,
//! copies (large pageable ones staged, see [`super::staging`]), the device environment every
//! image gets, and the memory the generic layer owns ([`Allocation`]).

use super::shared::DeviceCore;
use super::staging::Staging;
use super::Direction;
use super::{Backend, GenericImage};
use crate::diag::Settings;
use crate::geometry::DeviceGrid;
use crate::{AllocKind, Device, ImageInfo, LoadedImage, Result};
use core::ffi::c_void;
use rustomp_abi::DeviceEnvironment;
use std::sync::{Arc, Mutex};

/// The [`Device`] the front drives, over one backend device.
pub struct GenericDevice<B: Backend> {
    pub(super) core: Arc<DeviceCore<B>>,
    /// Pinned buffers for large copies of pageable memory (here, not in the core: they hold
    /// the core alive).
    pub(super) staging: Staging<B>,
}

impl<B: Backend> GenericDevice<B> {
    pub fn new(
        backend: B,
        plugin: &'static str,
        index: usize,
        global: usize,
        total: usize,
        settings: &Settings,
    ) -> Self {
        let info = backend.info();
        let grid = DeviceGrid::new(
            info.grid_values,
            info.max_block_threads,
            info.max_grid_teams,
            settings.num_teams,
            settings.teams_thread_limit,
        );
        let environment = DeviceEnvironment {
            debug_kind: settings.device_rtl_debug,
            num_devices: total as u32,
            device_num: global as u32,
            dynamic_mem_size: settings.shared_memory_size,
            clock_frequency: info.clock_frequency,
            indirect_call_table: 0,
            indirect_call_table_size: 0,
            hardware_parallelism: info.hardware_parallelism,
        };
        let core = DeviceCore {
            backend,
            plugin,
            global,
            index,
            label: format!("device {global} ({plugin} plugin)"),
            grid,
            environment,
            idle_launch_environment: Mutex::new(None),
        };
        Self {
            core: Arc::new(core),
            staging: Staging::default(),
        }
    }

    /// A copy between host memory and the device, either way: large pageable ones through the
    /// staging ring where the backend wants that, the others straight to the backend.
    ///
    /// # Safety
    /// `host` and `device` hold `bytes` each (readable on the source side, writable on the
    /// other), as `Device::copy_to_device` / `copy_from_device` ask.
    unsafe fn copy_host(
        &self,
        direction: Direction,
        host: u64,
        device: u64,
        bytes: usize,
    ) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        let backend = &self.core.backend;
        if backend.stages_pageable_copies()
            && self.staging.wanted(host, bytes)
            && !backend.host_memory_pinned(host, bytes)
        {
            crate::diag::debug(
                self.core.plugin,
                format_args!(
                    "{}: staging {bytes} bytes of pageable host memory at {host:#x} ({direction:?})",
                    self.core.label
                ),
            );
            // SAFETY: the caller's contract, which the staged copy asks for too.
            return unsafe {
                self.staging
                    .copy(&self.core, direction, host, device, bytes)
            };
        }
        // SAFETY: the caller's contract.
        unsafe { backend.copy_host(direction, host, device, bytes) }
    }
}

fn kind_name(kind: AllocKind) -> &'static str {
    match kind {
        AllocKind::Device => "device",
        AllocKind::Host => "pinned host",
        AllocKind::Shared => "shared",
    }
}

impl<B: Backend> Device for GenericDevice<B> {
    fn alloc(&self, bytes: usize, kind: AllocKind) -> Result<*mut c_void> {
        // Zero bytes still get a distinct address, as on the host plugin.
        let address = self.core.backend.alloc(bytes.max(1), kind);
        let address = address.map_err(|e| {
            e.context(format_args!(
                "{}: cannot allocate {bytes} bytes of {} memory",
                self.core.label,
                kind_name(kind)
            ))
        })?;
        if kind == AllocKind::Host {
            self.staging.pinned_allocated(address, bytes.max(1));
        }
        Ok(address as *mut c_void)
    }

    unsafe fn lock_host(&self, host: *mut c_void, bytes: usize) -> Result<*mut c_void> {
        let backend = &self.core.backend;
        let lock = || {
            // SAFETY: the caller's contract.
            unsafe { backend.lock_host(host as u64, bytes) }
        };
        self.staging
            .lock(host as u64, bytes, lock)
            .map(|address| address as *mut c_void)
            .map_err(|e| {
                e.context(format_args!(
                    "{}: cannot lock {bytes} bytes of host memory at {host:p}",
                    self.core.label
                ))
            })
    }

    unsafe fn unlock_host(&self, host: *mut c_void) -> Result<()> {
        let backend = &self.core.backend;
        let unlock = |start| {
            // SAFETY: `start` was locked by `lock_host`; the caller's contract says it is unused.
            unsafe { backend.unlock_host(start) }
        };
        self.staging.unlock(host as u64, unlock).map_err(|e| {
            e.context(format_args!(
                "{}: cannot unlock host memory at {host:p}",
                self.core.label
            ))
        })
    }

    unsafe fn free(&self, ptr: *mut c_void, kind: AllocKind) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        if kind == AllocKind::Host {
            self.staging.pinned_freed(ptr as u64);
        }
        // SAFETY: the caller frees only what `alloc` of this device returned, with its kind, once.
        unsafe { self.core.backend.free(ptr as u64, kind) }.map_err(|e| {
            e.context(format_args!(
                "{}: cannot free {} memory at {ptr:p}",
                self.core.label,
                kind_name(kind)
            ))
        })
    }

    unsafe fn copy_to_device(
        &self,
        device: *mut c_void,
        host: *const c_void,
        bytes: usize,
    ) -> Result<()> {
        // SAFETY: the trait's contract.
        unsafe { self.copy_host(Direction::ToDevice, host as u64, device as u64, bytes) }.map_err(
            |e| {
                e.context(format_args!(
                    "{}: copy of {bytes} bytes from host {host:p} to {device:p}",
                    self.core.label
                ))
            },
        )
    }

    unsafe fn copy_from_device(
        &self,
        host: *mut c_void,
        device: *const c_void,
        bytes: usize,
    ) -> Result<()> {
        // SAFETY: the trait's contract.
        unsafe { self.copy_host(Direction::FromDevice, host as u64, device as u64, bytes) }.map_err(
            |e| {
                e.context(format_args!(
                    "{}: copy of {bytes} bytes from {device:p} to host {host:p}",
                    self.core.label
                ))
            },
        )
    }

    unsafe fn copy_within_device(
        &self,
        dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
    ) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: the trait's contract.
        unsafe {
            self.core
                .backend
                .copy_within_device(dst as u64, src as u64, bytes)
        }
        .map_err(|e| {
            e.context(format_args!(
                "{}: copy of {bytes} bytes from {src:p} to {dst:p}",
                self.core.label
            ))
        })
    }

    fn load_image(&self, image: &ImageInfo<'_>) -> Result<Box<dyn LoadedImage>> {
        GenericImage::load(&self.core, image).map(|i| Box::new(i) as Box<dyn LoadedImage>)
    }

    fn uses_auto_zero_copy(&self) -> bool {
        self.core.backend.uses_auto_zero_copy()
    }

    fn waits_for_running_kernels(&self) -> bool {
        self.core.backend.waits_for_running_kernels()
    }

    fn unified_memory(&self) -> std::result::Result<(), String> {
        self.core.backend.unified_memory()
    }

    fn describe(&self) -> String {
        let core = &self.core;
        let info = core.info();
        format!(
            "device {}: {} plugin device {} ({}, {}, {})",
            core.global,
            core.plugin,
            core.index,
            info.name,
            info.arch,
            core.backend.describe()
        )
    }

    fn properties(&self) -> Vec<(&'static str, String)> {
        let core = &self.core;
        let info = core.info();
        let grid = &core.grid;
        vec![
            ("Kind", "GPU".to_string()),
            ("Name", info.name.clone()),
            ("Architecture", info.arch.clone()),
            ("Memory", format!("{} MiB", info.total_memory >> 20)),
            ("Warp size", grid.warp_size.to_string()),
            ("Max threads per team", grid.max_threads.to_string()),
            ("Max teams", grid.max_teams.to_string()),
            (
                "Default teams x threads",
                format!("{} x {}", grid.default_teams, grid.default_threads),
            ),
            ("Resident warps", info.hardware_parallelism.to_string()),
            (
                "Timer frequency",
                format!("{} Hz (omp_get_wtime)", info.clock_frequency),
            ),
            ("Driver", core.backend.describe()),
        ]
    }
}
