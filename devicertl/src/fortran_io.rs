//! Fortran `print` and `write` in device code: the entry points of flang's I/O runtime
//! (`_FortranAio*`) that list-directed and formatted output to an external unit calls.
//!
//! The device does not format. A statement's items are recorded in order in a record on the
//! device heap (the cookie flang hands back to each call) and sent to the host in chunks through
//! `__llvm_omp_host_call`, to the statement server whose address the plugin publishes in
//! `__rustomp_fortran_output` (layout: `rustomp_abi::fortran_output`). At the last chunk the host
//! replays the statement into the program's own flang runtime. So the text is flang's to the
//! byte, on the program's unit: it comes in program order with what the host prints, and one
//! thread's line is never split by another's.
//!
//! Recorded: integers of kind 1 to 8, reals and complexes of kind 4 and 8, logicals, characters,
//! and arrays of them (a descriptor, walked in array element order). Anything else (a derived
//! type, kind 10 or 16) is sent as unsupported, and the host names it. Other I/O entry points
//! (input, internal files, `OPEN`, namelists, ...) stay undefined, so a device link that needs
//! one fails naming it.

use crate::arch;
use crate::env::DeviceGlobal;
use crate::heap;
use crate::host_call::__llvm_omp_host_call;
use core::ffi::{c_char, c_void};
use core::sync::atomic::{AtomicU32, Ordering};
use rustomp_abi::fortran_output::{
    flags, item, kind, ChunkHeader, CHUNK_PAYLOAD_BYTES, IOSTAT_NOT_SHOWN,
};

/// The host address of the plugin's statement server, or 0 when the plugin offers none.
#[unsafe(no_mangle)]
#[used]
#[allow(non_upper_case_globals, reason = "the symbol name the plugins look up")]
pub static __rustomp_fortran_output: DeviceGlobal<u64> = DeviceGlobal::new(0);

/// Bytes of a statement's record: small, so that many threads can each have one open at once
/// (CUDA's device `malloc` heap is 8 MiB by default; with the heap's own header the record fills
/// a 512-byte block of amdgcn's). A longer statement is sent in several chunks.
const RECORD_BYTES: usize = 496;
/// Stream bytes a record holds before it sends them.
const STREAM_BYTES: usize = RECORD_BYTES - 8 - core::mem::size_of::<ChunkHeader>();
const _: () = assert!(STREAM_BYTES <= CHUNK_PAYLOAD_BYTES);

/// Set once a statement was dropped and said so: the message is printed once per image, not
/// once per statement of every thread.
#[unsafe(no_mangle)]
#[allow(
    non_upper_case_globals,
    reason = "runtime state has a C name, one per image"
)]
pub static __rustomp_fortran_output_dropped: AtomicU32 = AtomicU32::new(0);

/// Prints `message` unless a dropped statement was reported before.
fn report_dropped_once(message: &core::ffi::CStr) {
    if __rustomp_fortran_output_dropped.swap(1, Ordering::Relaxed) == 0 {
        arch::print_message(message);
    }
}

/// One open statement: bookkeeping, then the chunk being filled with its header in front of it
/// (the two are sent as one block).
#[repr(C, align(8))]
pub struct Statement {
    /// Bytes of `stream` in use.
    used: u32,
    /// [`SENT_ONE`], [`FAILED`].
    state: u32,
    header: ChunkHeader,
    stream: [u8; STREAM_BYTES],
}
const _: () = assert!(core::mem::size_of::<Statement>() == RECORD_BYTES);
/// A chunk of the statement has gone: the next is not its first.
const SENT_ONE: u32 = 1;
/// A chunk could not be sent: the rest is dropped and the statement fails.
const FAILED: u32 = 2;

/// A record as flang's cookie: null when the device heap was out (every call then does nothing,
/// and the statement's end reports it).
pub type Cookie = *mut Statement;

