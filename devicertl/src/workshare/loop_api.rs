//! The static loops OpenMPIRBuilder emits (`__kmpc_for_static_loop_*`,
//! `__kmpc_distribute_static_loop_*`, `__kmpc_distribute_for_static_loop_*`): the runtime calls
//! the outlined body for each iteration of the caller's share.

use super::static_init::{static_share, team_entity};
use crate::schedule::sched;
use crate::state;
use core::ffi::c_void;

/// The loop body OpenMPIRBuilder outlines: `void body(iv, arg)`.
type StaticLoopBody<T> = unsafe extern "C" fn(T, *mut c_void);

/// The ranges `start..end` of `0..iterations` that `entity` of `entities` gets under a static
/// schedule: chunks of `chunk` round robin, or (chunk 0) one near-equal contiguous block each.
fn static_chunks(
    iterations: i128,
    entity: i128,
    entities: i128,
    chunk: i128,
    mut range: impl FnMut(i128, i128),
) {
    let entities = entities.max(1);
    if entity >= entities || iterations <= 0 {
        return;
    }
    if chunk <= 0 {
        let share = static_share(sched::STATIC, 0, iterations - 1, 1, 0, entity, entities);
        range(share.lb, share.ub + 1);
        return;
    }
    let mut start = entity * chunk;
    while start < iterations {
        range(start, (start + chunk).min(iterations));
        start += entities * chunk;
    }
}

/// `static_chunks`, one iteration at a time.
fn static_iterations(
    iterations: i128,
    entity: i128,
    entities: i128,
    chunk: i128,
    mut body: impl FnMut(i128),
) {
    static_chunks(iterations, entity, entities, chunk, |start, end| {
        for iv in start..end {
            body(iv);
        }
    });
}

macro_rules! static_loops {
    ($for_name:ident, $distribute_name:ident, $distribute_for_name:ident, $t:ty) => {
        /// `for` of OpenMPIRBuilder: the threads of the current region share the iterations.
        ///
        /// # Safety
        /// `body` is the compiler's loop body taking `arg`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $for_name(
            _ident: *const c_void,
            body: StaticLoopBody<$t>,
            arg: *mut c_void,
            iterations: $t,
            _num_threads: $t,
            thread_chunk: $t,
            _one_iteration_per_thread: u8,
        ) {
            let view = state::thread_view();
            static_iterations(
                iterations as i128,
                view.thread_num as i128,
                view.num_threads as i128,
                thread_chunk as i128,
                // SAFETY: guaranteed by the caller.
                |iv| unsafe { body(iv as $t, arg) },
            );
        }

        /// `distribute` of OpenMPIRBuilder: the teams share the iterations.
        ///
        /// # Safety
        /// As above.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $distribute_name(
            _ident: *const c_void,
            body: StaticLoopBody<$t>,
            arg: *mut c_void,
            iterations: $t,
            block_chunk: $t,
            _one_iteration_per_thread: u8,
        ) {
            let (team, teams) = team_entity();
            static_iterations(
                iterations as i128,
                team,
                teams,
                block_chunk as i128,
                // SAFETY: guaranteed by the caller.
                |iv| unsafe { body(iv as $t, arg) },
            );
        }

        /// `distribute parallel for` of OpenMPIRBuilder, called by every thread of an SPMD
        /// kernel: the teams share the iterations (chunks of `block_chunk`), and the first
        /// `num_threads` threads of each team share its part (chunks of `thread_chunk`).
        ///
        /// # Safety
        /// As above.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $distribute_for_name(
            _ident: *const c_void,
            body: StaticLoopBody<$t>,
            arg: *mut c_void,
            iterations: $t,
            num_threads: $t,
            block_chunk: $t,
            thread_chunk: $t,
            _one_iteration_per_thread: u8,
        ) {
            let (team, teams) = team_entity();
            let block = crate::arch::num_threads_in_block() as i128;
            let threads = if (num_threads as i128) > 0 {
                (num_threads as i128).min(block)
            } else {
                block
            };
            let tid = crate::arch::thread_id_in_block() as i128;
            let iterations = iterations as i128;
            if block_chunk as i128 <= 0 && thread_chunk as i128 <= 0 {
                // Every thread of the grid one iteration at a time, as one flat range.
                static_iterations(iterations, team * threads + tid, teams * threads, 1, |iv| {
                    // SAFETY: guaranteed by the caller.
                    unsafe { body(iv as $t, arg) }
                });
                return;
            }
            let block_chunk = if block_chunk as i128 > 0 {
                block_chunk as i128
            } else {
                (iterations + teams.max(1) - 1) / teams.max(1)
            };
            // The team's chunks, each shared by its threads.
            static_chunks(iterations, team, teams, block_chunk, |start, end| {
                static_iterations(
                    end - start,
                    tid,
                    threads,
                    (thread_chunk as i128).max(1),
                    |i| {
                        // SAFETY: guaranteed by the caller.
                        unsafe { body((start + i) as $t, arg) }
                    },
                )
            });
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
