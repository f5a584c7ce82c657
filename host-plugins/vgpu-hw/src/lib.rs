//! The virtual GPU's hardware (`librustomp_vgpu.so`).
//!
//! `cargo xtask cc --offload-arch=sm_XX` also retargets the program's real nvptx64 device IR
//! (clang's codegen, openmp-opt, our device runtime, the indirect-call pass) to x86_64
//! (`build-tools/src/vgpu`): every NVVM intrinsic becomes a call of `__vgpu_nvvm_<name>`, each
//! inline PTX block it knows a call of `__vgpu_ptx_<name>`, `llvm.trap` `__vgpu_trap`. This
//! library defines those calls on one team at a time, its threads fibers of one OS thread
//! (`team`: warps meet for shuffles, votes and `bar.warp.sync`; barriers with their counts are
//! real meetings; a meeting that can never complete is reported), and `rustomp_vgpu_launch`,
//! which the virtual-GPU plugin calls to run a kernel.
//!
//! Teams run one after another: the image defines each `addrspace(3)` global once, and a
//! team's shared memory is then that one instance. OpenMP gives teams no way to wait for each
//! other, so a correct program cannot tell.

pub mod amdgcn;
pub mod host_memory;
pub mod indirect;
pub mod math;
pub mod printf;
pub mod ptx;
pub mod racecheck;
pub mod registers;
pub mod team;

use core::ffi::{c_char, c_void, CStr};
use core::sync::atomic::{AtomicU32, Ordering};
use rustomp_abi::VgpuLaunch;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Bytes of dynamic shared memory a launch may ask for (sm_90's opt-in maximum, 227 KiB).
pub const DYNAMIC_SHARED_BYTES: usize = 227 << 10;

/// The team's dynamic shared memory (clang's `__rustomp_dynamic_shared`, external in the
/// image). One instance: one team runs at a time.
#[repr(C, align(16))]
pub struct DynamicShared(core::cell::UnsafeCell<[u8; DYNAMIC_SHARED_BYTES]>);
// SAFETY: written by the device code of the one running team, which orders its accesses with
// the emulated barriers, as on a GPU.
unsafe impl Sync for DynamicShared {}

#[unsafe(no_mangle)]
pub static __rustomp_dynamic_shared: DynamicShared =
    DynamicShared(core::cell::UnsafeCell::new([0; DYNAMIC_SHARED_BYTES]));

/// The running launch, for messages from the device (`__vgpu_trap`).
static CURRENT_KERNEL: Mutex<String> = Mutex::new(String::new());
/// The team running now.
static CURRENT_TEAM: AtomicU32 = AtomicU32::new(0);

/// `__nvvm_reflect`: what the image asks of its target (NVVMReflect folds it when the image is
/// built; a call left in the code gets the answers it would have had on sm_90).
///
/// # Safety
/// `name` is NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __nvvm_reflect(name: *const c_char) -> i32 {
    // SAFETY: the caller's string.
    match unsafe { CStr::from_ptr(name) }.to_bytes() {
        b"__CUDA_ARCH" => 900,
        _ => 0,
    }
}

/// The kernel running now, for messages.
pub(crate) fn current_kernel() -> String {
    CURRENT_KERNEL.lock().map(|k| k.clone()).unwrap_or_default()
}

/// `llvm.trap` in device code: on a GPU the launch fails; here the thread and team are named
/// and the process stops, as LLVM's library stops a program whose kernel failed.
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_trap() -> ! {
    let kernel = current_kernel();
    eprintln!(
        "rustomp virtual GPU: kernel {kernel}: device trap in team {} thread {}",
        CURRENT_TEAM.load(Ordering::Relaxed),
        team::thread()
    );
    std::process::abort()
}

