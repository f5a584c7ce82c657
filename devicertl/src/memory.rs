//! Device memory: the team-shared stack behind `__kmpc_alloc_shared` (with a heap fallback)
//! and `omp_alloc`/`omp_free`.

use crate::arch;
use crate::heap::{device_free, device_malloc};
use crate::state::{self, SHARED_STACK_BYTES};
use core::ffi::c_void;
use core::sync::atomic::Ordering;

const SHARED_ALIGN: usize = 16;

fn stack_range() -> (usize, usize) {
    let base = state::team().stack.get() as usize;
    (base, base + SHARED_STACK_BYTES)
}

/// Team-visible scratch memory, for the variables the compiler globalizes (a local of the
/// team's code that its parallel regions share).
///
/// - Generic mode: the main thread, which alone runs the team's code, takes them from the
///   team-shared stack.
/// - SPMD mode, the team's code (outside any parallel region): every thread runs it, making the
///   same calls in the same order, and each gets the *same* address (each thread keeps its own
///   top of the team-shared stack, all starting at its base): one variable per team, as the
///   program means. clang-22 relies on it for `lastprivate` on `teams distribute parallel for`:
///   the team's copy comes from here, the thread that ran the last iteration writes it inside
///   the parallel region, and every thread of the last team copies it out after (program 62 on
///   an H200: with a copy per thread, as LLVM's runtime gives, 0 instead of the last value).
/// - Anything else (a thread inside a parallel region: its own variable), and overflow: the
///   heap.
pub fn alloc_shared(bytes: usize) -> *mut u8 {
    let rounded = bytes.div_ceil(SHARED_ALIGN) * SHARED_ALIGN;
    let team = state::team();
    let tid = arch::thread_id_in_block();
    let top = if state::is_spmd() {
        (state::thread_flags(tid) & state::LEVEL_MASK == 0)
            .then(|| team.spmd_stack_top.get(tid as usize))
            .flatten()
            .map(|top| (top, top.load(Ordering::Relaxed) as usize))
    } else {
        None
    };
    if let Some((slot, top)) = top {
        if top + rounded <= SHARED_STACK_BYTES {
            slot.store((top + rounded) as u16, Ordering::Relaxed);
            return (stack_range().0 + top) as *mut u8;
        }
    } else if !state::is_spmd() && tid == state::main_thread_id() {
        let top = team.stack_top.load(Ordering::Relaxed) as usize;
        if top + rounded <= SHARED_STACK_BYTES {
            team.stack_top
                .store((top + rounded) as u32, Ordering::Relaxed);
            return (stack_range().0 + top) as *mut u8;
        }
    }
    let ptr = device_malloc(rounded.max(1));
    if ptr.is_null() {
        arch::trap(); // no memory for a variable the compiler must place somewhere
    }
    ptr
}

pub(crate) fn free_shared(ptr: *mut u8, bytes: usize) {
    let (low, high) = stack_range();
    let addr = ptr as usize;
    if (low..high).contains(&addr) {
        // Stack discipline: the compiler frees in reverse order of allocation.
        let rounded = bytes.div_ceil(SHARED_ALIGN) * SHARED_ALIGN;
        let team = state::team();
        if state::is_spmd() {
            if let Some(top) = team.spmd_stack_top.get(arch::thread_id_in_block() as usize) {
                top.store((addr - low) as u16, Ordering::Relaxed);
            }
        } else {
            team.stack_top.store((addr - low) as u32, Ordering::Relaxed);
        }
        debug_assert!(addr - low + rounded <= SHARED_STACK_BYTES);
    } else {
        // SAFETY: outside the team stack, `alloc_shared` took it from the heap.
        unsafe { device_free(ptr) };
    }
}

/// SPMD team code: reserves up to `max_bytes` (whole `granule`s, at least `min_bytes`) at the
/// top of the calling thread's part of the team-shared stack, without falling back to the heap.
/// Every thread of the team makes the same call at the same point of the team's code and gets
/// the same block. Returns the block and its size.
pub(crate) fn spmd_reserve(
    min_bytes: usize,
    max_bytes: usize,
    granule: usize,
) -> Option<(*mut u8, usize)> {
    let tid = arch::thread_id_in_block();
    if !state::is_spmd() || state::thread_flags(tid) & state::LEVEL_MASK != 0 {
        return None;
    }
    let slot = state::team().spmd_stack_top.get(tid as usize)?;
    let top = slot.load(Ordering::Relaxed) as usize;
    let free = SHARED_STACK_BYTES.saturating_sub(top);
    let granule = granule.max(1);
    let mut bytes = max_bytes.min(free) / granule * granule;
    while bytes >= min_bytes.max(1) && bytes.div_ceil(SHARED_ALIGN) * SHARED_ALIGN > free {
        bytes -= granule;
    }
    if bytes < min_bytes.max(1) {
        return None;
    }
    let rounded = bytes.div_ceil(SHARED_ALIGN) * SHARED_ALIGN;
    slot.store((top + rounded) as u16, Ordering::Relaxed);
    Some((
        (state::team().stack.get() as *mut u8).wrapping_add(top),
        rounded,
    ))
}

/// The end of the calling thread's used part of the team-shared stack (SPMD): inside a
/// parallel region, the end of what its team code reserved.
pub(crate) fn spmd_stack_end() -> *mut u8 {
    let team = state::team();
    // A plain load: only the thread itself uses its slot, and the compiler may then read it
    // once for several uses.
    let top = team
        .spmd_stack_top
        .get(arch::thread_id_in_block() as usize)
        // SAFETY: the slot is the calling thread's own; no other thread accesses it.
        .map_or(0, |t| unsafe { t.as_ptr().read() } as usize);
    // Pointer arithmetic, not integers: the target keeps the address in team-shared memory's
    // own (32-bit) address space.
    (team.stack.get() as *mut u8).wrapping_add(top)
}

/// Gives back a block `spmd_reserve` returned, if nothing reserved after it is still held (the
/// team's code frees in reverse order; otherwise the block stays reserved until the kernel ends).
pub(crate) fn spmd_release(block: *mut u8, bytes: usize) {
    let tid = arch::thread_id_in_block();
    let Some(slot) = state::team().spmd_stack_top.get(tid as usize) else {
        return;
    };
    let start = block as usize - stack_range().0;
    if slot.load(Ordering::Relaxed) as usize == start + bytes {
        slot.store(start as u16, Ordering::Relaxed);
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_alloc_shared(bytes: usize) -> *mut c_void {
    alloc_shared(bytes) as *mut c_void
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_free_shared(ptr: *mut c_void, bytes: usize) {
    free_shared(ptr as *mut u8, bytes)
}
/// Allocators other than the default all draw on the device heap.
#[unsafe(no_mangle)]
pub extern "C" fn omp_alloc(bytes: usize, _allocator: usize) -> *mut c_void {
    device_malloc(bytes) as *mut c_void
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_aligned_alloc(align: usize, bytes: usize, _allocator: usize) -> *mut c_void {
    if align > 16 {
        return core::ptr::null_mut(); // the device heap aligns to 16
    }
    device_malloc(bytes) as *mut c_void
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_free(ptr: *mut c_void, _allocator: usize) {
    if !ptr.is_null() {
        // SAFETY: `omp_alloc` memory comes from the heap; the program frees it once.
        unsafe { device_free(ptr as *mut u8) }
    }
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_alloc_aggregate_arg(
    local: *mut c_void,
    _global: *mut c_void,
) -> *mut c_void {
    local
}
