//! OpenMPIRBuilder's static loops (`__kmpc_{for,distribute,distribute_for}_static_loop_{4,4u,8,8u}`):
//! the runtime calls the loop body for each of its iterations, `body(iv, arg)` with `iv` in
//! `0..trip count` (the compiler maps it back to the loop variable).
//!
//! On the CPU plugin a kernel is one team, so `distribute` gives the team every iteration, and
//! `for` / `distribute for` share them among the threads of the current libomp team (its size
//! and this thread's number from libomp, which is what flang passes as `num_threads` anyway).
//! Without a chunk each thread takes one contiguous block, the first `trip % threads` one
//! iteration longer (OpenMP's `schedule(static)`); with a chunk, chunks go round-robin
//! (`schedule(static, chunk)`). As in LLVM's DeviceRTL the loops end without a barrier: the
//! compiler emits one where the construct has it.

use crate::libomp;
use core::ffi::c_void;

/// The iterations of `entity` (of `entities`) in `0..iterations`, as half-open ranges: one
/// block when `chunk` is 0, else the chunks `entity`, `entity + entities`, ... of size `chunk`.
pub fn for_each_share(
    iterations: u64,
    entity: u64,
    entities: u64,
    chunk: u64,
    mut range: impl FnMut(u64, u64),
) {
    let (iterations, entity, entities, chunk) = (
        u128::from(iterations),
        u128::from(entity),
        u128::from(entities.max(1)),
        u128::from(chunk),
    );
    if entity >= entities {
        return;
    }
    // Every bound below is at most `iterations`, so it fits u64 again.
    let narrow = |v: u128| u64::try_from(v).unwrap_or(u64::MAX);
    if chunk == 0 {
        let (base, longer) = (iterations / entities, iterations % entities);
        let start = entity * base + entity.min(longer);
        let end = start + base + u128::from(entity < longer);
        if start < end {
            range(narrow(start), narrow(end));
        }
        return;
    }
    let mut start = entity * chunk;
    while start < iterations {
        let end = (start + chunk).min(iterations);
        range(narrow(start), narrow(end));
        start += entities * chunk;
    }
}

/// This thread's number and its team's size, from libomp.
fn thread_in_team() -> (u64, u64) {
    // SAFETY: libomp's queries, valid on any thread.
    let (me, team) = unsafe { (libomp::omp_get_thread_num(), libomp::omp_get_num_threads()) };
    (
        u64::try_from(me).unwrap_or(0),
        u64::try_from(team).unwrap_or(1),
    )
}

/// A trip count or chunk of the compiler's type as u64 (a negative one, which the compiler never
/// passes, counts as 0).
trait Count: Copy {
    fn count(self) -> u64;
    fn from_index(index: u64) -> Self;
}

macro_rules! count {
    ($($t:ty),*) => {$(
        impl Count for $t {
            fn count(self) -> u64 {
                u64::try_from(self).unwrap_or(0)
            }
            /// `index` is below a trip count of this type, so it fits.
            fn from_index(index: u64) -> Self {
                index as $t
            }
        }
    )*};
}
count!(i32, u32, i64, u64);

/// Runs `body` for this thread's share of `iterations` in the current libomp team.
///
/// # Safety
/// `body` is the compiler's loop body; `arg` is what it expects.
unsafe fn share_in_team<T: Count>(
    body: unsafe extern "C" fn(T, *mut c_void),
    arg: *mut c_void,
    iterations: T,
    chunk: T,
) {
    let (me, team) = thread_in_team();
    for_each_share(iterations.count(), me, team, chunk.count(), |start, end| {
        for iv in start..end {
            // SAFETY: guaranteed by the caller; `iv` is below the trip count.
            unsafe { body(T::from_index(iv), arg) };
        }
    });
}

/// Runs `body` for every iteration, in order (the one team's `distribute`).
///
/// # Safety
/// As `share_in_team`.
unsafe fn whole_range<T: Count>(
    body: unsafe extern "C" fn(T, *mut c_void),
    arg: *mut c_void,
    iterations: T,
) {
    for iv in 0..iterations.count() {
        // SAFETY: guaranteed by the caller; `iv` is below the trip count.
        unsafe { body(T::from_index(iv), arg) };
    }
}

