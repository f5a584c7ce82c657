//! Per-thread private memory, as a GPU thread's `.local` / scratch memory: a pointer into it
//! means the *reading* thread's own memory at that address, so another thread must never read
//! through it. Tests allocate the variables a compiler would keep private here and check every
//! pointer a runtime hands across threads with `check_readable`.

use std::boxed::Box;
use std::cell::RefCell;
use std::sync::Mutex;
use std::vec::Vec;

struct Arena {
    start: usize,
    end: usize,
    owner: std::thread::ThreadId,
}

static ARENAS: Mutex<Vec<Arena>> = Mutex::new(Vec::new());

std::thread_local! {
    static BLOCKS: RefCell<Vec<Box<[u128]>>> = const { RefCell::new(Vec::new()) };
}

/// `bytes` of zeroed private memory of the calling thread, 16-byte aligned, valid until the
/// thread leaves the emulated kernel.
pub fn alloc(bytes: usize) -> *mut u8 {
    let block: Box<[u128]> = std::vec![0u128; bytes.div_ceil(16).max(1)].into_boxed_slice();
    let start = block.as_ptr() as usize;
    let ptr = block.as_ptr() as *mut u8;
    ARENAS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Arena {
            start,
            end: start + block.len() * 16,
            owner: std::thread::current().id(),
        });
    BLOCKS.with(|b| b.borrow_mut().push(block));
    ptr
}

/// Panics when `ptr` points into another thread's private memory: on a GPU that read would
/// see the reader's own memory, not the value the other thread published.
pub fn check_readable(ptr: *const u8) {
    let addr = ptr as usize;
    let me = std::thread::current().id();
    let arenas = ARENAS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(a) = arenas
        .iter()
        .find(|a| a.start <= addr && addr < a.end && a.owner != me)
    {
        panic!(
            "thread {me:?} accessed {addr:#x}, private memory of thread {:?}: on a GPU it \
             would read its own private memory instead",
            a.owner
        );
    }
}

/// The thread leaves the kernel: its private memory goes away.
pub(super) fn release_thread() {
    let me = std::thread::current().id();
    ARENAS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|a| a.owner != me);
    BLOCKS.with(|b| b.borrow_mut().clear());
}