/// Runs one kernel launch: each team, in order, as `threads` emulated threads that call
/// `thread_entry(context)`. Returns 0, or -1 with the reason in `error` (NUL-terminated,
/// at most `error_bytes`).
///
/// # Safety
/// `launch` is valid; its entry may be called from many threads at once with its context;
/// `error` is writable for `error_bytes`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rustomp_vgpu_launch(
    launch: *const VgpuLaunch,
    error: *mut c_char,
    error_bytes: usize,
) -> i32 {
    // SAFETY: the caller's launch.
    let launch = unsafe { *launch };
    let name = if launch.kernel_name.is_null() {
        String::from("?")
    } else {
        // SAFETY: NUL-terminated by the caller.
        unsafe { CStr::from_ptr(launch.kernel_name) }
            .to_string_lossy()
            .into_owned()
    };
    let outcome = std::panic::catch_unwind(|| run(&launch, &name));
    let why = match outcome {
        Ok(Ok(())) => return 0,
        Ok(Err(why)) => why,
        Err(panic) => panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "an emulated thread panicked".into()),
    };
    if !error.is_null() && error_bytes > 0 {
        let bytes = why.as_bytes();
        let n = bytes.len().min(error_bytes - 1);
        // SAFETY: `error` is writable for `error_bytes`; n + 1 <= error_bytes.
        unsafe {
            core::ptr::copy_nonoverlapping(bytes.as_ptr(), error as *mut u8, n);
            *error.add(n) = 0;
        }
    }
    -1
}

/// The context pointer, sent to the emulated threads.
#[derive(Clone, Copy)]
struct Context(*mut c_void);
// SAFETY: the launch's contract: its entry may be called from many threads with it.
unsafe impl Send for Context {}
// SAFETY: as above.
unsafe impl Sync for Context {}

fn run(launch: &VgpuLaunch, name: &str) -> Result<(), String> {
    if launch.blocks == 0 || launch.threads == 0 || launch.warp == 0 {
        return Err(format!(
            "kernel {name}: a launch of {} teams of {} threads (warps of {}) cannot run",
            launch.blocks, launch.threads, launch.warp
        ));
    }
    let product = |d: [u32; 3]| d.iter().map(|&n| n as u64).product::<u64>();
    if product(launch.grid) != launch.blocks as u64
        || product(launch.block) != launch.threads as u64
    {
        return Err(format!(
            "kernel {name}: a launch of {} teams of {} threads whose dimensions are {:?} x {:?}",
            launch.blocks, launch.threads, launch.grid, launch.block
        ));
    }
    if launch.dynamic_shared_bytes as usize > DYNAMIC_SHARED_BYTES {
        return Err(format!(
            "kernel {name}: {} bytes of dynamic shared memory asked, the virtual GPU has {DYNAMIC_SHARED_BYTES}",
            launch.dynamic_shared_bytes
        ));
    }
    if let Ok(mut k) = CURRENT_KERNEL.lock() {
        k.clear();
        k.push_str(name);
    }
    let watchdog = Watchdog::start(name, launch.watchdog_ms);
    faults::install_on_this_thread();
    faults::RUNNING_TEAMS.with(|r| r.set(true));
    let _running = RunningTeams;
    let entry = launch.thread_entry;
    let context = Context(launch.context);
    registers::set_dimensions(launch.grid, launch.block);
    let _calls = indirect::Checked::begin(launch.shared_layout as usize);
    let checked = racecheck::Launch::begin(
        launch,
        name,
        __rustomp_dynamic_shared.0.get().cast(),
        DYNAMIC_SHARED_BYTES,
    );
    for block in 0..launch.blocks {
        CURRENT_TEAM.store(block, Ordering::Relaxed);
        racecheck::begin_team(block, launch.threads);
        team::run_team(
            block,
            launch.blocks,
            launch.threads,
            launch.warp,
            team::Family::of_launch(launch.family),
            launch.stack_bytes as usize,
            move || {
                let context = context;
                // SAFETY: the launch's contract.
                unsafe { entry(context.0) }
            },
        )
        .map_err(|why| format!("kernel {name}: {why}"))?;
    }
    drop(watchdog);
    checked.map_or(Ok(()), racecheck::Launch::end)
}

/// Clears the fault handler's mark when the teams are done (or a deadlock ended them).
struct RunningTeams;
impl Drop for RunningTeams {
    fn drop(&mut self) {
        faults::RUNNING_TEAMS.with(|r| r.set(false));
    }
}