macro_rules! static_loops {
    ($for_name:ident, $distribute_name:ident, $distribute_for_name:ident, $t:ty) => {
        /// `for`: the threads of the current team share the iterations.
        ///
        /// # Safety
        /// `body` is the compiler's loop body taking `arg`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $for_name(
            _ident: *const c_void,
            body: unsafe extern "C" fn($t, *mut c_void),
            arg: *mut c_void,
            iterations: $t,
            _num_threads: $t,
            thread_chunk: $t,
            _one_iteration_per_thread: u8,
        ) {
            // SAFETY: forwarded from the caller.
            unsafe { share_in_team(body, arg, iterations, thread_chunk) }
        }

        /// `distribute`: the one team takes every iteration.
        ///
        /// # Safety
        /// As above.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $distribute_name(
            _ident: *const c_void,
            body: unsafe extern "C" fn($t, *mut c_void),
            arg: *mut c_void,
            iterations: $t,
            _block_chunk: $t,
            _one_iteration_per_thread: u8,
        ) {
            // SAFETY: forwarded from the caller.
            unsafe { whole_range(body, arg, iterations) }
        }

        /// `distribute parallel do`: the one team takes every iteration (so `block_chunk`
        /// changes nothing) and its threads share them as in `for`.
        ///
        /// # Safety
        /// As above.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $distribute_for_name(
            _ident: *const c_void,
            body: unsafe extern "C" fn($t, *mut c_void),
            arg: *mut c_void,
            iterations: $t,
            _num_threads: $t,
            _block_chunk: $t,
            thread_chunk: $t,
            _one_iteration_per_thread: u8,
        ) {
            // SAFETY: forwarded from the caller.
            unsafe { share_in_team(body, arg, iterations, thread_chunk) }
        }
    };
}

static_loops!(
    __kmpc_for_static_loop_4,
    __kmpc_distribute_static_loop_4,
    __kmpc_distribute_for_static_loop_4,
    i32
);
static_loops!(
    __kmpc_for_static_loop_4u,
    __kmpc_distribute_static_loop_4u,
    __kmpc_distribute_for_static_loop_4u,
    u32
);
static_loops!(
    __kmpc_for_static_loop_8,
    __kmpc_distribute_static_loop_8,
    __kmpc_distribute_for_static_loop_8,
    i64
);
static_loops!(
    __kmpc_for_static_loop_8u,
    __kmpc_distribute_static_loop_8u,
    __kmpc_distribute_for_static_loop_8u,
    u64
);

#[cfg(test)]
mod tests {
    use super::*;

    fn shares(iterations: u64, entities: u64, chunk: u64) -> Vec<Vec<(u64, u64)>> {
        (0..entities)
            .map(|e| {
                let mut v = Vec::new();
                for_each_share(iterations, e, entities, chunk, |s, t| v.push((s, t)));
                v
            })
            .collect()
    }

    /// Every iteration exactly once, whatever the split.
    fn covers_once(iterations: u64, entities: u64, chunk: u64) -> bool {
        let mut hits = vec![0u32; iterations as usize];
        for share in shares(iterations, entities, chunk) {
            for (s, t) in share {
                for i in s..t {
                    hits[i as usize] += 1;
                }
            }
        }
        hits.iter().all(|h| *h == 1)
    }

    #[test]
    fn blocks_without_a_chunk_chunks_round_robin_with_one() {
        assert_eq!(
            shares(10, 3, 0),
            vec![vec![(0, 4)], vec![(4, 7)], vec![(7, 10)]]
        );
        assert_eq!(
            shares(2, 4, 0),
            vec![vec![(0, 1)], vec![(1, 2)], vec![], vec![]]
        );
        assert_eq!(
            shares(10, 2, 3),
            vec![vec![(0, 3), (6, 9)], vec![(3, 6), (9, 10)]]
        );
        for iterations in 0..40 {
            for entities in 1..9 {
                for chunk in 0..6 {
                    assert!(
                        covers_once(iterations, entities, chunk),
                        "{iterations} over {entities}, chunk {chunk}"
                    );
                }
            }
        }
    }

    #[test]
    fn no_overflow_at_the_top_of_the_range() {
        let mut last = None;
        for_each_share(u64::MAX, 1, 2, 0, |s, t| last = Some((s, t)));
        assert_eq!(last, Some((u64::MAX / 2 + 1, u64::MAX)));
        let mut count = 0;
        for_each_share(u64::MAX, 0, 1, u64::MAX - 1, |_, _| count += 1);
        assert_eq!(count, 2);
        for_each_share(5, 3, 2, 0, |_, _| {
            panic!("entity beyond the team has no share")
        });
    }

    unsafe extern "C" fn record(iv: i64, arg: *mut c_void) {
        // SAFETY: the test passes a Mutex<Vec<i64>>.
        let seen = unsafe { &*(arg as *const std::sync::Mutex<Vec<i64>>) };
        seen.lock().unwrap().push(iv);
    }

    #[test]
    fn outside_a_parallel_region_one_thread_runs_everything_in_order() {
        let seen = std::sync::Mutex::new(Vec::<i64>::new());
        let arg = &seen as *const _ as *mut c_void;
        // SAFETY: `record` takes a pointer to `seen`.
        unsafe {
            __kmpc_distribute_for_static_loop_8(core::ptr::null(), record, arg, 5, 1, 0, 0, 0)
        };
        // SAFETY: as above.
        unsafe { __kmpc_distribute_static_loop_8(core::ptr::null(), record, arg, 3, 0, 0) };
        // SAFETY: as above; a negative trip count (never emitted) runs nothing.
        unsafe { __kmpc_for_static_loop_8(core::ptr::null(), record, arg, -4, 1, 2, 0) };
        assert_eq!(*seen.lock().unwrap(), vec![0, 1, 2, 3, 4, 0, 1, 2]);
    }
}
