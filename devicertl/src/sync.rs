//! Barriers, critical sections, single/master/masked, warp masks and flushes.

use crate::{arch, heap, state};
use core::ffi::c_void;
use core::sync::atomic::{AtomicU32, Ordering};

/// Waits until the `count` threads of the current region arrived, and orders their memory
/// accesses at team scope. The whole team: the hardware barrier; whole warps: a named barrier
/// where the target has them; any other number: the hardware barrier for any count where the
/// target has one (nvptx sm_80+: an mbarrier, which the region's opener set up, see
/// `open_region`), else a counting barrier in team-shared memory.
pub fn region_barrier(count: u32) {
    match region_barrier_kind(count) {
        RegionBarrier::Fence => arch::team_fence(),
        RegionBarrier::Team => arch::team_barrier(),
        RegionBarrier::Named => arch::region_barrier(count),
        // SAFETY: the region's opener set the team's barrier up for its `count` threads
        // (`open_region`), which all meet here.
        RegionBarrier::Subset => unsafe { arch::subset_barrier_wait(subset_barrier(), count) },
        RegionBarrier::Counting => counting_barrier(count),
    }
}

/// How the threads of a region of `count` meet.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RegionBarrier {
    /// One thread: nothing to wait for.
    Fence,
    Team,
    Named,
    Subset,
    Counting,
}

pub fn region_barrier_kind(count: u32) -> RegionBarrier {
    if count <= 1 {
        RegionBarrier::Fence
    } else if count >= arch::num_threads_in_block() {
        RegionBarrier::Team
    } else if arch::HAS_REGION_BARRIER && count.is_multiple_of(arch::warp_size()) {
        RegionBarrier::Named
    } else if arch::has_subset_barrier() {
        RegionBarrier::Subset
    } else {
        RegionBarrier::Counting
    }
}

fn subset_barrier() -> *mut u64 {
    state::team().subset_barrier.as_ptr()
}

/// The thread that opens a team-wide region of `count` threads sets up its barrier, before the
/// team barrier that starts the region.
pub(crate) fn open_region(count: u32) {
    if region_barrier_kind(count) == RegionBarrier::Subset {
        // SAFETY: the team's 8-byte aligned word in team memory, taken down by the previous
        // region's `close_region` (or fresh); the region's start barrier follows.
        unsafe { arch::subset_barrier_init(subset_barrier(), count) };
    }
}

/// The same thread, after the team barrier that ends the region.
pub(crate) fn close_region(count: u32) {
    if region_barrier_kind(count) == RegionBarrier::Subset {
        // SAFETY: set up by `open_region` for this region, whose end barrier has passed.
        unsafe { arch::subset_barrier_inval(subset_barrier()) };
    }
}

/// A barrier of the region's threads `0..count` that counts arrivals, one arrival per warp:
/// for targets without a hardware barrier for any count (amdgcn, nvptx before sm_80). Public for
/// the emulation tests, which otherwise meet at the emulated hardware barriers.
///
/// - Ordering is explicit, with team-scope fences and relaxed atomics: clang-22's NVPTX backend
///   lowers an acq_rel/release `atomicrmw` to a relaxed `atom` with no fence, and a Rust
///   acquire or release access is system-scope, which on gfx90a/gfx942 writes back or
///   invalidates L2 (`buffer_wbl2`, `buffer_invl2`) on every spin. So the RMW is relaxed and
///   paired with fences (release before arriving, acquire after the last arrival is seen), the
///   generation is published by a release fence and a relaxed store, and the spin reads it
///   relaxed, then fences once. Only team memory is shared here.
/// - Lanes of one warp never wait for each other in different branches (an AMD wavefront runs
///   one side of a branch to completion first, so a lane spinning on a store that a lane of the
///   same wave makes in the other branch hangs): the warp's region lanes meet, lane 0 arrives
///   for all of them and publishes the new generation if it was last, then every lane spins.
pub fn counting_barrier(count: u32) {
    let team = state::team();
    let tid = arch::thread_id_in_block();
    let warp_base = tid - tid % arch::warp_size();
    let (lanes, mask) = warp_lanes_in_region(count);
    arch::sync_warp(mask);
    let generation = team.barrier_generation.load(Ordering::Relaxed);
    // Marks for the virtual GPU's racecheck, which does not see synchronization built from
    // atomics (on amdgcn only, see `arch`). Their object is the phase's: phases alternate, as a
    // thread may arrive at the next phase before another has left this one, never at the phase
    // after that.
    let phase = team.barrier_generation.as_ptr() as usize + (generation & 1) as usize;
    arch::note_counting_barrier_arrival(phase);
    // Every lane has read the generation before its warp arrives.
    arch::sync_warp(mask);
    if tid == warp_base {
        arch::team_fence_release();
        if team.barrier_arrived.fetch_add(lanes, Ordering::Relaxed) + lanes == count {
            team.barrier_arrived.store(0, Ordering::Relaxed);
            arch::team_fence_acquire();
            arch::team_fence_release();
            team.barrier_generation
                .store(generation.wrapping_add(1), Ordering::Relaxed);
        }
    }
    while team.barrier_generation.load(Ordering::Relaxed) == generation {
        arch::pause();
    }
    arch::team_fence_acquire();
    arch::note_counting_barrier_departure(phase);
}

