//! Parallel reductions deferred across the chunks of an SPMD `distribute parallel for`.
//!
//! ## What clang-22 emits, and what it cost
//!
//! For `target teams distribute parallel for reduction(+: sum)` (an SPMD kernel) clang-22
//! emits, on every thread of a team:
//!
//! ```text
//! __kmpc_distribute_static_init_8u(kind 91, chunk = threads in the block)   // 128, folded
//! for (lb = first; lb <= last; lb += chunk * teams) {                       // the chunk loop
//!   __kmpc_parallel_60(outlined, {lb, ub, &team_copy, ...})
//!     outlined: __kmpc_for_static_init_8u(kind 33, chunk 1): one iteration per thread
//!               private = x[i]
//!               if (__kmpc_nvptx_parallel_reduce_nowait_v2(list, shuffle_reduce, inter_warp_copy))
//!                   *team_copy += private;        // the thread that got 1
//! }
//! __kmpc_distribute_static_fini
//! __kmpc_nvptx_teams_reduce_nowait_v2(buffer, team_copy list, ...)
//! ```
//!
//! so the default 3200 teams × 128 threads over 2^27 doubles run 328 chunk regions per team,
//! each around one 8-byte load per thread. The PTX/SASS of that kernel built with this runtime
//! before this module (sm_90, `bench/gpu_reduce.c`'s loop) did per chunk and per warp:
//! 6 `bar.sync 0` (2 opening and closing the region, 4 in the compiler's inter_warp_copy: two
//! per 32-bit word of a double), 14 `shfl.sync` (5 steps × 2 halves, then 2 steps × 2 on warp
//! 0 over the 4 warps' values), about 35 loads of team state (each of the 14 shuffles and 4
//! barriers looked the region up again) and 4 transfer-array accesses in shared memory, one
//! call, and ~550 executed instructions in the reduction plus ~80 for the region: ~630
//! warp-instructions for 256 bytes. At 16 teams of 128 threads per SM, keeping up with
//! 3.4 TB/s allows about 70. The kernel also held 60 registers (8 teams per SM, half
//! occupancy). The H200 measured 209 GB/s (0.06 of copy).
//!
//! ## What the runtime may do instead
//!
//! The thread that gets 1 combines the region's value into the region's shared copy (the
//! team's copy here). Combining chunk by chunk or once at the end is the same reduction (an
//! OpenMP reduction may combine in any order, and the original item is not defined before the
//! construct ends); nothing but clang's loop control runs between two chunk regions. So each
//! thread keeps its own partial value across the team's chunks in a *stash* and the runtime
//! returns 0 (nobody combines) until the team's last chunk region, where each thread folds its
//! stash into its list and the ordinary block reduction hands the total to thread 0, which
//! combines it into the shared copy once. That is correct whatever the copy is (per thread, as
//! clang-22's SPMD team copies are, or one shared variable): exactly one combine reaches it.
//!
//! The runtime knows neither the types nor the operators: it combines with the compiler's own
//! `shuffle_and_reduce` callback, whose `offset` argument clang passes unchanged as the `delta`
//! of every `__kmpc_shuffle_int32/64` it calls. The runtime implements those shuffles, and for
//! offsets no reduction uses (at or above [`COMBINE`]) it answers from the stash:
//! - record (`lane` past `offset`, algorithm 1 = copy): each shuffled word is stored in the
//!   calling thread's stash and handed back, so the list is unchanged and the stash holds it;
//! - combine (algorithm 0 = reduce, offset `COMBINE + t`): each shuffle answers thread t's
//!   stashed word, so the callback's reduce function computes `list = list op stash(t)`.
//!
//! Per chunk, per thread: one combine and one record call, a few loads and stores of its own
//! stash words in team-shared memory, no shuffle, no barrier, no atomic. The team's last chunk
//! (counted from the distribute schedule: `__kmpc_distribute_static_init` knows how many
//! chunks the team runs, `__kmpc_parallel_60` counts them down), a region that is not the
//! whole block (`num_threads`, `if(false)`: thread 0 also folds the stashes of the threads
//! outside it) or a list that does not fit the stash ends the deferral with the ordinary
//! reduction. A stash still full at `__kmpc_distribute_static_fini` is a runtime bug: the kernel
//! stops instead of losing a value.
//!
//! ## The stash
//!
//! Reserved by every thread's team code at `__kmpc_distribute_static_init` on top of its part
//! of the team-shared stack (SPMD: every thread makes the same reservation, so all see the same
//! block) and given back at `__kmpc_distribute_static_fini`. Rows of one `u32` per thread of
//! the block, counted down from the block's end, thread t's word at `4 t` in each row (no bank
//! conflicts): row 0 the chunk regions still to come, row 1 the state (cursor, words per
//! list, capacity, filled, and a tag of the callback), rows 2.. the stashed words. Two header
//! rows, so the 4 KiB team stack holds a `double` (two words) for 256 threads, AMD's default
//! team, and 6 words for 128; at 512 threads and more there is no room and the reduction runs
//! chunk by chunk, as without the deferral. A thread's
//! rows are its own; thread 0 reads and clears another's only while draining a thread outside
//! a region, which the previous region's closing barrier separates from that thread's writes.

