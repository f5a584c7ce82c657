//! The device heap under concurrent use: blocks never overlap, keep their contents, and freed
//! blocks are reused instead of carving new memory.

use devicertl::heap::SizeClassHeap;
use std::sync::atomic::{AtomicUsize, Ordering};

#[repr(C, align(16))]
struct Chunk([u8; 16]);

struct Region(Vec<Chunk>);
impl Region {
    fn new(bytes: usize) -> Self {
        Region((0..bytes / 16).map(|_| Chunk([0; 16])).collect())
    }
    fn base(&self) -> usize {
        self.0.as_ptr() as usize
    }
    fn len(&self) -> usize {
        self.0.len() * 16
    }
}

#[test]
fn blocks_are_aligned_disjoint_and_reused() {
    let region = Region::new(1 << 20);
    let heap = SizeClassHeap::new();
    let base = region.base() as *mut u8;
    // SAFETY: one region for this heap, 16-byte aligned.
    unsafe {
        let a = heap.alloc(base, region.len(), 10);
        let b = heap.alloc(base, region.len(), 100);
        assert_eq!(a as usize % 16, 0);
        assert_eq!(b as usize % 16, 0);
        assert!(a as usize + 10 <= b as usize || b as usize + 100 <= a as usize);
        let carved = heap.bytes_carved();
        heap.free(base, a);
        assert_eq!(
            heap.alloc(base, region.len(), 12),
            a,
            "same class: the freed block comes back"
        );
        assert_eq!(heap.bytes_carved(), carved);
        // Exhaustion gives null, not memory outside the region.
        assert!(heap.alloc(base, region.len(), 2 << 20).is_null());
        heap.free(base, core::ptr::null_mut());
    }
}

#[test]
fn concurrent_alloc_free_keeps_contents() {
    let region = Region::new(16 << 20);
    let heap = SizeClassHeap::new();
    let (base, len) = (region.base(), region.len());
    let failures = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let heap = &heap;
            let failures = &failures;
            s.spawn(move || {
                let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ (t << 32);
                let mut live: Vec<(*mut u8, usize, u8)> = Vec::new();
                for round in 0..20_000u64 {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    if live.len() < 32 && (!state.is_multiple_of(3) || live.is_empty()) {
                        let size = 1 + (state >> 8) as usize % 700;
                        let fill = (round as u8) ^ (t as u8);
                        // SAFETY: one region for this heap.
                        let p = unsafe { heap.alloc(base as *mut u8, len, size) };
                        assert!(!p.is_null());
                        // SAFETY: `p` holds `size` bytes for this thread alone.
                        unsafe { core::ptr::write_bytes(p, fill, size) };
                        live.push((p, size, fill));
                    } else {
                        let (p, size, fill) = live.swap_remove((state >> 16) as usize % live.len());
                        // SAFETY: still ours until freed below.
                        let intact = unsafe { core::slice::from_raw_parts(p, size) }
                            .iter()
                            .all(|&b| b == fill);
                        if !intact {
                            failures.fetch_add(1, Ordering::Relaxed);
                        }
                        // SAFETY: from `alloc` on this heap and region.
                        unsafe { heap.free(base as *mut u8, p) };
                    }
                }
                for (p, _, _) in live {
                    // SAFETY: as above.
                    unsafe { heap.free(base as *mut u8, p) };
                }
            });
        }
    });
    assert_eq!(
        failures.load(Ordering::Relaxed),
        0,
        "a block was overwritten by another allocation"
    );
    // 8 threads × at most 32 live blocks of at most 1 KiB: reuse keeps the carved total small.
    assert!(
        heap.bytes_carved() < 1 << 20,
        "carved {} bytes: freed blocks were not reused",
        heap.bytes_carved()
    );
}