/// The lanes of the calling thread's warp among a region's threads `0..count`: how many, and
/// their mask (the full mask for a whole warp).
pub(crate) fn warp_lanes_in_region(count: u32) -> (u32, u64) {
    let warp = arch::warp_size();
    let tid = arch::thread_id_in_block();
    let lanes = count.saturating_sub(tid - tid % warp).clamp(1, warp);
    let mask = if lanes >= warp {
        arch::FULL_MASK
    } else {
        (1u64 << lanes) - 1
    };
    (lanes, mask)
}

/// Threads that meet at a barrier of the current region.
pub(crate) fn current_region_threads() -> u32 {
    let view = state::thread_view();
    // Outside any parallel region an SPMD kernel runs its team-level code on every thread.
    if view.level == 0 && state::is_spmd() {
        arch::num_threads_in_block()
    } else {
        view.num_threads
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_barrier(_ident: *const c_void, _gtid: i32) {
    arch::note_omp_barrier(true);
    region_barrier(current_region_threads());
    arch::note_omp_barrier(false);
}

/// `single copyprivate(...)`: the thread that ran the `single` block hands its variables to
/// every other thread of the region, which copy them with the compiler's `copy(dst, src)`.
///
/// clang-22 keeps both the variables and the list of their addresses in the single thread's
/// private memory (address space 5), which no other GPU thread can read: a pointer into it
/// means the *reader's* private memory. So the single thread first copies everything into a
/// staging block on the device heap (a list of pointers plus one copy of each variable) and
/// publishes that; the others copy from the staging block.
///
/// # Safety
/// Arguments as clang-22 emits them (`list_bytes` is the size of the pointer list); every
/// thread of the region calls it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_copyprivate(
    _ident: *const c_void,
    _gtid: i32,
    list_bytes: usize,
    data: *mut c_void,
    copy: CopyFn,
    did_it: i32,
) {
    let count = current_region_threads();
    if count <= 1 {
        return;
    }
    let published = &state::team().scratch[state::SCRATCH_COPYPRIVATE];
    let variables = list_bytes / core::mem::size_of::<*mut c_void>();
    if did_it != 0 {
        // SAFETY: forwarded from the caller; this thread owns `data` and the variables.
        let staged = unsafe { copyprivate::stage(variables, data as *mut *mut u8, copy) };
        published.store(staged as u64, Ordering::Relaxed);
    }
    region_barrier(count);
    let staged = published.load(Ordering::Relaxed) as *mut c_void;
    if did_it == 0 {
        // SAFETY: compiler callback; the staging block stays live until the barrier below.
        unsafe { copy(data, staged) };
    }
    region_barrier(count);
    if did_it != 0 {
        // SAFETY: `stage` took it from the heap; every reader is done with it.
        unsafe { heap::device_free(staged as *mut u8) };
    }
}

/// The compiler's `copy(dst_list, src_list)`: `*dst_list[i] = *src_list[i]` for each variable.
pub type CopyFn = unsafe extern "C" fn(dst: *mut c_void, src: *mut c_void);

pub mod copyprivate {
    use super::CopyFn;
    use crate::{arch, heap};
    use core::ffi::c_void;

    /// Largest copyprivate variable the staging copy measures (bytes of private memory).
    pub const MAX_VARIABLE_BYTES: usize = 8 << 10;
    /// The probe buffer: the largest variable plus as much again, so an oversized variable is
    /// seen writing past the limit instead of past the buffer.
    const PROBE_WORDS: usize = 2 * MAX_VARIABLE_BYTES / 8;

    /// Copies the `variables` the compiler listed at `src` into one heap block: `variables`
    /// pointers followed by the copies, each 16-byte aligned. Returns the block (the new list).
    ///
    /// The runtime does not know the variables' sizes, only the compiler's `copy` does. Each
    /// size is measured by letting `copy` write that variable into a probe buffer filled with
    /// a pattern, twice with different patterns (a byte that equals one pattern differs from
    /// the other); the other variables are copied onto themselves meanwhile.
    ///
    /// # Safety
    /// `src` is the calling thread's list of `variables` pointers and `copy` the compiler's
    /// function for that list.
    pub unsafe fn stage(variables: usize, src: *mut *mut u8, copy: CopyFn) -> *mut *mut u8 {
        let pointer = core::mem::size_of::<*mut u8>();
        let probe = heap::device_malloc_or_trap(PROBE_WORDS * 8, NO_MEMORY) as *mut u64;
        let probe_list =
            heap::device_malloc_or_trap(variables.max(1) * pointer, NO_MEMORY) as *mut *mut u8;
        let sizes =
            heap::device_malloc_or_trap(variables.max(1) * pointer, NO_MEMORY) as *mut usize;
        let mut total = 0usize;
        for i in 0..variables {
            for j in 0..variables {
                // SAFETY: both lists hold `variables` pointers.
                unsafe {
                    *probe_list.add(j) = if j == i {
                        probe as *mut u8
                    } else {
                        *src.add(j)
                    }
                };
            }
            let mut size = 0usize;
            for pattern in [0u64, !0u64] {
                // SAFETY: `probe` has PROBE_WORDS words; `copy` writes variable i into it and
                // every other variable onto itself.
                unsafe {
                    fill(probe, pattern);
                    copy(probe_list as *mut c_void, src as *mut c_void);
                    size = size.max(written_bytes(probe, pattern));
                }
            }
            if size > MAX_VARIABLE_BYTES {
                arch::print_message(
                    c"rustomp device runtime: a copyprivate variable is larger than 8192 bytes\n",
                );
                arch::trap();
            }
            // SAFETY: `sizes` holds `variables` entries.
            unsafe { *sizes.add(i) = size };
            total += size.div_ceil(16) * 16;
        }
        let list_bytes = (variables * pointer).div_ceil(16) * 16;
        let block = heap::device_malloc_or_trap(list_bytes + total, NO_MEMORY) as *mut *mut u8;
        let mut offset = list_bytes;
        for i in 0..variables {
            // SAFETY: `block` has room for the list and every rounded size.
            unsafe {
                *block.add(i) = (block as *mut u8).add(offset);
                offset += (*sizes.add(i)).div_ceil(16) * 16;
            }
        }
        // SAFETY: the staging list points at room for each variable; `copy` fills it.
        unsafe {
            copy(block as *mut c_void, src as *mut c_void);
            heap::device_free(probe as *mut u8);
            heap::device_free(probe_list as *mut u8);
            heap::device_free(sizes as *mut u8);
        }
        block
    }

    const NO_MEMORY: &core::ffi::CStr =
        c"rustomp device runtime: no device heap memory for copyprivate\n";

    /// # Safety
    /// `probe` has PROBE_WORDS words.
    unsafe fn fill(probe: *mut u64, pattern: u64) {
        for k in 0..PROBE_WORDS {
            // SAFETY: in bounds.
            unsafe { probe.add(k).write_volatile(pattern) };
        }
    }

    /// Bytes from the start of `probe` up to the last one that no longer holds `pattern`.
    ///
    /// # Safety
    /// As `fill`.
    unsafe fn written_bytes(probe: *const u64, pattern: u64) -> usize {
        for k in (0..PROBE_WORDS).rev() {
            // SAFETY: in bounds.
            let diff = unsafe { probe.add(k).read_volatile() } ^ pattern;
            if diff != 0 {
                // Little-endian: the highest differing byte of the word ends the variable.
                return k * 8 + 8 - diff.leading_zeros() as usize / 8;
            }
        }
        0
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_barrier_simple_spmd(_ident: *const c_void, _gtid: i32) {
    arch::team_barrier();
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_barrier_simple_generic(_ident: *const c_void, _gtid: i32) {
    arch::team_barrier();
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_cancel_barrier(ident: *const c_void, gtid: i32) -> i32 {
    __kmpc_barrier(ident, gtid);
    0
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_flush(_ident: *const c_void) {
    arch::fence(Ordering::SeqCst);
}

/// The lock word of a `critical` construct: the first 32 bits of clang's `kmp_critical_name`.
fn lock_word(name: *mut c_void) -> &'static AtomicU32 {
    // SAFETY: clang passes its `_gomp_critical_user_*` global ([8 x i32], zero-initialized,
    // 4-byte aligned) which lives for the program.
    unsafe { &*(name as *const AtomicU32) }
}

/// clang serializes the lanes of a warp around this call, so lanes never contend with each
/// other here and spinning is safe.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_critical(_ident: *const c_void, _gtid: i32, name: *mut c_void) {
    crate::locks::take(lock_word(name));
    arch::note_lock_acquired(name as usize);
}
/// `critical hint(...)`: the hint changes nothing on the device.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_critical_with_hint(
    ident: *const c_void,
    gtid: i32,
    name: *mut c_void,
    _hint: u32,
) {
    __kmpc_critical(ident, gtid, name);
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_end_critical(_ident: *const c_void, _gtid: i32, name: *mut c_void) {
    arch::note_lock_released(name as usize);
    lock_word(name).store(0, Ordering::Release);
}

/// The `single` block goes to thread 0 of the region (the main thread outside regions).
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_single(_ident: *const c_void, _gtid: i32) -> i32 {
    (state::thread_view().thread_num == 0) as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_end_single(_ident: *const c_void, _gtid: i32) {}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_master(_ident: *const c_void, _gtid: i32) -> i32 {
    (state::thread_view().thread_num == 0) as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_end_master(_ident: *const c_void, _gtid: i32) {}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_masked(_ident: *const c_void, _gtid: i32, filter: i32) -> i32 {
    (state::thread_view().thread_num as i32 == filter) as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_end_masked(_ident: *const c_void, _gtid: i32) {}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_ordered(_ident: *const c_void, _gtid: i32) {}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_end_ordered(_ident: *const c_void, _gtid: i32) {}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_warp_active_thread_mask() -> u64 {
    arch::active_mask()
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_syncwarp(mask: u64) {
    arch::sync_warp(mask);
}

/// `#pragma omp error at(execution) severity(...) message(...)`: prints the message (libomp's
/// wording); a fatal error then stops the kernel. LLVM's device runtime has no such function.
///
/// # Safety
/// `ident` is clang's source location or null; `message` is null or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_error(
    ident: *const c_void,
    severity: i32,
    message: *const core::ffi::c_char,
) {
    let fatal = severity == 2;
    // The team's own code (outside any parallel region) of an SPMD kernel runs on every thread:
    // clang-22's openmp-opt does not guard this call when it makes a generic kernel SPMD, yet
    // the program's one initial thread encounters the directive once (the virtual GPU printed
    // program 130's warning 128 times).
    if !fatal
        && state::is_spmd()
        && state::thread_view().level == 0
        && arch::thread_id_in_block() != 0
    {
        return;
    }
    let mut text = crate::libc::TextBuffer::new();
    text.push(if fatal {
        b"OMP: Error: "
    } else {
        b"OMP: Warning: "
    });
    let location = if ident.is_null() {
        core::ptr::null()
    } else {
        // SAFETY: clang's `ident_t` has the `;file;function;line;column;;` string at psource.
        unsafe { (*(ident as *const rustomp_abi::Ident)).psource }
    };
    // SAFETY: forwarded from the caller.
    unsafe {
        push_location(&mut text, location);
        text.push(if fatal {
            b": Encountered user-directed error: "
        } else {
            b": Encountered user-directed warning: "
        });
        text.push_c(message);
    }
    text.push(b".\n");
    text.print();
    if fatal {
        arch::trap();
    }
}

/// `;file;function;line;column;;` (clang's psource) as libomp prints it: `file:line:column`.
///
/// # Safety
/// `psource` is null or NUL-terminated.
unsafe fn push_location(text: &mut crate::libc::TextBuffer, psource: *const core::ffi::c_char) {
    if psource.is_null() {
        text.push(b"unknown");
        return;
    }
    // SAFETY: guaranteed by the caller.
    let bytes = unsafe { core::ffi::CStr::from_ptr(psource) }.to_bytes();
    let mut fields = bytes.split(|&b| b == b';').skip(1);
    let (file, _function, line, column) =
        (fields.next(), fields.next(), fields.next(), fields.next());
    match (file, line, column) {
        (Some(file), Some(line), Some(column)) if !file.is_empty() => {
            text.push(file);
            text.push(b":");
            text.push(line);
            text.push(b":");
            text.push(column);
        }
        _ => text.push(bytes),
    }
}