/// Stops a launch that runs too long: a hung kernel (a barrier some threads never reach, a
/// spin on a flag nobody sets) is named with the team it was in, and the process ends.
struct Watchdog {
    done: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    fn start(name: &str, limit_ms: u64) -> Self {
        let done = Arc::new((Mutex::new(false), Condvar::new()));
        let thread = (limit_ms > 0).then(|| {
            let done = Arc::clone(&done);
            let name = name.to_string();
            std::thread::spawn(move || {
                let (flag, signal) = &*done;
                let guard = flag.lock().unwrap_or_else(|e| e.into_inner());
                let (guard, timeout) = signal
                    .wait_timeout_while(guard, Duration::from_millis(limit_ms), |d| !*d)
                    .unwrap_or_else(|e| e.into_inner());
                if timeout.timed_out() && !*guard {
                    eprintln!(
                        "rustomp virtual GPU: kernel {name} did not finish within {} s (team {} was running): \
                         a barrier not every thread reaches, or a wait nobody ends; stopped \
                         (RUSTOMP_VGPU_WATCHDOG sets the limit in seconds, 0 for none)",
                        limit_ms as f64 / 1000.0,
                        CURRENT_TEAM.load(Ordering::Relaxed)
                    );
                    std::process::abort();
                }
            })
        });
        Watchdog { done, thread }
    }
}

