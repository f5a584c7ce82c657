//! Device tasks run undeferred: `__kmpc_omp_task` runs the task at once on the encountering
//! thread, so `taskwait` and `taskgroup` have nothing left to wait for.

use crate::{arch, heap};
use core::ffi::c_void;

/// The head of clang's `kmp_task_t`.
#[repr(C)]
pub struct TaskHeader {
    pub shareds: *mut c_void,
    pub routine: Option<unsafe extern "C" fn(i32, *mut TaskHeader) -> i32>,
    pub part_id: i32,
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_omp_task_alloc(
    _ident: *const c_void,
    _gtid: i32,
    _flags: i32,
    task_bytes: usize,
    shareds_bytes: usize,
    routine: Option<unsafe extern "C" fn(i32, *mut TaskHeader) -> i32>,
) -> *mut TaskHeader {
    let head = task_bytes
        .max(core::mem::size_of::<TaskHeader>())
        .div_ceil(16)
        * 16;
    let task = heap::device_malloc(head + shareds_bytes) as *mut TaskHeader;
    if task.is_null() {
        arch::trap();
    }
    // SAFETY: `task` points at `head + shareds_bytes` fresh bytes, at least a TaskHeader.
    unsafe {
        task.write(TaskHeader {
            shareds: (task as *mut u8).add(head) as *mut c_void,
            routine,
            part_id: 0,
        });
    }
    task
}

/// # Safety
/// `task` came from `__kmpc_omp_task_alloc` and was not run yet.
unsafe fn run_and_free(gtid: i32, task: *mut TaskHeader) {
    // SAFETY: guaranteed by the caller.
    if let Some(routine) = unsafe { (*task).routine } {
        // SAFETY: clang's task entry takes (gtid, task).
        unsafe { routine(gtid, task) };
    }
    // SAFETY: `__kmpc_omp_task_alloc` took the task from the heap; it ran and is done.
    unsafe { heap::device_free(task as *mut u8) };
}

/// # Safety
/// `task` came from `__kmpc_omp_task_alloc`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_omp_task(
    _ident: *const c_void,
    gtid: i32,
    task: *mut TaskHeader,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { run_and_free(gtid, task) };
    0
}
/// Dependences are already satisfied: every earlier task finished when it was created.
///
/// # Safety
/// `task` came from `__kmpc_omp_task_alloc`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_omp_task_with_deps(
    _ident: *const c_void,
    gtid: i32,
    task: *mut TaskHeader,
    _ndeps: i32,
    _deps: *mut c_void,
    _ndeps_noalias: i32,
    _noalias_deps: *mut c_void,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { run_and_free(gtid, task) };
    0
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_omp_task_begin_if0(
    _ident: *const c_void,
    _gtid: i32,
    _task: *mut TaskHeader,
) {
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_omp_task_complete_if0(
    _ident: *const c_void,
    _gtid: i32,
    task: *mut TaskHeader,
) {
    // SAFETY: clang passes the task `__kmpc_omp_task_alloc` returned, after running it.
    unsafe { heap::device_free(task as *mut u8) };
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_omp_wait_deps(
    _ident: *const c_void,
    _gtid: i32,
    _ndeps: i32,
    _deps: *mut c_void,
    _ndeps_noalias: i32,
    _noalias_deps: *mut c_void,
) {
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_omp_taskwait(_ident: *const c_void, _gtid: i32) -> i32 {
    0
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_omp_taskyield(_ident: *const c_void, _gtid: i32, _end_part: i32) -> i32 {
    0
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_taskgroup(_ident: *const c_void, _gtid: i32) {}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_end_taskgroup(_ident: *const c_void, _gtid: i32) {}
#[unsafe(no_mangle)]
pub extern "C" fn omp_in_final() -> i32 {
    1
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_max_task_priority() -> i32 {
    0
}

/// `taskloop`: the compiler stored the (normalized) bounds in the task; as in LLVM's device
/// runtime the whole iteration space runs as that one task, at once (device tasks are
/// undeferred), so every iteration runs exactly once whatever `grainsize`/`num_tasks` asked.
///
/// # Safety
/// Arguments as clang-22 emits them: `task` from `__kmpc_omp_task_alloc`, `lower`/`upper`
/// point into it.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments, reason = "clang-22's signature")]
pub unsafe extern "C" fn __kmpc_taskloop(
    ident: *const c_void,
    gtid: i32,
    task: *mut TaskHeader,
    _if_value: i32,
    lower: *mut u64,
    upper: *mut u64,
    _stride: i64,
    _nogroup: i32,
    _schedule: i32,
    _grainsize: u64,
    _task_dup: *mut c_void,
) {
    // SAFETY: guaranteed by the caller.
    if unsafe { *lower > *upper } {
        // SAFETY: the task was allocated and never runs.
        unsafe { heap::device_free(task as *mut u8) };
        return;
    }
    // SAFETY: forwarded.
    unsafe { __kmpc_omp_task(ident, gtid, task) };
}

/// OpenMP 5.1's `taskloop` entry (with the `strict` modifier of `grainsize`/`num_tasks`).
///
/// # Safety
/// As `__kmpc_taskloop`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments, reason = "clang-22's signature")]
pub unsafe extern "C" fn __kmpc_taskloop_5(
    ident: *const c_void,
    gtid: i32,
    task: *mut TaskHeader,
    if_value: i32,
    lower: *mut u64,
    upper: *mut u64,
    stride: i64,
    nogroup: i32,
    schedule: i32,
    grainsize: u64,
    _modifier: i32,
    task_dup: *mut c_void,
) {
    // SAFETY: forwarded.
    unsafe {
        __kmpc_taskloop(
            ident, gtid, task, if_value, lower, upper, stride, nogroup, schedule, grainsize,
            task_dup,
        )
    }
}

/// Cancellation is off on the device (`omp_get_cancellation()` is 0, as in LLVM's device
/// runtime): `cancel` and `cancellation point` never cancel, and regions run to completion.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_cancel(_ident: *const c_void, _gtid: i32, _kind: i32) -> i32 {
    0
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_cancellationpoint(_ident: *const c_void, _gtid: i32, _kind: i32) -> i32 {
    0
}

/// Task reductions (`taskloop reduction(...)`, `taskgroup task_reduction(...)` with
/// `in_reduction`, `reduction(task, ...)`). Device tasks run undeferred on the encountering
/// thread, one after another, so a taskgroup's tasks never run at the same time: each task can
/// reduce straight into the item it names, and that item is the only copy (no private copies
/// to initialize or combine). LLVM's device runtime has none of these functions.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_taskred_init(_gtid: i32, _num: i32, data: *mut c_void) -> *mut c_void {
    taskgroup_token(data)
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_task_reduction_init(
    _gtid: i32,
    _num: i32,
    data: *mut c_void,
) -> *mut c_void {
    taskgroup_token(data)
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_taskred_modifier_init(
    _ident: *const c_void,
    _gtid: i32,
    _is_worksharing: i32,
    _num: i32,
    data: *mut c_void,
) -> *mut c_void {
    taskgroup_token(data)
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_task_reduction_modifier_init(
    _ident: *const c_void,
    _gtid: i32,
    _is_worksharing: i32,
    _num: i32,
    data: *mut c_void,
) -> *mut c_void {
    taskgroup_token(data)
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_task_reduction_modifier_fini(
    _ident: *const c_void,
    _gtid: i32,
    _is_worksharing: i32,
) {
}
/// The copy of reduction item `item` a task reduces into: the item itself (see above).
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_task_reduction_get_th_data(
    _gtid: i32,
    _taskgroup: *mut c_void,
    item: *mut c_void,
) -> *mut c_void {
    item
}

/// A non-null handle for the compiler to pass back (it only ever hands it to us).
fn taskgroup_token(data: *mut c_void) -> *mut c_void {
    if data.is_null() {
        core::ptr::NonNull::<u64>::dangling().as_ptr() as *mut c_void
    } else {
        data
    }
}