impl Statement {
    fn push(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.used as usize == STREAM_BYTES {
                self.send(false);
            }
            let used = self.used as usize;
            let take = (STREAM_BYTES - used).min(bytes.len());
            self.stream[used..used + take].copy_from_slice(&bytes[..take]);
            self.used += take as u32;
            bytes = &bytes[take..];
        }
    }

    /// Bytes read from device memory.
    ///
    /// # Safety
    /// `data` is readable for `len` bytes.
    unsafe fn push_raw(&mut self, data: *const u8, len: usize) {
        if len > 0 {
            // SAFETY: guaranteed by the caller.
            self.push(unsafe { core::slice::from_raw_parts(data, len) });
        }
    }

    fn push_u32(&mut self, value: usize) {
        self.push(&(value.min(u32::MAX as usize) as u32).to_le_bytes());
    }

    /// Sends the filled part of the stream; returns the host's answer (the `IOSTAT` at the last
    /// chunk).
    fn send(&mut self, last: bool) -> i32 {
        let server = __rustomp_fortran_output.get();
        if server == 0 && self.state & FAILED == 0 {
            report_dropped_once(c"rustomp device runtime: Fortran output from the device needs rustomp's plugin to show it (no statement server); statements are dropped\n");
            self.state |= FAILED;
        }
        if self.state & FAILED != 0 {
            self.used = 0;
            return IOSTAT_NOT_SHOWN;
        }
        let first = if self.state & SENT_ONE == 0 {
            flags::FIRST
        } else {
            0
        };
        self.header = ChunkHeader {
            statement: self as *mut Statement as u64,
            flags: first | if last { flags::LAST } else { 0 },
            bytes: self.used,
        };
        self.state |= SENT_ONE;
        let size = core::mem::size_of::<ChunkHeader>() + self.used as usize;
        // The header and the stream are contiguous (repr(C), no padding between them): one
        // block from the header on, addressed from the whole record.
        let block = (self as *mut Statement as *mut u8)
            .wrapping_add(core::mem::offset_of!(Statement, header));
        // SAFETY: `size` bytes from the header lie in the record; the server is the plugin's
        // `u64 f(void *)`.
        let answer = unsafe {
            __llvm_omp_host_call(server as usize as *mut c_void, block as *mut c_void, size)
        };
        self.used = 0;
        answer as i32
    }
}

/// Opens a statement's record.
///
/// # Safety
/// `file` is null or a NUL-terminated string; `format` is readable text or a valid descriptor
/// of characters.
unsafe fn begin(form: u8, unit: i32, file: *const c_char, line: i32, format: Format) -> Cookie {
    let record = heap::device_malloc(core::mem::size_of::<Statement>()) as Cookie;
    if record.is_null() {
        return record;
    }
    // SAFETY: fresh memory of a Statement's size and alignment (the heap aligns to 16); all
    // zero is an empty record (written in place, not built on the stack and copied).
    let statement = unsafe {
        core::ptr::write_bytes(record, 0, 1);
        &mut *record
    };
    statement.push(&[form]);
    statement.push(&unit.to_le_bytes());
    statement.push(&line.to_le_bytes());
    // The file name is device memory the host cannot read: its text goes along.
    let file_len = if file.is_null() {
        0
    } else {
        // SAFETY: a NUL-terminated string (the caller's guarantee), at most 255 bytes used.
        (0..255)
            .find(|&i| unsafe { *file.add(i) } == 0)
            .unwrap_or(255)
    };
    statement.push_u32(file_len);
    // SAFETY: `file_len` bytes before the NUL (or the first 255).
    unsafe { statement.push_raw(file as *const u8, file_len) };
    match format {
        Format::Text(text, len) => {
            statement.push_u32(len);
            // SAFETY: guaranteed by the caller.
            unsafe { statement.push_raw(text as *const u8, len) };
        }
        Format::Descriptor(d) => {
            // A character variable or array: its elements' text, one after the other.
            // SAFETY: guaranteed by the caller: a valid descriptor of readable characters.
            let array = unsafe { Array::read(d) };
            statement.push_u32(array.elements() * array.element_bytes);
            array.each(|at| {
                // SAFETY: an element of the array, `element_bytes` long.
                unsafe { statement.push_raw(at, array.element_bytes) }
            });
        }
    }
    record
}

/// Where a formatted statement's format is.
enum Format {
    /// Text and length (none for list-directed output: `Text(null, 0)`).
    Text(*const c_char, usize),
    /// A character variable or array's descriptor.
    Descriptor(*const Descriptor),
}

