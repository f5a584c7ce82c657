//! The generic GPU device layer (LLVM's `GenericPluginTy` / `GenericDeviceTy` /
//! `GenericKernelTy`): everything a GPU plugin does that is not a driver call, written once.
//!
//! A backend implements two small traits: [`Driver`] (initialize, list devices and their
//! properties, say which images a device runs, open a device) and [`Backend`] (one device:
//! allocate and free each memory kind, copy each direction, load an image, look up a global or
//! a kernel, launch with a grid, a block, arguments and dynamic shared memory). This module turns
//! them into the [`Plugin`], [`Device`] and [`LoadedImage`] the front drives, and owns:
//!
//! - the device environment (`__omp_rtl_device_environment`) written at image load, and the
//!   sorted indirect-call table published through it and through `__omp_offloading_fptr_map_*`;
//! - C++ global constructors and destructors, in either style clang-22 emits;
//! - the `__llvm_omp_host_call` port, served while kernels run;
//! - each kernel's `<name>_kernel_environment`, read at its first launch, and the launch
//!   geometry derived from it ([`crate::geometry`]);
//! - the launch environment and teams-reduction buffer of every launch;
//! - draining the device `printf` buffer (`__rustomp_printf_buffer`) after each launch;
//! - the `LIBOMPTARGET_*` / `OMP_*` settings ([`crate::diag::Settings`]) and the messages
//!   naming the device.
//!
//! Files: [`backend`] (the contract), [`plugin`], [`shared`] (what a device and its images
//! share), [`device`], [`image`], [`kernel`], [`initializers`], [`launch`], [`staging`].

mod backend;
mod device;
mod image;
mod initializers;
mod kernel;
mod launch;
mod plugin;
mod shared;
mod staging;

pub use backend::{
    Backend, DeviceInfo, Direction, Driver, GlobalSymbol, Initializers, KernelLaunch,
    KernelParameters, StagedPiece,
};
pub use device::GenericDevice;
pub use image::GenericImage;
pub use plugin::GenericPlugin;

use std::sync::{Mutex, MutexGuard};

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests;
