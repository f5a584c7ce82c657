//! A lock-free device heap for targets whose driver offers none (amdgcn `malloc`/`free`).
//!
//! Blocks come in power-of-two size classes carved from one region by a bump pointer; a freed
//! block goes onto its class's free list and is reused by the next request of that class. Each
//! block starts with a 16-byte header (its class and the free-list link), so the user's memory
//! stays 16-byte aligned and `free` needs no size. Free-list heads carry a tag that changes on
//! every update, so a pop cannot be fooled by a block that left and came back meanwhile (ABA).
//!
//! The logic is independent of where the region lives, so the host tests run it on a `Vec`.
//!
//! Also the runtime's own allocations ([`device_malloc`], [`device_free`]: the platform's
//! `malloc`, which on amdgcn is this heap over a device global, [`device_heap`]). A leaf over
//! `arch`: state, memory and the algorithms all allocate through it.

use crate::arch;
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// `bytes` of device heap memory for the runtime itself, or null.
pub fn device_malloc(bytes: usize) -> *mut u8 {
    // SAFETY: the platform allocator accepts any size and returns null on failure.
    unsafe { arch::malloc(bytes) }
}
/// `bytes` of device heap memory, or a trap after printing `message` when the heap is out:
/// for the runtime's own allocations, which have no way to report failure to the program.
pub fn device_malloc_or_trap(bytes: usize, message: &core::ffi::CStr) -> *mut u8 {
    let ptr = device_malloc(bytes);
    if ptr.is_null() {
        arch::print_message(message);
        arch::trap();
    }
    ptr
}
/// # Safety
/// `ptr` came from `device_malloc` and is not used afterwards.
pub unsafe fn device_free(ptr: *mut u8) {
    // SAFETY: guaranteed by the caller.
    unsafe { arch::free(ptr) }
}

const HEADER: usize = 16;
const MIN_CLASS: u32 = 5; // 32-byte blocks: header + 16 bytes
const CLASSES: usize = 40;

#[repr(C)]
struct Header {
    class: AtomicU32,
    /// Free-list successor: block index + 1 (0 = none), in 16-byte units from the region start.
    next: AtomicU32,
}

pub struct SizeClassHeap {
    used: AtomicUsize,
    /// Per class: `(tag << 32) | (block index + 1)`, 0 in the low half when empty.
    free: [AtomicU64; CLASSES],
}

impl Default for SizeClassHeap {
    fn default() -> Self {
        Self::new()
    }
}

impl SizeClassHeap {
    pub const fn new() -> Self {
        Self {
            used: AtomicUsize::new(0),
            free: [const { AtomicU64::new(0) }; CLASSES],
        }
    }

