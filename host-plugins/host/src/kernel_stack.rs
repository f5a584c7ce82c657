//! The stack a kernel runs on. The CPU plugin calls a kernel on the launching host thread, but
//! not on that thread's own stack: a kernel's locals (a Fortran kernel's local arrays can be
//! tens of MiB) get a stack of their own, as a GPU thread has its own, sized by
//! `LIBOMPTARGET_STACK_SIZE` (bytes, LLVM's setting of a device thread's stack) or
//! `OMP_STACKSIZE` (OpenMP's, with its `B`/`K`/`M`/`G` suffixes, K when none), never smaller
//! than the thread's own limit (`RLIMIT_STACK`). Below the stack lies a large inaccessible
//! region, so a frame that runs past the end faults there even when it skips a page, and the
//! fault becomes a message naming the device, the kernel and the size, then an abort, instead
//! of a bare SIGSEGV.
//!
//! Each launching thread keeps its stack for later kernels (the pages a kernel touched stay
//! committed, as a thread's own stack's do).

use crate::stderr_line::Line;
use core::cell::RefCell;
use core::ffi::c_void;
use core::sync::atomic::{AtomicUsize, Ordering};
use corosensei::stack::{Stack, StackPointer};
use std::sync::Once;

/// Inaccessible bytes below every kernel stack: a frame larger than this that skips past it
/// can still land in other memory, but no real kernel's single frame is that large.
const GUARD_BYTES: usize = 256 << 20;
/// When the thread's own limit is unknown or unlimited.
const DEFAULT_STACK_BYTES: usize = 8 << 20;
const MIN_STACK_BYTES: usize = 64 << 10;

/// `OMP_STACKSIZE`'s syntax: a number and an optional unit (B, K, M, G; K when none).
pub fn parse_omp_stacksize(text: &str) -> Option<usize> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: usize = number.parse().ok()?;
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "B" => 0,
        "" | "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => return None,
    };
    number.checked_mul(1 << shift)
}

/// The size of a kernel's stack, from the environment (read once).
pub fn stack_bytes() -> usize {
    static BYTES: AtomicUsize = AtomicUsize::new(0);
    let known = BYTES.load(Ordering::Relaxed);
    if known != 0 {
        return known;
    }
    let from_env = |name: &str, parse: fn(&str) -> Option<usize>| {
        std::env::var(name).ok().as_deref().and_then(parse)
    };
    let bytes = [
        from_env("LIBOMPTARGET_STACK_SIZE", |t| t.trim().parse().ok()),
        from_env("OMP_STACKSIZE", parse_omp_stacksize),
        Some(thread_limit()),
    ]
    .into_iter()
    .flatten()
    .max()
    .unwrap_or(DEFAULT_STACK_BYTES)
    .max(MIN_STACK_BYTES);
    let bytes = bytes.next_multiple_of(page());
    BYTES.store(bytes, Ordering::Relaxed);
    bytes
}

fn thread_limit() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut limit) } == 0;
    if ok && limit.rlim_cur != libc::RLIM_INFINITY && limit.rlim_cur > 0 {
        usize::try_from(limit.rlim_cur).unwrap_or(DEFAULT_STACK_BYTES)
    } else {
        DEFAULT_STACK_BYTES
    }
}

