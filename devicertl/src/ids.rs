//! Thread, team and device numbering: the `omp_get_*` queries and the hardware ids the
//! compiler asks for directly.

use crate::{arch, env, state};

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_thread_num() -> i32 {
    state::thread_view().thread_num as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_num_threads() -> i32 {
    state::thread_view().num_threads as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_level() -> i32 {
    state::thread_view().level as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_active_level() -> i32 {
    state::thread_view().active_level as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_in_parallel() -> i32 {
    state::thread_view().active_level as i32
}
/// The thread number of this thread's ancestor at `level`. Level 1 is the team-wide region
/// (numbered by hardware id) or a serialized one (thread 0); deeper levels are serialized.
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_ancestor_thread_num(level: i32) -> i32 {
    let view = state::thread_view();
    match level {
        0 => 0,
        l if l == view.level as i32 => view.thread_num as i32,
        1 if view.level > 1 && view.in_team_region => arch::thread_id_in_block() as i32,
        l if l > 0 && l < view.level as i32 => 0,
        _ => -1,
    }
}
/// The size of the team of this thread's ancestor at `level` (see `omp_get_ancestor_thread_num`).
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_team_size(level: i32) -> i32 {
    let view = state::thread_view();
    match level {
        0 => 1,
        l if l == view.level as i32 => view.num_threads as i32,
        1 if view.level > 1 => view.team_size as i32,
        l if l > 0 && l < view.level as i32 => 1,
        _ => -1,
    }
}
/// Threads a parallel region opened here could get.
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_max_threads() -> i32 {
    if state::thread_view().level > 0 {
        return 1;
    }
    state::level_zero_thread_limit() as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_thread_limit() -> i32 {
    state::thread_limit() as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_team_num() -> i32 {
    arch::block_id() as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_num_teams() -> i32 {
    arch::num_blocks() as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_max_teams() -> i32 {
    arch::num_blocks() as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_is_initial_device() -> i32 {
    0
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_device_num() -> i32 {
    env::device_environment().device_num as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_num_devices() -> i32 {
    env::device_environment().num_devices as i32
}
/// The host's device number is the number of devices.
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_initial_device() -> i32 {
    env::device_environment().num_devices as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_num_procs() -> i32 {
    (arch::num_blocks() * arch::num_threads_in_block()) as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_dynamic() -> i32 {
    0
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_set_dynamic(_: i32) {}
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_nested() -> i32 {
    (omp_get_max_active_levels() > 1) as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_max_active_levels() -> i32 {
    match state::Icv::MaxActiveLevels.get() {
        0 => SUPPORTED_ACTIVE_LEVELS,
        set => set as i32 - 1,
    }
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_set_num_threads(_: i32) {}
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_cancellation() -> i32 {
    0
}
/// The run-sched-var ICV: what `omp_set_schedule` last set in this team, else static, chunk 0.
///
/// # Safety
/// Both pointers are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_get_schedule(kind: *mut i32, chunk: *mut i32) {
    let set = state::Icv::RunSchedule.get();
    let (k, c) = if set == 0 {
        (1, 0)
    } else {
        ((set >> 32) as i32, set as u32 as i32)
    };
    // SAFETY: guaranteed by the caller.
    unsafe {
        kind.write(k);
        chunk.write(c);
    }
}
/// Sets the run-sched-var ICV of this thread's data environment (inside a region: its own;
/// outside: the team's, which its regions inherit).
#[unsafe(no_mangle)]
pub extern "C" fn omp_set_schedule(kind: i32, chunk: i32) {
    let value = ((kind as u32 as u64) << 32) | chunk.max(0) as u32 as u64;
    state::Icv::RunSchedule.set(value.max(1));
}
/// Active levels the device supports: nested regions run serialized, so one.
pub const SUPPORTED_ACTIVE_LEVELS: i32 = 1;
/// max-active-levels-var, at most the supported levels (0: parallel regions are inactive).
#[unsafe(no_mangle)]
pub extern "C" fn omp_set_max_active_levels(levels: i32) {
    if levels >= 0 {
        state::Icv::MaxActiveLevels.set(levels.min(SUPPORTED_ACTIVE_LEVELS) as u64 + 1);
    }
}
/// Deprecated: true asks for the supported levels, false for one.
#[unsafe(no_mangle)]
pub extern "C" fn omp_set_nested(nested: i32) {
    omp_set_max_active_levels(if nested != 0 {
        SUPPORTED_ACTIVE_LEVELS
    } else {
        1
    });
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_supported_active_levels() -> i32 {
    SUPPORTED_ACTIVE_LEVELS
}
/// The default-device ICV is the host's business; the device reports none set (LLVM: -1).
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_default_device() -> i32 {
    -1
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_set_default_device(_: i32) {}
/// No thread affinity on a GPU: `omp_proc_bind_false`, and no places.
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_proc_bind() -> i32 {
    0
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_num_places() -> i32 {
    0
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_place_num_procs(_place: i32) -> i32 {
    0
}
/// There are no places, so nothing is written. The pointer goes through `black_box` so the
/// compiler does not mark it `readnone`: clang's OpenMP optimizer marks it `writeonly`, and the
/// two together break the link (seen with amdgcn LTO).
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_place_proc_ids(_place: i32, ids: *mut i32) {
    core::hint::black_box(ids);
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_place_num() -> i32 {
    -1
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_partition_num_places() -> i32 {
    0
}
/// As `omp_get_place_proc_ids`: nothing to write, the pointer kept opaque.
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_partition_place_nums(places: *mut i32) {
    core::hint::black_box(places);
}
/// Device UIDs are known to the host runtime only: `omp_invalid_device` (-2) and null.
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_device_from_uid(_uid: *const core::ffi::c_char) -> i32 {
    -2
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_uid_from_device(_device: i32) -> *const core::ffi::c_char {
    core::ptr::null()
}
/// Pausing resources is a host operation: from a device it fails (non-zero).
#[unsafe(no_mangle)]
pub extern "C" fn omp_pause_resource(_kind: i32, _device: i32) -> i32 {
    -1
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_pause_resource_all(_kind: i32) -> i32 {
    -1
}

/// The OpenMP thread number serves as the global thread id on the device.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_global_thread_num(_ident: *const core::ffi::c_void) -> i32 {
    omp_get_thread_num()
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_get_hardware_thread_id_in_block() -> i32 {
    arch::thread_id_in_block() as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_get_hardware_num_threads_in_block() -> i32 {
    arch::num_threads_in_block() as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_get_hardware_num_blocks() -> i32 {
    arch::num_blocks() as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_get_warp_size() -> i32 {
    arch::warp_size() as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_is_spmd_exec_mode() -> i8 {
    state::is_spmd() as i8
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_parallel_level() -> u16 {
    state::thread_view().level as u16
}