/// Runs `record` on an open statement's record (nothing for a null cookie); always "no error
/// yet": errors come at the statement's end, from the host.
///
/// Only the entry points call it, with their caller's cookie: null or a record `begin` made that
/// the statement's end has not freed (flang passes each back only within its statement, on the
/// thread that began it).
fn with(cookie: Cookie, record: impl FnOnce(&mut Statement)) -> bool {
    // SAFETY: see above; the entry points' callers guarantee it.
    if let Some(statement) = unsafe { cookie.as_mut() } {
        record(statement);
    }
    true
}

/// One scalar item, recorded as an array element of its type is.
fn scalar<T: Copy>(cookie: Cookie, element: Element, value: T) -> bool {
    with(cookie, |s| {
        // SAFETY: `value` is a `T`, `size_of::<T>()` bytes of the element's type.
        unsafe {
            push_element(
                s,
                element,
                (&raw const value) as *const u8,
                core::mem::size_of::<T>(),
            )
        }
    })
}

/// # Safety
/// `file` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _FortranAioBeginExternalListOutput(
    unit: i32,
    file: *const c_char,
    line: i32,
) -> Cookie {
    // SAFETY: forwarded; no format.
    unsafe {
        begin(
            kind::LIST_DIRECTED,
            unit,
            file,
            line,
            Format::Text(core::ptr::null(), 0),
        )
    }
}

/// # Safety
/// `format` is readable for `format_len` bytes; `file` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _FortranAioBeginExternalFormattedOutput(
    format: *const c_char,
    format_len: usize,
    format_descriptor: *const Descriptor,
    unit: i32,
    file: *const c_char,
    line: i32,
) -> Cookie {
    // As flang's runtime: the descriptor, when there is one, is the format.
    let format = if format_descriptor.is_null() {
        Format::Text(format, format_len)
    } else {
        Format::Descriptor(format_descriptor)
    };
    // SAFETY: forwarded.
    unsafe { begin(kind::FORMATTED, unit, file, line, format) }
}

/// `IOSTAT=`, `ERR=`, ... on the statement: the host's statement gets the same handlers, so an
/// error there comes back as the statement's `IOSTAT` instead of ending the program.
/// # Safety
/// `cookie` came from a `Begin` call of this thread's open statement (or is null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _FortranAioEnableHandlers(
    cookie: Cookie,
    has_iostat: bool,
    has_err: bool,
    has_end: bool,
    has_eor: bool,
    has_iomsg: bool,
) {
    let bits = has_iostat as u8
        | (has_err as u8) << 1
        | (has_end as u8) << 2
        | (has_eor as u8) << 3
        | (has_iomsg as u8) << 4;
    with(cookie, |s| s.push(&[item::HANDLERS, bits]));
}

/// # Safety
/// `cookie` came from a `Begin` call of this thread's open statement (or is null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _FortranAioOutputInteger8(cookie: Cookie, value: i8) -> bool {
    scalar(cookie, Element::Integer(item::INTEGER1), value)
}
/// # Safety
/// `cookie` came from a `Begin` call of this thread's open statement (or is null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _FortranAioOutputInteger16(cookie: Cookie, value: i16) -> bool {
    scalar(cookie, Element::Integer(item::INTEGER2), value)
}
/// # Safety
/// `cookie` came from a `Begin` call of this thread's open statement (or is null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _FortranAioOutputInteger32(cookie: Cookie, value: i32) -> bool {
    scalar(cookie, Element::Integer(item::INTEGER4), value)
}
/// # Safety
/// `cookie` came from a `Begin` call of this thread's open statement (or is null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _FortranAioOutputInteger64(cookie: Cookie, value: i64) -> bool {
    scalar(cookie, Element::Integer(item::INTEGER8), value)
}
/// # Safety
/// `cookie` came from a `Begin` call of this thread's open statement (or is null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _FortranAioOutputReal32(cookie: Cookie, value: f32) -> bool {
    scalar(cookie, Element::Real4, value)
}
/// # Safety
/// `cookie` came from a `Begin` call of this thread's open statement (or is null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _FortranAioOutputReal64(cookie: Cookie, value: f64) -> bool {
    scalar(cookie, Element::Real8, value)
}
/// # Safety
/// `cookie` came from a `Begin` call of this thread's open statement (or is null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _FortranAioOutputComplex32(cookie: Cookie, re: f32, im: f32) -> bool {
    scalar(cookie, Element::Complex4, [re, im])
}
/// # Safety
/// `cookie` came from a `Begin` call of this thread's open statement (or is null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _FortranAioOutputComplex64(cookie: Cookie, re: f64, im: f64) -> bool {
    scalar(cookie, Element::Complex8, [re, im])
}
/// # Safety
/// `cookie` came from a `Begin` call of this thread's open statement (or is null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _FortranAioOutputLogical(cookie: Cookie, value: bool) -> bool {
    scalar(cookie, Element::Logical, value as u8)
}

