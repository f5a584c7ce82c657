//! `__kmpc_target_translate_fptr` in host-offload images (`declare target indirect`, issue 25).
//!
//! The pass plugin (`compiler/`) makes device code translate a function pointer before calling
//! through it; in an x86_64 image the translation is a weak reference to
//! `__kmpc_target_translate_fptr`. No process-wide definition could answer it: each device
//! loads its own copy of the image, so the same host function has a different address in each
//! copy, and the copy whose code runs must call its own version (its declare target globals
//! are that device's). So after loading a copy, the plugin points that copy's GOT slots for
//! the symbol at a function of its own, one of [`SLOTS`], which searches the table the front
//! published for that copy (`LoadedImage::set_indirect_table`). Every thread the region starts
//! goes through the same slots. A copy that never references the symbol takes no slot; another
//! libomptarget (LLVM's) leaves the reference unbound, and the compiled code then calls the
//! pointer as it is.

use crate::got;
use core::ffi::c_void;
use rustomp_plugin::layout::IndirectTable;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Arc, Mutex};

/// The symbol the compiled code calls.
pub const SYMBOL: &core::ffi::CStr = c"__kmpc_target_translate_fptr";

/// How many loaded image copies can translate at once (copies × devices of every registered
/// program that calls through function pointers).
pub const SLOTS: usize = 128;

type Translate = extern "C" fn(*mut c_void) -> *mut c_void;

/// Each slot's table: null until published (pointers then come back unchanged).
static TABLES: [AtomicPtr<IndirectTable>; SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];
static TAKEN: [AtomicBool; SLOTS] = [const { AtomicBool::new(false) }; SLOTS];

extern "C" fn translate<const K: usize>(fn_ptr: *mut c_void) -> *mut c_void {
    let table = TABLES[K].load(Ordering::Acquire);
    if table.is_null() {
        return fn_ptr;
    }
    // SAFETY: a published table stays alive until its binding is dropped, which happens only
    // when the image is unloaded and none of its code runs.
    unsafe { &*table }.translate(fn_ptr as u64) as *mut c_void
}

macro_rules! slots {
    ($($k:literal)*) => { [$(translate::<$k> as Translate),*] };
}

static FUNCTIONS: [Translate; SLOTS] = slots!(
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
    64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95
    96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119
    120 121 122 123 124 125 126 127
);

/// One image copy's translation: its slot and the tables it published (kept until the copy is
/// unloaded, so a kernel still reading an older one never reads freed memory).
pub struct Binding {
    slot: usize,
    published: Mutex<Vec<Arc<IndirectTable>>>,
}

impl Binding {
    /// Binds the references to [`SYMBOL`] in the freshly loaded object `handle` to a slot of
    /// its own. `Ok(None)` when the object has none (no call through a function pointer in
    /// its device code, or compiled without the pass); an error when every slot is taken or
    /// the GOT cannot be written.
    ///
    /// # Safety
    /// `handle` is a live `dlopen` handle and no code of the object runs yet.
    pub unsafe fn bind(handle: *mut c_void) -> Result<Option<Binding>, String> {
        let Some(binding) = Binding::claim() else {
            return Err(format!("{SLOTS} image copies that translate function pointers are loaded already (the most at once)"));
        };
        // SAFETY: the caller's contract; the slot's function has the symbol's signature.
        let rebound = unsafe { got::rebind(handle, SYMBOL, FUNCTIONS[binding.slot] as usize) }?;
        Ok((rebound > 0).then_some(binding))
    }

    /// A free slot, taken (released when the binding is dropped).
    fn claim() -> Option<Binding> {
        let slot = (0..SLOTS).find(|&k| !TAKEN[k].swap(true, Ordering::AcqRel))?;
        Some(Binding {
            slot,
            published: Mutex::new(Vec::new()),
        })
    }

    /// Publishes `table` to the copy's code.
    pub fn publish(&self, table: &IndirectTable) {
        // Behind an Arc, the table does not move when `published` grows.
        let table = Arc::new(table.clone());
        let raw = Arc::as_ptr(&table).cast_mut();
        let mut published = self.published.lock().unwrap_or_else(|e| e.into_inner());
        published.push(table);
        TABLES[self.slot].store(raw, Ordering::Release);
    }
}

impl Drop for Binding {
    fn drop(&mut self) {
        TABLES[self.slot].store(std::ptr::null_mut(), Ordering::Release);
        TAKEN[self.slot].store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustomp_abi::FptrMapEntry;

    #[test]
    fn each_slot_searches_its_own_table() {
        let a = Binding::claim().expect("a free slot");
        let b = Binding::claim().expect("another free slot");
        let (fa, fb) = (FUNCTIONS[a.slot], FUNCTIONS[b.slot]);
        let host = 0x1000 as *mut c_void;
        assert_eq!(fa(host), host, "nothing published: unchanged");
        a.publish(&IndirectTable::new(vec![FptrMapEntry {
            host: 0x1000,
            device: 0xa000,
        }]));
        b.publish(&IndirectTable::new(vec![FptrMapEntry {
            host: 0x1000,
            device: 0xb000,
        }]));
        assert_eq!(fa(host) as usize, 0xa000);
        assert_eq!(fb(host) as usize, 0xb000);
        assert_eq!(
            fb(0x2000 as *mut c_void) as usize,
            0x2000,
            "not in the table: unchanged"
        );
        let slot = a.slot;
        drop(a);
        assert_eq!(fa(host), host, "unloaded: unchanged");
        assert!(!TAKEN[slot].load(Ordering::Acquire) || Binding::claim().is_some());
        drop(b);
    }
}
