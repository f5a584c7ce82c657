//! Device globals shared with the compiler and the plugins.
//!
//! The plugin writes `__omp_rtl_device_environment` (and the indirect-call table pointers) by
//! symbol lookup after loading an image and before any kernel runs; device code only reads them.
//! The `__omp_rtl_assume_*` / `__omp_rtl_debug_kind` flags are weak zero defaults: clang emits
//! its own definitions when the user asks for them, and those win at link time.

use core::cell::UnsafeCell;
use rustomp_abi::{DeviceEnvironment, FptrMapEntry, IndirectTableHeader};

/// A device global the plugin writes from the host between launches.
#[repr(transparent)]
pub struct DeviceGlobal<T>(UnsafeCell<T>);

// SAFETY: device code only reads these globals during a launch; the host writes them while no
// kernel of the image runs (and host emulation tests write them before `launch`, see `set`).
// No `&T` is ever handed out: `get` copies the value to the reading thread and `set` moves one
// in from the writing thread, so sharing the global moves `T`s between threads: `T: Send`
// (as for a `Mutex<T>`). A type that must stay on one thread (`&Cell<_>`) cannot be one.
unsafe impl<T: Send> Sync for DeviceGlobal<T> {}

impl<T: Copy> DeviceGlobal<T> {
    pub const fn new(value: T) -> Self {
        Self(UnsafeCell::new(value))
    }
    #[inline(always)]
    pub fn get(&self) -> T {
        // SAFETY: see the `Sync` impl: no concurrent writer while device code reads.
        unsafe { self.0.get().read_volatile() }
    }
    /// Host emulation and tests stand in for the plugin's upload.
    ///
    /// # Safety
    /// No device code may read the global concurrently.
    pub unsafe fn set(&self, value: T) {
        // SAFETY: guaranteed by the caller.
        unsafe { self.0.get().write_volatile(value) }
    }
}

/// A device address the plugin publishes in a `DeviceGlobal` (the indirect-call table, the
/// host-call port): the same bits as the raw pointer.
#[repr(transparent)]
pub struct DevicePtr<T>(pub *mut T);

impl<T> DevicePtr<T> {
    pub const fn null() -> Self {
        Self(core::ptr::null_mut())
    }
}
impl<T> Clone for DevicePtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DevicePtr<T> {}

// SAFETY: a `DevicePtr` is only an address: copying it to another thread reads and writes
// nothing. What it points to lives as long as the image and is reached only in `unsafe` blocks
// that state their own contract (read-only tables, the host-call port's protocol).
unsafe impl<T> Send for DevicePtr<T> {}

/// Weak, protected and used, as LLVM's: the plugin finds it by name in the loaded image. Rust
/// says weak; `ir/nvptx.ll` and `ir/amdgcn.ll` declare it (and the indirect-call table pointers
/// below) protected and list it in `@llvm.used`, which the device build's link applies.
#[unsafe(no_mangle)]
#[cfg_attr(any(target_arch = "nvptx64", target_arch = "amdgpu"), linkage = "weak")]
pub static __omp_rtl_device_environment: DeviceGlobal<DeviceEnvironment> =
    DeviceGlobal::new(DeviceEnvironment {
        debug_kind: 0,
        num_devices: 0,
        device_num: 0,
        dynamic_mem_size: 0,
        clock_frequency: 0,
        indirect_call_table: 0,
        indirect_call_table_size: 0,
        hardware_parallelism: 0,
    });

/// Seed 000's per-image indirect-call table: written by the plugin when the image has them.
#[unsafe(no_mangle)]
#[cfg_attr(any(target_arch = "nvptx64", target_arch = "amdgpu"), linkage = "weak")]
pub static __omp_offloading_fptr_map_p: DeviceGlobal<DevicePtr<FptrMapEntry>> =
    DeviceGlobal::new(DevicePtr::null());
#[unsafe(no_mangle)]
#[cfg_attr(any(target_arch = "nvptx64", target_arch = "amdgpu"), linkage = "weak")]
pub static __omp_offloading_fptr_map_size: DeviceGlobal<u64> = DeviceGlobal::new(0);

/// Ours: one pointer to the whole published table (`IndirectTableHeader`, then the entries),
/// so a single load gives a table and its size that belong together.
#[unsafe(no_mangle)]
#[cfg_attr(any(target_arch = "nvptx64", target_arch = "amdgpu"), linkage = "weak")]
pub static __rustomp_indirect_call_table: DeviceGlobal<DevicePtr<IndirectTableHeader>> =
    DeviceGlobal::new(DevicePtr::null());

macro_rules! weak_flags {
    ($($name:ident),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        #[cfg_attr(any(target_arch = "nvptx64", target_arch = "amdgpu"), linkage = "weak")]
        pub static $name: u32 = 0;
    )*};
}
weak_flags!(
    __omp_rtl_debug_kind,
    __omp_rtl_assume_teams_oversubscription,
    __omp_rtl_assume_threads_oversubscription,
    __omp_rtl_assume_no_thread_state,
    __omp_rtl_assume_no_nested_parallelism,
);

#[inline(always)]
pub fn device_environment() -> DeviceEnvironment {
    __omp_rtl_device_environment.get()
}

/// The device environment's indirect-call table fields, `(pointer, entries)`, read alone: two
/// loads, not the whole 48-byte environment (a volatile read of all of it costs six).
#[inline(always)]
pub fn device_environment_indirect_call_table() -> (usize, u64) {
    let env = __omp_rtl_device_environment.0.get();
    // SAFETY: in-bounds field projections of the global; see `DeviceGlobal`'s `Sync` impl for
    // why no concurrent writer is assumed.
    unsafe {
        (
            core::ptr::addr_of!((*env).indirect_call_table).read_volatile(),
            core::ptr::addr_of!((*env).indirect_call_table_size).read_volatile(),
        )
    }
}
