//! A kernel of flang-22's GPU-style host-offload code (it calls `__kmpc_target_init` with a
//! kernel environment) runs as one team; clang-22's own x86_64 kernels form their league with
//! libomp themselves (`__kmpc_push_num_teams` + `__kmpc_fork_teams`), flang's do not, so a
//! `thread_limit` clause reached nothing: `omp_get_thread_limit()` answered 2147483647 in the
//! region and its parallel regions were not bounded. With the clause the plugin runs such a
//! kernel as the one team of a libomp `teams` construct whose thread limit is the clause's, as
//! clang's code would have: the limit is the team's, not the launching host task's, and ends
//! with the kernel.
//!
//! libomp is the program's (every OpenMP program links it); its entry points are found at
//! run time, and without them the kernel runs as before.

use core::ffi::c_void;
use std::sync::OnceLock;

type Microtask = unsafe extern "C" fn(*mut i32, *mut i32, *mut c_void);

type GlobalThreadNum = unsafe extern "C" fn(*const c_void) -> i32;
type PushNumTeams = unsafe extern "C" fn(*const c_void, i32, i32, i32);
type ForkTeams = unsafe extern "C" fn(*const c_void, i32, Microtask, ...);

struct Libomp {
    global_thread_num: GlobalThreadNum,
    push_num_teams: PushNumTeams,
    fork_teams: ForkTeams,
}

fn libomp() -> Option<&'static Libomp> {
    static LIBOMP: OnceLock<Option<Libomp>> = OnceLock::new();
    LIBOMP
        .get_or_init(|| {
            let find = |name: &core::ffi::CStr| {
                // SAFETY: dlsym with a NUL-terminated name; the default search scope.
                let address = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
                (!address.is_null()).then_some(address)
            };
            let (global_thread_num, push_num_teams, fork_teams) = (
                find(c"__kmpc_global_thread_num")?,
                find(c"__kmpc_push_num_teams")?,
                find(c"__kmpc_fork_teams")?,
            );
            // SAFETY: libomp's entry points with these signatures (kmp.h: `kmp_int32
            // __kmpc_global_thread_num(ident_t *)`, `void __kmpc_push_num_teams(ident_t *,
            // kmp_int32 gtid, kmp_int32 num_teams, kmp_int32 num_threads)`, `void
            // __kmpc_fork_teams(ident_t *, kmp_int32 argc, kmpc_micro, ...)`).
            unsafe {
                Some(Libomp {
                    global_thread_num: core::mem::transmute::<*mut c_void, GlobalThreadNum>(
                        global_thread_num,
                    ),
                    push_num_teams: core::mem::transmute::<*mut c_void, PushNumTeams>(
                        push_num_teams,
                    ),
                    fork_teams: core::mem::transmute::<*mut c_void, ForkTeams>(fork_teams),
                })
            }
        })
        .as_ref()
}

/// libomp's `ident_t` for the construct: flags `KMP_IDENT_KMPC`, a psource string.
#[repr(C)]
struct Ident {
    reserved_1: i32,
    flags: i32,
    reserved_2: i32,
    reserved_3: i32,
    psource: *const u8,
}
// SAFETY: read-only data.
unsafe impl Sync for Ident {}
static IDENT: Ident = Ident {
    reserved_1: 0,
    flags: 2,
    reserved_2: 0,
    reserved_3: 0,
    psource: c";unknown;rustomp host plugin: a kernel's team;0;0;;"
        .as_ptr()
        .cast(),
};

unsafe extern "C" fn run_body(_gtid: *mut i32, _btid: *mut i32, body: *mut c_void) {
    // SAFETY: `in_one_team` passes its `&mut dyn FnMut()`, alive until fork_teams returns.
    let body = unsafe { &mut *(body as *mut &mut dyn FnMut()) };
    body();
}

/// Runs `body` as the one team of a teams construct whose threads are limited to
/// `thread_limit`; without libomp, as it is.
pub fn in_one_team(thread_limit: u32, mut body: impl FnMut()) {
    let Some(libomp) = libomp() else {
        body();
        return;
    };
    let mut body: &mut dyn FnMut() = &mut body;
    let limit = i32::try_from(thread_limit).unwrap_or(i32::MAX);
    // SAFETY: libomp's protocol for a teams construct on the calling thread: push the sizes,
    // then fork; the microtask gets the one pointer passed.
    unsafe {
        let gtid = (libomp.global_thread_num)(&IDENT as *const Ident as *const c_void);
        (libomp.push_num_teams)(&IDENT as *const Ident as *const c_void, gtid, 1, limit);
        (libomp.fork_teams)(
            &IDENT as *const Ident as *const c_void,
            1,
            run_body,
            &mut body as *mut &mut dyn FnMut() as *mut c_void,
        );
    }
}