/// Also when a team's thread panicked: the launch is over either way.
impl Drop for Watchdog {
    fn drop(&mut self) {
        let (flag, signal) = &*self.done;
        *flag.lock().unwrap_or_else(|e| e.into_inner()) = true;
        signal.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Memory faults in device code: the GPU reports an illegal address and the launch fails; here
/// the faulting kernel, team and thread, the address and the instruction's place are named
/// before the program stops. Installed once, for faults on the threads that run teams; any
/// other fault goes to the handler that was there before.
mod faults {
    use core::sync::atomic::{AtomicBool, Ordering};
    use std::cell::Cell;

    std::thread_local! {
        pub static RUNNING_TEAMS: Cell<bool> = const { Cell::new(false) };
    }
    static INSTALLED: AtomicBool = AtomicBool::new(false);
    /// The handlers of SIGSEGV and SIGBUS before ours: written once by `install_on_this_thread`
    /// before ours can run, then only read.
    // SAFETY: an all-zero sigaction is a valid value (the default action, no flags).
    static mut PREVIOUS: [libc::sigaction; 2] = [unsafe { core::mem::zeroed() }; 2];

    /// A fixed buffer to format the report in (no allocation in a signal handler).
    struct Report {
        bytes: [u8; 1024],
        len: usize,
    }
    impl core::fmt::Write for Report {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            let n = s.len().min(self.bytes.len() - self.len);
            self.bytes[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
            self.len += n;
            Ok(())
        }
    }

    extern "C" fn on_fault(signal: i32, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
        if !RUNNING_TEAMS.with(Cell::get) {
            // Not device code: the previous handler, or the default action.
            let index = usize::from(signal == libc::SIGBUS);
            // SAFETY: written once before any handler ran; restoring it and returning re-runs
            // the faulting instruction under it.
            unsafe {
                libc::sigaction(
                    signal,
                    &raw const PREVIOUS[index] as *const _,
                    core::ptr::null_mut(),
                )
            };
            return;
        }
        // SAFETY: the kernel passes a valid siginfo and ucontext to an SA_SIGINFO handler.
        let (address, pc, frame) = unsafe {
            let uc = context as *const libc::ucontext_t;
            (
                (*info).si_addr() as usize,
                (*uc).uc_mcontext.gregs[libc::REG_RIP as usize] as usize,
                (*uc).uc_mcontext.gregs[libc::REG_RBP as usize] as usize,
            )
        };
        let mut where_ = libc::Dl_info {
            dli_fname: core::ptr::null(),
            dli_fbase: core::ptr::null_mut(),
            dli_sname: core::ptr::null(),
            dli_saddr: core::ptr::null_mut(),
        };
        // SAFETY: dladdr only reads the loader's tables.
        let found = unsafe { libc::dladdr(pc as *const libc::c_void, &mut where_) } != 0;
        let mut report = Report {
            bytes: [0; 1024],
            len: 0,
        };
        let kernel = super::CURRENT_KERNEL
            .try_lock()
            .map(|k| k.clone())
            .unwrap_or_default();
        let _ = core::fmt::Write::write_fmt(
            &mut report,
            format_args!(
                "rustomp virtual GPU: kernel {kernel}: invalid memory access at {address:#x} by team {} thread {} (device code at {pc:#x}",
                super::CURRENT_TEAM.load(Ordering::Relaxed),
                super::team::thread()
            ),
        );
        if found {
            let object = if where_.dli_fname.is_null() {
                std::borrow::Cow::Borrowed("?")
            } else {
                // SAFETY: a NUL-terminated name of the loader's.
                unsafe { std::ffi::CStr::from_ptr(where_.dli_fname) }.to_string_lossy()
            };
            let _ = core::fmt::Write::write_fmt(
                &mut report,
                format_args!(", offset {:#x} in {object}", pc - where_.dli_fbase as usize),
            );
        }
        if found && !where_.dli_sname.is_null() {
            // SAFETY: a NUL-terminated name of the loader's.
            let name = unsafe { std::ffi::CStr::from_ptr(where_.dli_sname) };
            let _ = core::fmt::Write::write_fmt(
                &mut report,
                format_args!(
                    ", after {}+{:#x}",
                    name.to_string_lossy(),
                    pc - where_.dli_saddr as usize
                ),
            );
        }
        let _ = core::fmt::Write::write_str(&mut report, ")");
        // Callers, by the frame-pointer chain (the retargeted device code keeps frame pointers,
        // as clang compiles it for the GPU with "frame-pointer"="all").
        let mut frame = frame;
        for _ in 0..6 {
            if frame == 0 || frame % 8 != 0 {
                break;
            }
            // SAFETY: a frame-pointer chain of the faulting thread's stack; a wrong link is read
            // at most once more before the program stops anyway.
            let (next, ret) = unsafe { (*(frame as *const usize), *((frame + 8) as *const usize)) };
            let mut caller = libc::Dl_info {
                dli_fname: core::ptr::null(),
                dli_fbase: core::ptr::null_mut(),
                dli_sname: core::ptr::null(),
                dli_saddr: core::ptr::null_mut(),
            };
            // SAFETY: dladdr only reads the loader's tables.
            if ret == 0 || unsafe { libc::dladdr(ret as *const libc::c_void, &mut caller) } == 0 {
                break;
            }
            let _ = core::fmt::Write::write_fmt(
                &mut report,
                format_args!(" <- {:#x}", ret - caller.dli_fbase as usize),
            );
            if next <= frame {
                break;
            }
            frame = next;
        }
        let _ = core::fmt::Write::write_str(&mut report, "\n");
        // SAFETY: write(2) and abort(3) are async-signal-safe.
        unsafe {
            libc::write(2, report.bytes.as_ptr().cast(), report.len);
            libc::abort();
        }
    }

    /// Installs the handler (once per process) with an alternate stack on the calling thread,
    /// so that a fault of a full fiber stack is reported too.
    pub fn install_on_this_thread() {
        const ALT_STACK: usize = 64 << 10;
        std::thread_local! {
            static ALT: Cell<bool> = const { Cell::new(false) };
        }
        if !ALT.with(Cell::get) {
            let stack = Box::leak(vec![0u8; ALT_STACK].into_boxed_slice());
            let alt = libc::stack_t {
                ss_sp: stack.as_mut_ptr().cast(),
                ss_flags: 0,
                ss_size: ALT_STACK,
            };
            // SAFETY: a leaked buffer of that size, for this thread.
            unsafe { libc::sigaltstack(&alt, core::ptr::null_mut()) };
            ALT.with(|a| a.set(true));
        }
        if INSTALLED.swap(true, Ordering::AcqRel) {
            return;
        }
        for (index, signal) in [libc::SIGSEGV, libc::SIGBUS].into_iter().enumerate() {
            // SAFETY: a zeroed sigaction is valid; the handler has the SA_SIGINFO signature.
            unsafe {
                let mut action: libc::sigaction = core::mem::zeroed();
                action.sa_sigaction = on_fault as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(signal, &action, &raw mut PREVIOUS[index] as *mut _);
            }
        }
    }
}