use crate::state::{self, DEFERRED_REDUCTION, LEVEL_MASK};
use crate::{arch, memory};
use core::ffi::c_void;

/// The compiler's `shuffle_and_reduce(list, lane, offset, algorithm)` (see `reduction`).
pub type ShuffleReduceFn =
    unsafe extern "C" fn(list: *mut c_void, lane: i16, offset: i16, algorithm: i16);

/// `offset`s at or above this make `__kmpc_shuffle_int32` answer from the stash: `COMBINE + t`
/// answers thread t's stashed word. Real reductions shuffle by less than a warp.
pub(super) const COMBINE: i16 = 0x7800;
/// The offset that stores the calling thread's words in its stash (and answers them back).
pub(super) const RECORD: i16 = 0x7f00;
/// With algorithm 1 a lane at or past `offset` copies the shuffled value into its list.
const COPY_LANE: i16 = 0x7fff;
const ALGORITHM_COPY: i16 = 1;
const ALGORITHM_REDUCE: i16 = 0;

const ROW_CHUNKS: usize = 0;
const ROW_STATE: usize = 1;
const HEADER_ROWS: usize = 2;
/// Most 32-bit words of one thread's list the stash holds (e.g. four doubles).
pub const MAX_WORDS: usize = 8;

// The state word: 4-bit cursor, words per list and capacity (at most `MAX_WORDS`; the cursor
// stops at 15, past any capacity), two flags, and the callback's tag in the high half.
const CURSOR: u32 = 0xf;
const WORDS_SHIFT: u32 = 4;
const CAPACITY_SHIFT: u32 = 8;
const FIELD: u32 = 0xf;
const FILLED: u32 = 1 << 12;
/// The list does not fit, or the callback does not pass the stash offsets through: no
/// deferral for the rest of this loop.
const OFF: u32 = 1 << 13;
const TAG_SHIFT: u32 = 16;

/// The calling thread's view of its team's stash.
///
/// Plain loads and stores, not atomics: a thread's rows are its own, and the one access to
/// another's (a drain) is ordered by a team barrier; so the compiler may keep the cursor in a
/// register through an inlined callback instead of reading the state word for each word.
#[derive(Clone, Copy)]
struct Stash {
    /// One past the stash's last byte (a pointer into team-shared memory, never an integer, so
    /// the target addresses it as such).
    end: *mut u8,
    row_bytes: usize,
}

impl Stash {
    fn current() -> Stash {
        Stash {
            end: memory::spmd_stack_end(),
            row_bytes: arch::num_threads_in_block() as usize * 4,
        }
    }

    fn at(&self, row: usize, thread: u32) -> *mut u32 {
        self.end
            .wrapping_sub((row + 1) * self.row_bytes)
            .wrapping_add(thread as usize * 4) as *mut u32
    }