/// # Safety
/// `text` is readable for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _FortranAioOutputAscii(
    cookie: Cookie,
    text: *const c_char,
    len: usize,
) -> bool {
    // SAFETY: guaranteed by the caller.
    with(cookie, |s| unsafe {
        push_characters(s, 1, text as *const u8, len)
    })
}

/// # Safety
/// `text` is readable for `len * kind` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _FortranAioOutputCharacter(
    cookie: Cookie,
    text: *const c_char,
    len: usize,
    char_kind: i32,
) -> bool {
    // SAFETY: guaranteed by the caller.
    with(cookie, |s| unsafe {
        push_characters(s, char_kind.clamp(1, 4) as u8, text as *const u8, len)
    })
}

/// # Safety
/// `text` is readable for `len * char_kind` bytes.
unsafe fn push_characters(s: &mut Statement, char_kind: u8, text: *const u8, len: usize) {
    if char_kind == 1 {
        s.push(&[item::ASCII]);
    } else {
        s.push(&[item::CHARACTER, char_kind]);
    }
    s.push_u32(len);
    // SAFETY: guaranteed by the caller.
    unsafe { s.push_raw(text, len * char_kind as usize) };
}

/// Flang's array descriptor (`CFI_cdesc_t`, ISO_Fortran_binding.h), up to its dimensions.
#[repr(C)]
pub struct Descriptor {
    base: *const u8,
    element_bytes: usize,
    version: i32,
    rank: u8,
    type_code: i8,
    attribute: u8,
    extra: u8,
    dims: [Dim; 0],
}
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Dim {
    lower_bound: isize,
    extent: isize,
    /// Bytes between consecutive elements of this dimension.
    stride: isize,
}
const _: () = {
    assert!(core::mem::size_of::<Descriptor>() == 24);
    assert!(core::mem::offset_of!(Descriptor, dims) == 24);
    assert!(core::mem::offset_of!(Descriptor, rank) == 20);
    assert!(core::mem::offset_of!(Descriptor, type_code) == 21);
    assert!(core::mem::size_of::<Dim>() == 24);
};

/// Flang's most dimensions (`CFI_MAX_RANK`).
const MAX_RANK: usize = 15;

/// How an element of a descriptor's type is recorded.
#[derive(Clone, Copy)]
enum Element {
    Integer(u8),
    Real4,
    Real8,
    Complex4,
    Complex8,
    Logical,
    Characters(u8),
    Unsupported,
}

/// The element kind of CFI type `code` with `bytes` per element (flang's type codes: integers
/// by size, logicals as `Bool` or the `int_least` codes, characters by kind).
fn element_of(code: i8, bytes: usize) -> Element {
    match (code, bytes) {
        (1..=11 | 17..=24, 1) => Element::Integer(item::INTEGER1),
        (1..=11 | 17..=24, 2) => Element::Integer(item::INTEGER2),
        (1..=11 | 17..=24, 4) => Element::Integer(item::INTEGER4),
        (1..=11 | 17..=24, 8) => Element::Integer(item::INTEGER8),
        (27, 4) => Element::Real4,
        (28, 8) => Element::Real8,
        (34, 8) => Element::Complex4,
        (35, 16) => Element::Complex8,
        (12..=15 | 39, 1 | 2 | 4 | 8) => Element::Logical,
        (40, _) => Element::Characters(1),
        (43, _) => Element::Characters(2),
        (44, _) => Element::Characters(4),
        _ => Element::Unsupported,
    }
}

