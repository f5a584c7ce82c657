//! The virtual GPU's hardware (`librustomp_vgpu.so`).
//!
//! `cargo xtask cc --offload-arch=sm_XX` also retargets the program's real nvptx64 device IR
//! (clang's codegen, openmp-opt, our device runtime, the indirect-call pass) to x86_64
//! (`build-tools/src/vgpu`): every NVVM intrinsic becomes a call of `__vgpu_nvvm_<name>`, each
//! inline PTX block it knows a call of `__vgpu_ptx_<name>`, `llvm.trap` `__vgpu_trap`. This
//! library defines those calls on the host emulation of `devicertl::arch::host` (a team's
//! threads are OS threads; warps meet for shuffles, votes and `bar.warp.sync`; the named and
//! counting barriers are real meetings), and `rustomp_vgpu_launch`, which the virtual-GPU
//! plugin calls to run a kernel.
//!
//! Teams run one after another: the image defines each `addrspace(3)` global once, and a
//! team's shared memory is then that one instance. OpenMP gives teams no way to wait for each
//! other, so a correct program cannot tell.

pub mod math;
pub mod printf;
pub mod ptx;
pub mod registers;

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

/// `llvm.trap` in device code: on a GPU the launch fails; here the thread and team are named
/// and the process stops, as LLVM's library stops a program whose kernel failed.
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_trap() -> ! {
    let kernel = CURRENT_KERNEL.lock().map(|k| k.clone()).unwrap_or_default();
    eprintln!(
        "rustomp virtual GPU: kernel {kernel}: device trap in team {} thread {}",
        CURRENT_TEAM.load(Ordering::Relaxed),
        devicertl::arch::thread_id_in_block()
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
    let entry = launch.thread_entry;
    let context = Context(launch.context);
    for block in 0..launch.blocks {
        CURRENT_TEAM.store(block, Ordering::Relaxed);
        devicertl::arch::launch_team(
            block,
            launch.blocks,
            launch.threads,
            launch.warp,
            launch.stack_bytes as usize,
            move || {
                let context = context;
                // SAFETY: the launch's contract.
                unsafe { entry(context.0) }
            },
        );
    }
    drop(watchdog);
    Ok(())
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