fn page() -> usize {
    // SAFETY: sysconf takes a constant.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}

/// One mapping: `GUARD_BYTES` with no access, then the stack.
struct KernelStack {
    mapping: *mut c_void,
    mapped: usize,
    bytes: usize,
}

impl KernelStack {
    fn new(bytes: usize) -> Option<KernelStack> {
        let mapped = GUARD_BYTES + bytes;
        // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
        let mapping = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                mapped,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if mapping == libc::MAP_FAILED {
            return None;
        }
        let stack = KernelStack {
            mapping,
            mapped,
            bytes,
        };
        // SAFETY: the top `bytes` of the mapping just made.
        let usable = unsafe {
            libc::mprotect(
                stack.limit().get() as *mut c_void,
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        (usable == 0).then_some(stack)
    }

    fn guard(&self) -> (usize, usize) {
        let low = self.mapping as usize;
        (low, low + GUARD_BYTES)
    }
}

impl Drop for KernelStack {
    fn drop(&mut self) {
        // SAFETY: the mapping `new` made, no longer in use (no kernel runs on it).
        unsafe { libc::munmap(self.mapping, self.mapped) };
    }
}

// SAFETY: `base` is the mapping's end and `limit` the start of its accessible part, both page
// (so 16-byte) aligned; below `limit` lie `GUARD_BYTES` with no access.
unsafe impl Stack for KernelStack {
    fn base(&self) -> StackPointer {
        StackPointer::new(self.mapping as usize + self.mapped).expect("a mapping is not at 0")
    }
    fn limit(&self) -> StackPointer {
        StackPointer::new(self.mapping as usize + GUARD_BYTES).expect("a mapping is not at 0")
    }
}

/// Who runs on a guarded stack now: its guard range, device and kernel, for the fault handler.
/// A fixed table of slots (lock-free: the handler reads it), one per launching thread that
/// holds a stack; more threads than slots run without the named message (the fault is then a
/// plain SIGSEGV, as without this module).
const SLOTS: usize = 256;
struct Slot {
    guard_low: AtomicUsize,
    guard_high: AtomicUsize,
    device: AtomicUsize,
    kernel: AtomicUsize,
    bytes: AtomicUsize,
}
#[allow(clippy::declare_interior_mutable_const)]
const FREE_SLOT: Slot = Slot {
    guard_low: AtomicUsize::new(0),
    guard_high: AtomicUsize::new(0),
    device: AtomicUsize::new(0),
    kernel: AtomicUsize::new(0),
    bytes: AtomicUsize::new(0),
};
static RUNNING: [Slot; SLOTS] = [FREE_SLOT; SLOTS];

struct ThreadStack {
    stack: KernelStack,
    slot: Option<usize>,
}

impl Drop for ThreadStack {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            RUNNING[slot].guard_high.store(0, Ordering::Release);
            RUNNING[slot].guard_low.store(0, Ordering::Release);
        }
    }
}

thread_local! {
    static THREAD_STACK: RefCell<Option<ThreadStack>> = const { RefCell::new(None) };
}

fn claim_slot(guard: (usize, usize)) -> Option<usize> {
    (0..SLOTS).find(|&i| {
        RUNNING[i]
            .guard_low
            .compare_exchange(0, guard.0, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
            && {
                RUNNING[i].guard_high.store(guard.1, Ordering::Release);
                true
            }
    })
}

/// Runs `kernel_call` on the calling thread's kernel stack (made at its first kernel). When no
/// stack can be made, it runs on the thread's own stack, as it did before this module.
pub fn run_on_kernel_stack(device: usize, kernel: *const c_void, kernel_call: impl FnOnce()) {
    install_fault_handler();
    THREAD_STACK.with(|cell| {
        let mut held = cell.borrow_mut();
        if held.is_none() {
            if let Some(stack) = KernelStack::new(stack_bytes()) {
                ensure_signal_stack();
                let slot = claim_slot(stack.guard());
                *held = Some(ThreadStack { stack, slot });
            }
        }
        let Some(thread_stack) = held.as_mut() else {
            drop(held);
            kernel_call();
            return;
        };
        if let Some(slot) = thread_stack.slot {
            RUNNING[slot].device.store(device, Ordering::Relaxed);
            RUNNING[slot]
                .kernel
                .store(kernel as usize, Ordering::Relaxed);
            RUNNING[slot]
                .bytes
                .store(thread_stack.stack.bytes, Ordering::Relaxed);
        }
        // A kernel that launches another (a host fallback inside a region) runs the inner one
        // on the same thread: it stays on the stack it is on.
        let stack = &mut thread_stack.stack;
        let marker = 0u8;
        let here = core::hint::black_box(&marker) as *const u8 as usize;
        let on_it = (stack.limit().get()..stack.base().get()).contains(&here);
        if on_it {
            drop(held);
            kernel_call();
            return;
        }
        // SAFETY: the stack stays borrowed (and mapped) until `on_stack` returns.
        let stack: &'static mut KernelStack = unsafe { &mut *(stack as *mut KernelStack) };
        drop(held);
        corosensei::on_stack(stack, kernel_call);
    });
}

/// A thread needs an alternate signal stack for the fault handler to run when its stack is
/// what overflowed. Rust's threads have one; others (the program's own) get one here.
fn ensure_signal_stack() {
    // SAFETY: stack_t is plain data; all zeros is a valid value.
    let mut current: libc::stack_t = unsafe { core::mem::zeroed() };
    // SAFETY: querying only.
    unsafe { libc::sigaltstack(core::ptr::null(), &mut current) };
    if current.ss_flags & libc::SS_DISABLE == 0 {
        return;
    }
    const SIGNAL_STACK_BYTES: usize = 64 << 10;
    // Kept for the thread's lifetime (a few threads launch kernels): never freed.
    let memory = Box::leak(vec![0u8; SIGNAL_STACK_BYTES].into_boxed_slice());
    let stack = libc::stack_t {
        ss_sp: memory.as_mut_ptr().cast(),
        ss_flags: 0,
        ss_size: SIGNAL_STACK_BYTES,
    };
    // SAFETY: `memory` lives forever.
    unsafe { libc::sigaltstack(&stack, core::ptr::null_mut()) };
}

static PREVIOUS_ACTION: AtomicUsize = AtomicUsize::new(0);

fn install_fault_handler() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: a sigaction of a handler that only reads atomics, writes to stderr and
        // aborts, or hands the signal to the previous handler.
        unsafe {
            let mut action: libc::sigaction = core::mem::zeroed();
            action.sa_sigaction =
                on_fault as extern "C" fn(i32, *mut libc::siginfo_t, *mut c_void) as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            let previous = Box::leak(Box::new(core::mem::zeroed::<libc::sigaction>()));
            if libc::sigaction(libc::SIGSEGV, &action, previous) == 0 {
                PREVIOUS_ACTION.store(previous as *mut _ as usize, Ordering::Release);
            }
        }
    });
}