/// # Safety
/// `at` holds one element of `element`'s type of `bytes` bytes.
unsafe fn push_element(s: &mut Statement, element: Element, at: *const u8, bytes: usize) {
    // SAFETY: guaranteed by the caller (every read is unaligned-safe).
    unsafe {
        match element {
            Element::Integer(tag) => {
                let value = match bytes {
                    1 => (at as *const i8).read_unaligned() as i64,
                    2 => (at as *const i16).read_unaligned() as i64,
                    4 => (at as *const i32).read_unaligned() as i64,
                    _ => (at as *const i64).read_unaligned(),
                };
                s.push(&[tag]);
                s.push(&value.to_le_bytes());
            }
            Element::Real4 => {
                s.push(&[item::REAL4]);
                s.push_raw(at, 4);
            }
            Element::Real8 => {
                s.push(&[item::REAL8]);
                s.push_raw(at, 8);
            }
            Element::Complex4 => {
                s.push(&[item::COMPLEX4]);
                s.push_raw(at, 8);
            }
            Element::Complex8 => {
                s.push(&[item::COMPLEX8]);
                s.push_raw(at, 16);
            }
            Element::Logical => {
                let set = (0..bytes).any(|i| *at.add(i) != 0);
                s.push(&[item::LOGICAL, set as u8]);
            }
            Element::Characters(char_kind) => {
                push_characters(s, char_kind, at, bytes / char_kind as usize)
            }
            Element::Unsupported => {}
        }
    }
}

/// An array (or scalar) item: each element in array element order.
///
/// # Safety
/// `descriptor` is a valid flang descriptor of readable memory.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _FortranAioOutputDescriptor(
    cookie: Cookie,
    descriptor: *const Descriptor,
) -> bool {
    with(cookie, |s| {
        // SAFETY: a valid descriptor (the caller's guarantee).
        let array = unsafe { Array::read(descriptor) };
        let element = element_of(array.type_code, array.element_bytes);
        if let Element::Unsupported = element {
            s.push(&[item::UNSUPPORTED, array.type_code as u8]);
            s.push_u32(array.element_bytes);
            return;
        }
        array.each(|at| {
            // SAFETY: an element of the array, of the descriptor's type.
            unsafe { push_element(s, element, at, array.element_bytes) }
        });
    })
}

/// What a descriptor says of its array, read through its pointer (its dimensions lie past the
/// fixed part that [`Descriptor`] names).
struct Array {
    base: *const u8,
    element_bytes: usize,
    type_code: i8,
    rank: usize,
    dims: [Dim; MAX_RANK],
}

impl Array {
    /// # Safety
    /// `d` points at a valid flang descriptor, followed by its `rank` dimensions.
    unsafe fn read(d: *const Descriptor) -> Array {
        // SAFETY: the fixed part is there (the caller's guarantee).
        let (base, element_bytes, type_code, rank) = unsafe {
            (
                (*d).base,
                (*d).element_bytes,
                (*d).type_code,
                ((*d).rank as usize).min(MAX_RANK),
            )
        };
        let mut dims = [Dim {
            lower_bound: 0,
            extent: 1,
            stride: 0,
        }; MAX_RANK];
        let first =
            (d as *const u8).wrapping_add(core::mem::offset_of!(Descriptor, dims)) as *const Dim;
        for (i, dim) in dims.iter_mut().enumerate().take(rank) {
            // SAFETY: the descriptor has `rank` dimensions after its fixed part.
            *dim = unsafe { first.add(i).read_unaligned() };
        }
        Array {
            base,
            element_bytes,
            type_code,
            rank,
            dims,
        }
    }

    /// How many elements: the product of the extents.
    fn elements(&self) -> usize {
        self.dims[..self.rank]
            .iter()
            .map(|d| d.extent.max(0) as usize)
            .product()
    }

    /// Calls `visit` with each element's address in array element order (the first subscript
    /// varies fastest).
    fn each(&self, mut visit: impl FnMut(*const u8)) {
        if self.elements() == 0 {
            return;
        }
        let mut index = [0isize; MAX_RANK];
        loop {
            let offset: isize = (0..self.rank).map(|i| index[i] * self.dims[i].stride).sum();
            visit(self.base.wrapping_offset(offset));
            let mut i = 0;
            loop {
                if i == self.rank {
                    return;
                }
                index[i] += 1;
                if index[i] < self.dims[i].extent {
                    break;
                }
                index[i] = 0;
                i += 1;
            }
        }
    }
}