    /// Bytes of the region handed out by the bump pointer so far (reused blocks not counted).
    pub fn bytes_carved(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    fn class_of(size: usize) -> Option<u32> {
        let block = size.checked_add(HEADER)?.checked_next_power_of_two()?;
        let class = block.trailing_zeros().max(MIN_CLASS);
        ((class as usize) < CLASSES).then_some(class)
    }

    /// # Safety
    /// `region` is the same 16-byte aligned, `len`-byte region on every call on this heap.
    unsafe fn header<'a>(region: *mut u8, unit: u32) -> &'a Header {
        // SAFETY: `unit` indexes a block carved from the region (caller), whose header is
        // only ever accessed through atomics.
        unsafe { &*(region.add(unit as usize * 16) as *const Header) }
    }

    /// `size` bytes, 16-byte aligned, or null when the region is exhausted.
    ///
    /// # Safety
    /// As `header`: one region per heap, 16-byte aligned.
    pub unsafe fn alloc(&self, region: *mut u8, len: usize, size: usize) -> *mut u8 {
        let Some(class) = Self::class_of(size) else {
            return core::ptr::null_mut();
        };
        let list = &self.free[class as usize];
        let mut head = list.load(Ordering::Acquire);
        let unit = loop {
            let index = head as u32;
            if index == 0 {
                break None;
            }
            // SAFETY: free-list entries are carved blocks of this region.
            let next = unsafe { Self::header(region, index - 1) }
                .next
                .load(Ordering::Relaxed);
            let new_head = ((head >> 32).wrapping_add(1) << 32) | next as u64;
            match list.compare_exchange_weak(head, new_head, Ordering::Acquire, Ordering::Acquire) {
                Ok(_) => break Some(index - 1),
                Err(seen) => head = seen,
            }
        };
        let unit = match unit {
            Some(unit) => unit,
            None => {
                let bytes = 1usize << class;
                let start = self.used.fetch_add(bytes, Ordering::Relaxed);
                if start.checked_add(bytes).is_none_or(|end| end > len)
                    || start / 16 >= u32::MAX as usize
                {
                    return core::ptr::null_mut();
                }
                let unit = (start / 16) as u32;
                // SAFETY: the block was just carved from the region for this call alone.
                unsafe { Self::header(region, unit) }
                    .class
                    .store(class, Ordering::Relaxed);
                unit
            }
        };
        // SAFETY: the block holds `HEADER + size` bytes inside the region.
        unsafe { region.add(unit as usize * 16 + HEADER) }
    }

    /// Returns a block from `alloc` to its class's free list.
    ///
    /// # Safety
    /// As `alloc`; `ptr` came from `alloc` on this heap and region and is not used afterwards.
    pub unsafe fn free(&self, region: *mut u8, ptr: *mut u8) {
        if ptr.is_null() {
            return;
        }
        let unit = ((ptr as usize - region as usize - HEADER) / 16) as u32;
        // SAFETY: `ptr` came from `alloc`, so its header precedes it.
        let header = unsafe { Self::header(region, unit) };
        let class = header.class.load(Ordering::Relaxed) as usize;
        let list = &self.free[class.min(CLASSES - 1)];
        let mut head = list.load(Ordering::Relaxed);
        loop {
            header.next.store(head as u32, Ordering::Relaxed);
            let new_head = ((head >> 32).wrapping_add(1) << 32) | (unit as u64 + 1);
            match list.compare_exchange_weak(head, new_head, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => return,
                Err(seen) => head = seen,
            }
        }
    }
}

/// amdgcn has no driver-provided heap: `crate::heap` over a device global.
#[cfg(target_arch = "amdgpu")]
pub mod device_heap {
    use super::SizeClassHeap;
    use core::cell::UnsafeCell;

    const HEAP_BYTES: usize = 64 << 20;

    #[repr(C, align(16))]
    struct Region(UnsafeCell<[u8; HEAP_BYTES]>);
    // SAFETY: the heap hands out disjoint blocks of the region (atomic bump pointer and free lists).
    unsafe impl Sync for Region {}
    // Named, not internal: runtime state must have one definition per image (see
    // build-tools/src/devicertl.rs), whatever copies of the code clang links.
    #[unsafe(no_mangle)]
    #[allow(non_upper_case_globals, reason = "a C symbol name, one per image")]
    static __rustomp_heap_region: Region = Region(UnsafeCell::new([0; HEAP_BYTES]));
    #[unsafe(no_mangle)]
    #[allow(non_upper_case_globals, reason = "a C symbol name, one per image")]
    static __rustomp_heap: SizeClassHeap = SizeClassHeap::new();

    /// # Safety
    /// None beyond C's: the result is null or `size` bytes nobody else holds.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn malloc(size: usize) -> *mut u8 {
        // SAFETY: always the same 16-byte aligned region.
        unsafe { __rustomp_heap.alloc(__rustomp_heap_region.0.get() as *mut u8, HEAP_BYTES, size) }
    }
    /// # Safety
    /// As C's: `ptr` is null or came from `malloc` and is not used afterwards.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn free(ptr: *mut u8) {
        // SAFETY: as above; guaranteed by the caller.
        unsafe { __rustomp_heap.free(__rustomp_heap_region.0.get() as *mut u8, ptr) }
    }
}