    fn get(&self, row: usize, thread: u32, what: &'static str) -> u32 {
        let at = self.at(row, thread);
        arch::watch_read(at as *const u8, 4, what);
        // SAFETY: `open` reserved `HEADER_ROWS + capacity` rows of the team-shared stack below
        // `end` for every thread of the block, 4-byte aligned (the stack's base and `end` are
        // 16-byte aligned, rows are multiples of 4); the stack is an `UnsafeCell` the runtime
        // writes through raw pointers, and no other thread accesses this word in the same
        // barrier interval (see the type).
        unsafe { at.read() }
    }

    fn set(&self, row: usize, thread: u32, value: u32, what: &'static str) {
        let at = self.at(row, thread);
        arch::watch_write(at as *const u8, 4, what);
        // SAFETY: as in `get`.
        unsafe { at.write(value) }
    }

    fn state(&self, thread: u32) -> u32 {
        self.get(ROW_STATE, thread, "reduction stash: state")
    }

    fn set_state(&self, thread: u32, value: u32) {
        self.set(ROW_STATE, thread, value, "reduction stash: state")
    }

    fn chunks(&self, thread: u32) -> u32 {
        self.get(ROW_CHUNKS, thread, "reduction stash: chunks")
    }
}

fn rows_bytes(rows: usize, row_bytes: usize) -> usize {
    (rows * row_bytes).div_ceil(16) * 16
}

/// `__kmpc_distribute_static_init_*` of a chunked distribute loop: the calling thread will run
/// `chunks` chunk regions. SPMD team code only; every thread of the team calls it alike.
///
/// Only in a kernel clang emitted as SPMD: there the loop is a combined `distribute parallel
/// for`, one parallel region per chunk, each reducing into the same team copy. A generic-SPMD
/// kernel (a `target teams distribute` whose body openmp-opt made SPMD) may run a parallel
/// region per iteration, several per iteration, or several reductions per region, each into
/// its own variable: deferring there would deliver one row's sum into another (program 189)
/// or meet a second reduction callback (program 190).
pub(crate) fn open(chunks: u32) {
    let tid = arch::thread_id_in_block();
    let flags = state::thread_flags(tid);
    if chunks < 2 || !state::is_spmd_as_emitted() || flags & (LEVEL_MASK | DEFERRED_REDUCTION) != 0
    {
        return;
    }
    let row_bytes = arch::num_threads_in_block() as usize * 4;
    let Some((block, bytes)) = memory::spmd_reserve(
        (HEADER_ROWS + 1) * row_bytes,
        (HEADER_ROWS + MAX_WORDS) * row_bytes,
        row_bytes,
    ) else {
        return;
    };
    let stash = Stash {
        end: block.wrapping_add(bytes),
        row_bytes,
    };
    let capacity = (bytes / row_bytes).min(HEADER_ROWS + MAX_WORDS) - HEADER_ROWS;
    stash.set(ROW_CHUNKS, tid, chunks, "reduction stash: chunks");
    stash.set_state(tid, (capacity as u32) << CAPACITY_SHIFT);
    state::set_thread_flags(tid, flags | DEFERRED_REDUCTION);
}

/// `__kmpc_distribute_static_fini`: the loop is over; the stash goes back to the stack.
pub(crate) fn close() {
    let tid = arch::thread_id_in_block();
    let flags = state::thread_flags(tid);
    if flags & DEFERRED_REDUCTION == 0 || flags & LEVEL_MASK != 0 {
        return;
    }
    let stash = Stash::current();
    let s = stash.state(tid);
    if s & FILLED != 0 {
        arch::print_message(
            c"rustomp device runtime: a deferred parallel reduction was never delivered (the distribute loop ran fewer chunk regions than its schedule says)\n",
        );
        arch::trap();
    }
    let capacity = ((s >> CAPACITY_SHIFT) & FIELD) as usize;
    let bytes = rows_bytes(HEADER_ROWS + capacity, stash.row_bytes);
    memory::spmd_release(stash.end.wrapping_sub(bytes), bytes);
    state::set_thread_flags(tid, flags & !DEFERRED_REDUCTION);
}

/// `__kmpc_parallel_60` in the team code of a deferring thread: one chunk region begins.
pub(crate) fn enter_chunk_region() {
    let (stash, tid) = (Stash::current(), arch::thread_id_in_block());
    let left = stash.chunks(tid).saturating_sub(1);
    stash.set(ROW_CHUNKS, tid, left, "reduction stash: chunks");
}