/// Sends the statement's last chunk, frees its record, and returns the `IOSTAT` the host's
/// runtime gave it.
///
/// # Safety
/// `cookie` came from a `Begin` call of this thread's open statement (or is null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _FortranAioEndIoStatement(cookie: Cookie) -> i32 {
    // SAFETY: as in `with`; the record is not used after this call.
    let Some(statement) = (unsafe { cookie.as_mut() }) else {
        report_dropped_once(
            c"rustomp device runtime: Fortran output from the device: out of device heap for a statement's record (LIBOMPTARGET_HEAP_SIZE sets CUDA's); statements are dropped and end with IOSTAT 1001\n",
        );
        return IOSTAT_NOT_SHOWN;
    };
    let iostat = statement.send(true);
    // SAFETY: `begin` allocated it; flang ends each statement once.
    unsafe { heap::device_free(cookie as *mut u8) };
    iostat
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::DevicePtr;
    use crate::host_call::{__rustomp_host_call_port, HostCallPort};
    use rustomp_abi::host_call_state::{DONE, REQUEST};
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::sync::Mutex;

    /// What the test's statement server received: each chunk's header and bytes.
    static CHUNKS: Mutex<Vec<(ChunkHeader, Vec<u8>)>> = Mutex::new(Vec::new());
    /// The IOSTAT the test's server answers at a last chunk.
    const ANSWER: u64 = 7;

    unsafe extern "C" fn record_chunk(data: *mut c_void) -> u64 {
        // SAFETY: the port's data: a header and its bytes.
        let (header, bytes) = unsafe {
            let header = (data as *const ChunkHeader).read_unaligned();
            let bytes = core::slice::from_raw_parts(
                (data as *const u8).add(size_of::<ChunkHeader>()),
                header.bytes as usize,
            );
            (header, bytes.to_vec())
        };
        CHUNKS.lock().unwrap().push((header, bytes));
        if header.flags & flags::LAST != 0 {
            ANSWER
        } else {
            0
        }
    }

    use core::mem::size_of;

    /// Runs `kernel` on `threads` emulated device threads while a host thread serves the port as
    /// a plugin does; returns the statements' streams in the order they ended, each checked to
    /// be full chunks and one last chunk.
    fn run(threads: u32, kernel: impl Fn() + Sync) -> Vec<Vec<u8>> {
        // The device globals are the process's: one test at a time.
        static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
        let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: all zero is a free port.
        let mut port: Box<HostCallPort> = Box::new(unsafe { core::mem::zeroed() });
        let port_ptr: *mut HostCallPort = &mut *port;
        // SAFETY: no device code runs yet.
        unsafe {
            __rustomp_host_call_port.set(DevicePtr(port_ptr));
            __rustomp_fortran_output.set(record_chunk as *const () as usize as u64);
        }
        CHUNKS.lock().unwrap().clear();
        let stop = AtomicBool::new(false);
        let port_address = port_ptr as usize;
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let port = port_address as *mut HostCallPort;
                // SAFETY: the port outlives the scope; its state is only accessed atomically.
                let state = unsafe { AtomicU32::from_ptr(&raw mut (*port).state) };
                while !stop.load(Ordering::Acquire) {
                    if state.load(Ordering::Acquire) != REQUEST {
                        std::thread::yield_now();
                        continue;
                    }
                    // SAFETY: the device posted a request: the server's address and its data.
                    unsafe {
                        let f: unsafe extern "C" fn(*mut c_void) -> u64 =
                            core::mem::transmute((*port).function as usize);
                        (*port).result = f((&raw mut (*port).data) as *mut c_void);
                    }
                    state.store(DONE, Ordering::Release);
                }
            });
            arch::launch(1, threads, 32, &kernel);
            stop.store(true, Ordering::Release);
        });
        let chunks = core::mem::take(&mut *CHUNKS.lock().unwrap());
        // An id is the record's address: free again after its last chunk, it may come back.
        let mut open: std::collections::HashMap<u64, Vec<u8>> = Default::default();
        let mut streams = Vec::new();
        for (header, bytes) in chunks {
            let first = !open.contains_key(&header.statement);
            assert_eq!(
                header.flags & flags::FIRST != 0,
                first,
                "FIRST marks a statement's first chunk only"
            );
            let stream = open.entry(header.statement).or_default();
            stream.extend_from_slice(&bytes);
            if header.flags & flags::LAST != 0 {
                streams.push(open.remove(&header.statement).unwrap_or_default());
            } else {
                assert_eq!(bytes.len(), STREAM_BYTES, "only a last chunk is short");
            }
        }
        assert!(open.is_empty(), "every statement ended with its last chunk");
        streams
    }

    /// The fixed start of a list-directed statement on unit 6 from `file` at `line`.
    fn list_directed(line: i32, file: &str) -> Vec<u8> {
        let mut s = vec![kind::LIST_DIRECTED];
        s.extend_from_slice(&6i32.to_le_bytes());
        s.extend_from_slice(&line.to_le_bytes());
        s.extend_from_slice(&(file.len() as u32).to_le_bytes());
        s.extend_from_slice(file.as_bytes());
        s.extend_from_slice(&0u32.to_le_bytes());
        s
    }

    #[test]
    fn statements_of_many_threads_arrive_whole_and_long_ones_in_chunks() {
        let long = vec![b'x'; 9 * STREAM_BYTES + 10];
        let answers = Mutex::new(Vec::new());
        let streams = run(40, || {
            let tid = arch::thread_id_in_block() as i32;
            // SAFETY: one statement as flang makes it: begin, items with its cookie, end; the
            // text outlives the calls.
            let iostat = unsafe {
                let cookie = _FortranAioBeginExternalListOutput(6, c"t.f90".as_ptr(), tid);
                _FortranAioOutputInteger32(cookie, tid);
                if tid == 3 {
                    _FortranAioOutputAscii(cookie, long.as_ptr() as *const c_char, long.len());
                }
                _FortranAioEndIoStatement(cookie)
            };
            answers.lock().unwrap().push(iostat);
        });
        assert_eq!(answers.into_inner().unwrap(), vec![ANSWER as i32; 40]);
        assert_eq!(streams.len(), 40, "one statement per thread");
        let mut lines: Vec<i32> = Vec::new();
        for stream in &streams {
            let line = i32::from_le_bytes(stream[5..9].try_into().unwrap());
            let mut expected = list_directed(line, "t.f90");
            expected.push(item::INTEGER4);
            expected.extend_from_slice(&i64::from(line).to_le_bytes());
            if line == 3 {
                expected.push(item::ASCII);
                expected.extend_from_slice(&(long.len() as u32).to_le_bytes());
                expected.extend_from_slice(&long);
            }
            assert_eq!(stream, &expected, "thread {line}'s statement");
            lines.push(line);
        }
        lines.sort();
        assert_eq!(lines, (0..40).collect::<Vec<_>>());
    }

    #[test]
    fn an_array_section_goes_in_array_element_order() {
        // m(2:3, 1:4:2) of an integer m(3, 4) holding 10 * i + j: elements 21 31 23 33.
        let m: Vec<i32> = (1..=4)
            .flat_map(|j| (1..=3).map(move |i| 10 * i + j))
            .collect();
        #[repr(C)]
        struct TwoDimensional {
            head: Descriptor,
            dims: [Dim; 2],
        }
        let section = TwoDimensional {
            head: Descriptor {
                base: m[1..].as_ptr() as *const u8,
                element_bytes: 4,
                version: 20240719,
                rank: 2,
                type_code: 9,
                attribute: 0,
                extra: 0,
                dims: [],
            },
            dims: [
                Dim {
                    lower_bound: 1,
                    extent: 2,
                    stride: 4,
                },
                Dim {
                    lower_bound: 1,
                    extent: 2,
                    stride: 24,
                },
            ],
        };
        let address = &section as *const TwoDimensional as usize;
        let streams = run(1, || {
            // SAFETY: one statement; the descriptor describes `m`, which outlives the launch.
            unsafe {
                let cookie = _FortranAioBeginExternalListOutput(6, core::ptr::null(), 1);
                _FortranAioOutputDescriptor(cookie, address as *const Descriptor);
                _FortranAioEndIoStatement(cookie);
            }
        });
        let mut expected = list_directed(1, "");
        for value in [21i64, 31, 23, 33] {
            expected.push(item::INTEGER4);
            expected.extend_from_slice(&value.to_le_bytes());
        }
        assert_eq!(streams, vec![expected]);
    }
}
