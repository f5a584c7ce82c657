//! The `omp_target_*_async` routines: the operation becomes a libomp task (a hidden-helper task,
//! as in LLVM) that carries the caller's depend objects. libomp then orders it after the tasks it
//! depends on and before the tasks that depend on it, and a `taskwait` completes it.
//!
//! libomp is reached through `dlsym` so that this library still loads where libomp is absent
//! (nothing can be deferred there, so the work runs at once).

use rustomp_abi::Ident;
use std::ffi::c_void;
use std::sync::OnceLock;

/// libomp's `kmp_depend_info_t`: what one `omp_depend_t` points to.
#[repr(C)]
#[derive(Clone, Copy)]
struct DependInfo {
    base_addr: isize,
    len: usize,
    /// in/out/mutexinoutset/… bits in the low byte; the rest is padding of libomp's union.
    flags: u32,
    _padding: u32,
}
static_assertions::assert_eq_size!(DependInfo, [u8; 24]);

/// The head of libomp's `kmp_task_t` (what `__kmpc_omp_target_task_alloc` returns).
#[repr(C)]
struct Task {
    shareds: *mut c_void,
    routine: TaskEntry,
    part_id: i32,
    data1: usize,
    data2: usize,
}
static_assertions::assert_eq_size!(Task, [u8; 40]);
static_assertions::const_assert_eq!(std::mem::offset_of!(Task, part_id), 16);

type TaskEntry = unsafe extern "C" fn(gtid: i32, task: *mut Task) -> i32;

/// `kmp_tasking_flags_t.hidden_helper` (bit 7): run on libomp's hidden helper threads.
const HIDDEN_HELPER: i32 = 1 << 7;

type GlobalThreadNum = unsafe extern "C" fn(*const Ident) -> i32;
type TargetTaskAlloc =
    unsafe extern "C" fn(*const Ident, i32, i32, usize, usize, TaskEntry, i64) -> *mut Task;
type TaskWithDeps = unsafe extern "C" fn(
    *const Ident,
    i32,
    *mut Task,
    i32,
    *const DependInfo,
    i32,
    *const DependInfo,
) -> i32;

struct Libomp {
    global_thread_num: GlobalThreadNum,
    target_task_alloc: TargetTaskAlloc,
    task_with_deps: TaskWithDeps,
}

fn libomp() -> Option<&'static Libomp> {
    static LIBOMP: OnceLock<Option<Libomp>> = OnceLock::new();
    LIBOMP
        .get_or_init(|| {
            let find = |name: &std::ffi::CStr| {
                // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name.
                let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
                (!f.is_null()).then_some(f)
            };
            let (a, b, c) = (
                find(c"__kmpc_global_thread_num")?,
                find(c"__kmpc_omp_target_task_alloc")?,
                find(c"__kmpc_omp_task_with_deps")?,
            );
            // SAFETY: libomp's entry points, with the signatures of its kmp.h.
            unsafe {
                Some(Libomp {
                    global_thread_num: std::mem::transmute::<*mut c_void, GlobalThreadNum>(a),
                    target_task_alloc: std::mem::transmute::<*mut c_void, TargetTaskAlloc>(b),
                    task_with_deps: std::mem::transmute::<*mut c_void, TaskWithDeps>(c),
                })
            }
        })
        .as_ref()
}

type Work = Box<dyn FnOnce() + Send>;

/// Runs `work` as a task that depends on the `count` depend objects at `objects` (an array of
/// `omp_depend_t`, each a pointer to libomp's dependence record). Returns 0, or -1 when the
/// arguments are bad or libomp could not create the task (then `work` never runs).
///
/// # Safety
/// `objects` holds `count` depend objects initialised by `#pragma omp depobj`.
pub unsafe fn spawn(what: &str, count: i32, objects: *const *const c_void, work: Work) -> i32 {
    if count < 0 || (count > 0 && objects.is_null()) {
        crate::diag::error(&format!(
            "{what}: {count} depend objects, list at {objects:p}"
        ));
        return -1;
    }
    let mut deps = Vec::with_capacity(count as usize);
    for i in 0..count as usize {
        // SAFETY: the caller's array holds `count` objects.
        let object = unsafe { *objects.add(i) } as *const DependInfo;
        if object.is_null() {
            crate::diag::error(&format!(
                "{what}: depend object {i} was never initialised (null)"
            ));
            return -1;
        }
        // SAFETY: an initialised depend object points to libomp's record (copied, as LLVM does:
        // the object may be destroyed once this call returns).
        deps.push(unsafe { object.read_unaligned() });
    }
    let Some(omp) = libomp() else {
        // Without libomp no task exists to wait for, and none can wait for this one.
        work();
        return 0;
    };
    // SAFETY: libomp's documented entry points; the task is libomp's own allocation of the size
    // asked for, and `shareds` is ours until `run_work` takes it back.
    unsafe {
        let gtid = (omp.global_thread_num)(std::ptr::null());
        let task = (omp.target_task_alloc)(
            std::ptr::null(),
            gtid,
            HIDDEN_HELPER,
            size_of::<Task>(),
            0,
            run_work,
            -1,
        );
        if task.is_null() {
            crate::diag::error(&format!("{what}: libomp could not create the task"));
            return -1;
        }
        (*task).shareds = Box::into_raw(Box::new(work)) as *mut c_void;
        (omp.task_with_deps)(
            std::ptr::null(),
            gtid,
            task,
            deps.len() as i32,
            deps.as_ptr(),
            0,
            std::ptr::null(),
        );
    }
    0
}

/// The task's body: takes its work back and runs it; a panic stops here, not in libomp.
unsafe extern "C" fn run_work(_gtid: i32, task: *mut Task) -> i32 {
    // SAFETY: `spawn` stored a `Box<Work>` in `shareds` and nothing else takes it.
    let work = unsafe { Box::from_raw((*task).shareds as *mut Work) };
    crate::export::guard("an asynchronous target memory operation", -1, || {
        work();
        0
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn counting_work(runs: &Arc<AtomicUsize>) -> Work {
        let runs = Arc::clone(runs);
        Box::new(move || {
            runs.fetch_add(1, Ordering::SeqCst);
        })
    }

    #[test]
    fn bad_depend_lists_are_refused_without_running_the_work() {
        let runs = Arc::new(AtomicUsize::new(0));
        // SAFETY: each call's list is consistent with, or refused for, its count.
        unsafe {
            assert_eq!(
                spawn("test", -1, std::ptr::null(), counting_work(&runs)),
                -1
            );
            assert_eq!(spawn("test", 2, std::ptr::null(), counting_work(&runs)), -1);
            let uninitialised: [*const c_void; 1] = [std::ptr::null()];
            assert_eq!(
                spawn("test", 1, uninitialised.as_ptr(), counting_work(&runs)),
                -1
            );
        }
        assert_eq!(runs.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn without_libomp_the_work_runs_at_once() {
        // The unit-test binary does not link libomp, so there is no task to create.
        assert!(libomp().is_none());
        let runs = Arc::new(AtomicUsize::new(0));
        let record = DependInfo {
            base_addr: 0x1000,
            len: 4,
            flags: 1,
            _padding: 0,
        };
        let object = &record as *const DependInfo as *const c_void;
        assert_eq!(
            // SAFETY: one depend object pointing to a valid record.
            unsafe { spawn("test", 1, &object, counting_work(&runs)) },
            0
        );
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}
