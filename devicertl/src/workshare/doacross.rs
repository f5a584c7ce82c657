//! Doacross loops (`ordered depend(sink/source)`, `doacross`): one completion flag per
//! iteration of the team-wide region's loop nest.

use crate::schedule::trip_count;
use crate::{state, sync};
use core::ffi::c_void;
use core::sync::atomic::{AtomicU32, Ordering};

/// `kmp_dim`: one dimension of a doacross loop nest (inclusive bounds).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct DoacrossDim {
    pub lo: i64,
    pub up: i64,
    pub st: i64,
}

/// The doacross loop of a team-wide region: its dimensions and one completion flag per iteration.
#[repr(C)]
struct Doacross {
    dims: u32,
    iterations: u64,
}

/// Linear iteration number of `vec`, or `None` when outside the loop nest (a dependence on an
/// iteration that does not exist is satisfied).
///
/// # Safety
/// `dims` has `count` entries and `vec` `count` values.
unsafe fn doacross_index(dims: *const DoacrossDim, count: usize, vec: *const i64) -> Option<u64> {
    let mut index: u64 = 0;
    for d in 0..count {
        // SAFETY: guaranteed by the caller.
        let (dim, v) = unsafe { (*dims.add(d), *vec.add(d)) };
        let extent = trip_count(dim.lo as i128, dim.up as i128, dim.st as i128);
        let offset = if dim.st > 0 {
            v as i128 - dim.lo as i128
        } else {
            dim.lo as i128 - v as i128
        };
        let step = (dim.st as i128).abs().max(1);
        if offset < 0 || offset % step != 0 || offset / step >= extent {
            return None;
        }
        index = index * extent as u64 + (offset / step) as u64;
    }
    Some(index)
}

/// The current doacross loop's header, dimensions and flags, if any.
fn doacross_current() -> Option<(*const DoacrossDim, usize, *const AtomicU32)> {
    let state =
        state::team().scratch[state::SCRATCH_DOACROSS].load(Ordering::Acquire) as *mut Doacross;
    if state.is_null() {
        return None;
    }
    // SAFETY: `__kmpc_doacross_init` laid out header, dims and flags in one block.
    unsafe {
        let dims = (state as *mut u8).add(16) as *const DoacrossDim;
        let count = (*state).dims as usize;
        let flags = dims.add(count) as *const AtomicU32;
        Some((dims, count, flags))
    }
}

/// `for ordered(n)` with `depend(sink/source)` (doacross): every thread of the region calls
/// it before the loop. LLVM's device runtime has none of the `__kmpc_doacross_*` functions.
///
/// # Safety
/// `dims` has `num_dims` entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_doacross_init(
    _ident: *const c_void,
    _gtid: i32,
    num_dims: i32,
    dims: *const DoacrossDim,
) {
    let view = state::thread_view();
    if view.num_threads <= 1 {
        return; // one thread runs the iterations in order: every dependence is met
    }
    sync::region_barrier(view.num_threads);
    if view.thread_num == 0 {
        let count = num_dims.max(0) as usize;
        let mut iterations: u64 = 1;
        for d in 0..count {
            // SAFETY: guaranteed by the caller.
            let dim = unsafe { *dims.add(d) };
            iterations =
                iterations.saturating_mul(
                    trip_count(dim.lo as i128, dim.up as i128, dim.st as i128) as u64,
                );
        }
        let bytes = 16 + count * core::mem::size_of::<DoacrossDim>() + iterations as usize * 4;
        let block = crate::heap::device_malloc_or_trap(
            bytes,
            c"rustomp device runtime: no device heap memory for a doacross loop\n",
        ) as *mut Doacross;
        // SAFETY: `block` has room for the header, the dims and one flag per iteration.
        unsafe {
            block.write(Doacross {
                dims: count as u32,
                iterations,
            });
            let own = (block as *mut u8).add(16) as *mut DoacrossDim;
            core::ptr::copy_nonoverlapping(dims, own, count);
            let flags = own.add(count) as *mut u32;
            for i in 0..iterations as usize {
                flags.add(i).write(0);
            }
        }
        state::team().scratch[state::SCRATCH_DOACROSS].store(block as u64, Ordering::Release);
    }
    sync::region_barrier(view.num_threads);
}

/// `depend(source)`: the iteration `vec` is done.
///
/// # Safety
/// `vec` has one value per dimension.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_doacross_post(_ident: *const c_void, _gtid: i32, vec: *const i64) {
    let Some((dims, count, flags)) = doacross_current() else {
        return;
    };
    // SAFETY: guaranteed by the caller; `flags` has one entry per iteration.
    if let Some(i) = unsafe { doacross_index(dims, count, vec) } {
        // A release store (lowered correctly on NVPTX, unlike a release RMW).
        // SAFETY: `i` is below the product of the dimensions' trip counts, the number of flags
        // `__kmpc_doacross_init` allocated after the dimensions.
        unsafe { (*flags.add(i as usize)).store(1, Ordering::Release) };
    }
}

/// `depend(sink: vec)`: waits until iteration `vec` posted.
///
/// # Safety
/// As `__kmpc_doacross_post`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_doacross_wait(_ident: *const c_void, _gtid: i32, vec: *const i64) {
    let Some((dims, count, flags)) = doacross_current() else {
        return;
    };
    // SAFETY: as above.
    if let Some(i) = unsafe { doacross_index(dims, count, vec) } {
        // SAFETY: as above.
        // SAFETY: as above.
        let flag = unsafe { &*flags.add(i as usize) };
        // Relaxed while spinning, one acquire after (an acquire per turn is an L2 invalidate
        // on gfx90a/gfx942).
        while flag.load(Ordering::Relaxed) == 0 {
            crate::arch::pause();
        }
        let _ = flag.load(Ordering::Acquire);
    }
}

/// End of the doacross loop: every thread is done with it before its flags go.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_doacross_fini(_ident: *const c_void, _gtid: i32) {
    let view = state::thread_view();
    if view.num_threads <= 1 {
        return;
    }
    sync::region_barrier(view.num_threads);
    if view.thread_num == 0 {
        let block = state::team().scratch[state::SCRATCH_DOACROSS].swap(0, Ordering::Relaxed);
        // SAFETY: `__kmpc_doacross_init` took it from the heap; nobody uses it any more.
        unsafe { crate::heap::device_free(block as *mut u8) };
    }
    sync::region_barrier(view.num_threads);
}