/// Whether the calling thread's parallel reduction is one of a deferring chunk loop's: its
/// team-wide region at level 1, opened by team code that keeps a stash.
pub(super) fn applies(view: &state::ThreadView) -> bool {
    let flags = state::thread_flags(arch::thread_id_in_block());
    flags & DEFERRED_REDUCTION != 0 && view.in_team_region && view.level == 1
}

/// The parallel reduction of one chunk region. Returns true when the thread's value went to its
/// stash (the caller returns 0: nobody combines now); false when the ordinary reduction must
/// run, with every stashed value of the team already folded into the lists of the region's
/// threads.
///
/// # Safety
/// `list` and `shuffle_reduce` as the compiler passes them; `applies` holds.
#[inline(always)]
pub(super) unsafe fn chunk(
    list: *mut c_void,
    shuffle_reduce: ShuffleReduceFn,
    view: &state::ThreadView,
) -> bool {
    let tid = arch::thread_id_in_block();
    let stash = Stash::current();
    let s = stash.state(tid);
    if s & OFF != 0 {
        return false;
    }
    // Defer while more chunks follow and the region has every thread of the block (so the
    // last region can fold every stash); otherwise everything comes out of the stash now.
    if stash.chunks(tid) > 0 && view.num_threads == arch::num_threads_in_block() {
        // SAFETY: forwarded from the caller.
        return unsafe { defer(list, shuffle_reduce) };
    }
    // SAFETY: forwarded from the caller.
    unsafe { flush(list, shuffle_reduce, view) };
    false
}

/// `list = list op stash`, then `stash = list`. False (and no more deferral in this loop) when
/// the list does not fit the stash, or when the callback recorded nothing (a producer whose
/// callback does not pass `offset` through to its shuffles): the same for every thread (the
/// same callback), and the list then holds the thread's whole value.
///
/// # Safety
/// As `chunk`.
#[inline(never)]
unsafe fn defer(list: *mut c_void, shuffle_reduce: ShuffleReduceFn) -> bool {
    let tid = arch::thread_id_in_block();
    let stash = Stash::current();
    let s = stash.state(tid);
    let known = (s >> WORDS_SHIFT) & FIELD;
    if s & FILLED != 0 {
        expect_callback(s, shuffle_reduce);
        // SAFETY: forwarded; the stash holds a list recorded with this callback.
        let used = unsafe { invoke(list, shuffle_reduce, COMBINE + tid as i16) };
        expect_words(used, known);
    }
    // SAFETY: forwarded.
    let words = unsafe { invoke(list, shuffle_reduce, RECORD) };
    let capacity = (s >> CAPACITY_SHIFT) & FIELD;
    if words == 0 || words > capacity || (known != 0 && known != words) {
        // Keep the capacity: `close` gives back the whole block it describes.
        stash.set_state(tid, (s & (FIELD << CAPACITY_SHIFT)) | OFF);
        return false;
    }
    let capacity_bits = s & (FIELD << CAPACITY_SHIFT);
    stash.set_state(
        tid,
        capacity_bits | (words << WORDS_SHIFT) | FILLED | (tag(shuffle_reduce) << TAG_SHIFT),
    );
    true
}

/// The end of a deferral (the last chunk region, or one without every thread): the thread
/// folds its stash into its list, and the region's thread 0 those of the threads outside the
/// region (waiting at its closing barrier, their stashes last written before the previous
/// region's closing barrier).
///
/// # Safety
/// As `chunk`.
#[cold]
#[inline(never)]
unsafe fn flush(list: *mut c_void, shuffle_reduce: ShuffleReduceFn, view: &state::ThreadView) {
    let tid = arch::thread_id_in_block();
    let stash = Stash::current();
    let first = if view.thread_num == 0 {
        view.num_threads
    } else {
        arch::num_threads_in_block()
    };
    let mut from = tid;
    loop {
        let theirs = stash.state(from);
        if theirs & FILLED != 0 {
            if theirs >> TAG_SHIFT != tag(shuffle_reduce) {
                arch::print_message(
                    c"rustomp device runtime: a deferred parallel reduction met a second reduction callback in one distribute loop\n",
                );
            }
            expect_callback(theirs, shuffle_reduce);
            // SAFETY: forwarded; `from`'s stash holds a list recorded with this callback.
            let used = unsafe { invoke(list, shuffle_reduce, COMBINE + from as i16) };
            expect_words(used, (theirs >> WORDS_SHIFT) & FIELD);
            stash.set_state(from, stash.state(from) & !(FILLED | CURSOR));
        }
        from = if from == tid { first } else { from + 1 };
        if from >= arch::num_threads_in_block() {
            break;
        }
    }
}

