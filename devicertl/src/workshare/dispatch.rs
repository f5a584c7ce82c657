//! Dynamic schedules: `__kmpc_dispatch_init/next_*` over the team's `DispatchState`, or a
//! thread's own for a loop it runs alone.

use crate::{state, sync};
use core::ffi::c_void;

/// Loops of one thread: each thread's stack of its own `DispatchState`s, rooted in its
/// `state::ThreadSlot`.
mod own_loops {
    use crate::state::DispatchState;
    use crate::{heap, state};
    use core::sync::atomic::Ordering;

    /// Starts a loop of this thread alone.
    pub fn push() -> &'static DispatchState {
        let slot = &state::thread_slot().loops;
        let state = heap::device_malloc_or_trap(
            core::mem::size_of::<DispatchState>(),
            c"rustomp device runtime: no device heap memory for a dynamic loop\n",
        ) as *mut DispatchState;
        // SAFETY: fresh memory of the right size, owned by this thread.
        unsafe {
            state.write(core::mem::zeroed());
            (*state)
                .outer
                .store(slot.load(Ordering::Relaxed), Ordering::Relaxed);
            slot.store(state, Ordering::Relaxed);
            &*state
        }
    }

    /// This thread's innermost loop, if it runs one.
    pub fn top() -> Option<&'static DispatchState> {
        // SAFETY: only this thread touches its slot and its states.
        unsafe {
            state::existing_thread_slot()?
                .loops
                .load(Ordering::Relaxed)
                .as_ref()
        }
    }

    /// Ends this thread's innermost loop.
    pub fn pop() {
        let Some(slot) = state::existing_thread_slot() else {
            return;
        };
        let state = slot.loops.load(Ordering::Relaxed);
        if state.is_null() {
            return;
        }
        // SAFETY: `push` allocated it; this thread alone uses it and is done with it.
        unsafe {
            slot.loops
                .store((*state).outer.load(Ordering::Relaxed), Ordering::Relaxed);
            heap::device_free(state as *mut u8);
        }
    }
}

/// A loop of one thread (a serialized nested region, or the generic main thread outside
/// regions) gets its own state: two threads that each run such a loop must not share one.
fn dispatch_init(kind: i32, lb: i128, ub: i128, incr: i128, chunk: i128) {
    let view = state::thread_view();
    if view.num_threads <= 1 {
        own_loops::push().configure(kind, lb, ub, incr, chunk, 1);
        return;
    }
    let dispatch = &state::team().dispatch;
    // Everyone is done with the previous loop before thread 0 reuses the state.
    sync::region_barrier(view.num_threads);
    if view.thread_num == 0 {
        dispatch.configure(kind, lb, ub, incr, chunk, view.num_threads);
    }
    sync::region_barrier(view.num_threads);
}

/// The next chunk as inclusive bounds, or `None` (a thread's own loop then ends).
fn dispatch_next() -> Option<(i128, i128, i128, bool)> {
    if state::thread_view().num_threads <= 1 {
        let own = own_loops::top()?;
        let chunk = own.next_chunk();
        if chunk.is_none() {
            own_loops::pop();
        }
        return chunk;
    }
    state::team().dispatch.next_chunk()
}

macro_rules! dispatch {
    ($init:ident, $next:ident, $t:ty, $st:ty) => {
        #[unsafe(no_mangle)]
        pub extern "C" fn $init(
            _ident: *const c_void,
            _gtid: i32,
            kind: i32,
            lb: $t,
            ub: $t,
            st: $st,
            chunk: $st,
        ) {
            dispatch_init(kind, lb as i128, ub as i128, st as i128, chunk as i128);
        }
        /// # Safety
        /// The pointers are writable, as clang passes them.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $next(
            _ident: *const c_void,
            _gtid: i32,
            plast: *mut i32,
            plower: *mut $t,
            pupper: *mut $t,
            pstride: *mut $st,
        ) -> i32 {
            let Some((low, high, incr, last)) = dispatch_next() else {
                return 0;
            };
            // SAFETY: guaranteed by the caller.
            unsafe {
                *plower = low as $t;
                *pupper = high as $t;
                *pstride = incr as $st;
                if !plast.is_null() {
                    *plast = last as i32;
                }
            }
            1
        }
    };
}
dispatch!(__kmpc_dispatch_init_4, __kmpc_dispatch_next_4, i32, i32);
dispatch!(__kmpc_dispatch_init_4u, __kmpc_dispatch_next_4u, u32, i32);
dispatch!(__kmpc_dispatch_init_8, __kmpc_dispatch_next_8, i64, i64);
dispatch!(__kmpc_dispatch_init_8u, __kmpc_dispatch_next_8u, u64, i64);

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_dispatch_deinit(_ident: *const c_void, _gtid: i32) {}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_dispatch_fini_4(_ident: *const c_void, _gtid: i32) {}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_dispatch_fini_4u(_ident: *const c_void, _gtid: i32) {}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_dispatch_fini_8(_ident: *const c_void, _gtid: i32) {}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_dispatch_fini_8u(_ident: *const c_void, _gtid: i32) {}