extern "C" fn on_fault(signal: i32, info: *mut libc::siginfo_t, context: *mut c_void) {
    // SAFETY: the kernel passes a valid siginfo for SIGSEGV.
    let address = unsafe { (*info).si_addr() } as usize;
    for slot in &RUNNING {
        let (low, high) = (
            slot.guard_low.load(Ordering::Acquire),
            slot.guard_high.load(Ordering::Acquire),
        );
        if low != 0 && (low..high).contains(&address) {
            report_overflow(slot);
        }
    }
    // Not ours: the previous handler, or the default action.
    let previous = PREVIOUS_ACTION.load(Ordering::Acquire) as *const libc::sigaction;
    // SAFETY: `previous` is the action saved at installation (or null).
    unsafe {
        if let Some(previous) = previous.as_ref() {
            let handler = previous.sa_sigaction;
            if handler != libc::SIG_DFL && handler != libc::SIG_IGN {
                if previous.sa_flags & libc::SA_SIGINFO != 0 {
                    let f: extern "C" fn(i32, *mut libc::siginfo_t, *mut c_void) =
                        core::mem::transmute(handler);
                    f(signal, info, context);
                } else {
                    let f: extern "C" fn(i32) = core::mem::transmute(handler);
                    f(signal);
                }
                return;
            }
        }
        // Back to the default action; returning re-runs the faulting access, which ends the
        // process with SIGSEGV as it would have.
        libc::signal(libc::SIGSEGV, libc::SIG_DFL);
    }
}

/// The message, with no allocation (a signal handler), then an abort.
fn report_overflow(slot: &Slot) -> ! {
    use std::fmt::Write;
    let kernel = slot.kernel.load(Ordering::Relaxed);
    // SAFETY: Dl_info is plain data; all zeros is a valid value.
    let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
    // SAFETY: dladdr only reads the loader's tables (the process is about to abort).
    let found = unsafe { libc::dladdr(kernel as *const c_void, &mut info) } != 0;
    let name = if found && !info.dli_sname.is_null() {
        // SAFETY: the loader's NUL-terminated symbol name.
        unsafe { core::ffi::CStr::from_ptr(info.dli_sname) }
            .to_str()
            .ok()
    } else {
        None
    };
    let mut line = Line::<512>::new();
    let _ = write!(
        line,
        "rustomp host plugin: device {}: kernel ",
        slot.device.load(Ordering::Relaxed)
    );
    let _ = match name {
        Some(name) => line.write_str(name),
        None => write!(line, "at {kernel:#x}"),
    };
    let _ = writeln!(
        line,
        " overflowed its stack of {} bytes; set OMP_STACKSIZE or LIBOMPTARGET_STACK_SIZE to more",
        slot.bytes.load(Ordering::Relaxed)
    );
    line.write_to_stderr();
    // SAFETY: abort(3) is async-signal-safe.
    unsafe { libc::abort() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn omp_stacksize_units() {
        assert_eq!(parse_omp_stacksize("64"), Some(64 << 10));
        assert_eq!(parse_omp_stacksize("64K"), Some(64 << 10));
        assert_eq!(parse_omp_stacksize(" 32m "), Some(32 << 20));
        assert_eq!(parse_omp_stacksize("1G"), Some(1 << 30));
        assert_eq!(parse_omp_stacksize("4096B"), Some(4096));
        assert_eq!(parse_omp_stacksize("lots"), None);
        assert_eq!(parse_omp_stacksize("12X"), None);
    }

    #[test]
    fn a_kernel_runs_on_its_own_stack_and_a_nested_one_stays_there() {
        let (outer, inner) = (AtomicUsize::new(0), AtomicUsize::new(0));
        run_on_kernel_stack(0, core::ptr::null(), || {
            let local = [1u8; 64];
            outer.store(
                std::hint::black_box(&local) as *const _ as usize,
                Ordering::Relaxed,
            );
            run_on_kernel_stack(0, core::ptr::null(), || {
                let local = [2u8; 64];
                inner.store(
                    std::hint::black_box(&local) as *const _ as usize,
                    Ordering::Relaxed,
                );
            });
        });
        let (outer, inner) = (outer.load(Ordering::Relaxed), inner.load(Ordering::Relaxed));
        THREAD_STACK.with(|s| {
            let held = s.borrow();
            let stack = &held.as_ref().unwrap().stack;
            let range = stack.limit().get()..stack.base().get();
            assert!(range.contains(&outer) && range.contains(&inner));
            assert!(
                inner < outer,
                "the nested call continued below the outer one"
            );
            assert!(stack.bytes >= stack_bytes());
        });
    }
}