/// One call of the compiler's callback with a stash offset (the only place it is called from
/// here, so it is inlined once: the kernel's register count is the largest of any function it
/// calls). `RECORD`: with a lane past the offset and algorithm 1 the callback copies each
/// element onto itself through `__kmpc_shuffle_int*`, which stores the words (`shuffle`).
/// `COMBINE + t`: with algorithm 0 each shuffle answers t's stashed word, and the callback's
/// reduce function combines that value into the list. Returns how many words it shuffled.
///
/// # Safety
/// As `chunk`.
#[inline(always)]
unsafe fn invoke(list: *mut c_void, shuffle_reduce: ShuffleReduceFn, offset: i16) -> u32 {
    let tid = arch::thread_id_in_block();
    let stash = Stash::current();
    stash.set_state(tid, stash.state(tid) & !CURSOR);
    let (lane, algorithm) = if offset == RECORD {
        (COPY_LANE, ALGORITHM_COPY)
    } else {
        (0, ALGORITHM_REDUCE)
    };
    // SAFETY: the compiler's callback on its list, as described above.
    unsafe { shuffle_reduce(list, lane, offset, algorithm) };
    stash.state(tid) & CURSOR
}

/// 16 bits of the callback's address: what a stashed list was recorded with.
fn tag(shuffle_reduce: ShuffleReduceFn) -> u32 {
    let address = shuffle_reduce as usize;
    ((address >> 2) ^ (address >> 18)) as u32 & 0xffff
}

/// A stashed list can only be combined by the callback that recorded it. Only a kernel clang
/// emitted as SPMD defers (one reduction per chunk region), so another callback here, or a
/// combine that reads a different number of words than the record stored, is a producer the
/// deferral does not know; the stashed value cannot be delivered any other way, so the kernel
/// stops rather than sum wrong. (Mismatches that show before anything is stashed, a list that
/// does not fit or a record of no words, fall back in `defer`.) No message: the chunk loop
/// must not call anything (`build-tools/src/devicecode/chunk_loop.rs`); `flush` prints one.
#[inline(always)]
fn expect_callback(state: u32, shuffle_reduce: ShuffleReduceFn) {
    if state >> TAG_SHIFT != tag(shuffle_reduce) {
        arch::trap();
    }
}

#[inline(always)]
fn expect_words(used: u32, recorded: u32) {
    if used != recorded {
        arch::trap();
    }
}

/// `__kmpc_shuffle_int32` with a stash offset (`delta` at or above `COMBINE`): the next word
/// of the calling thread's record or combine.
pub(super) fn shuffle(value: u32, delta: i16) -> u32 {
    let tid = arch::thread_id_in_block();
    let stash = Stash::current();
    let s = stash.state(tid);
    let (cursor, capacity) = (s & CURSOR, (s >> CAPACITY_SHIFT) & FIELD);
    let answer = if cursor >= capacity {
        // Past the stash: a record that does not fit leaves the list as it is.
        value
    } else if delta == RECORD {
        stash.set(
            HEADER_ROWS + cursor as usize,
            tid,
            value,
            "reduction stash: record",
        );
        value
    } else {
        let from = (delta - COMBINE) as u32;
        stash.get(
            HEADER_ROWS + cursor as usize,
            from,
            "reduction stash: combine",
        )
    };
    stash.set_state(tid, (s & !CURSOR) | (cursor + 1).min(CURSOR));
    answer
}
