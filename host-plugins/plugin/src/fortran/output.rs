//! The host side of Fortran output from GPU code (the device runtime's `fortran_io`; layout in
//! `rustomp_abi::fortran_output`): the statement server a device's `print` or `write` calls
//! through `__llvm_omp_host_call`.
//!
//! Chunks are gathered per statement; at the last one the statement is replayed, item by item,
//! into the program's own flang runtime (`BeginExternalListOutput` or
//! `BeginExternalFormattedOutput` on the device's unit, one `Output*` per item,
//! `EndIoStatement`), so the text is exactly what the same statement prints on the host, on the
//! same unit, in program order. A program whose runtime cannot be found (a stripped executable)
//! gets the items written plainly, with one warning.

use core::ffi::{c_char, c_void, CStr};
use rustomp_abi::fortran_output::{
    flags, item, kind, ChunkHeader, CHUNK_PAYLOAD_BYTES, IOSTAT_NOT_SHOWN,
};
use std::collections::HashMap;
use std::ffi::CString;
use std::io::Write as _;
use std::sync::{Mutex, Once, OnceLock};

/// The server's host address, for the plugins to publish in the device runtime's
/// [`SERVER_SYMBOL`](rustomp_abi::fortran_output::SERVER_SYMBOL).
pub fn server_address() -> u64 {
    serve_chunk as *const () as usize as u64
}

/// Statements whose last chunk has not come yet, by id.
static OPEN: OnceLock<Mutex<HashMap<u64, Vec<u8>>>> = OnceLock::new();

/// `u64 f(void *data)` for `__llvm_omp_host_call`: one chunk of a statement. Returns the
/// statement's `IOSTAT` at its last chunk, 0 before.
///
/// # Safety
/// `data` holds a [`ChunkHeader`] and as many stream bytes as it says (the host-call server
/// passes its own copy of what the device sent).
pub unsafe extern "C" fn serve_chunk(data: *mut c_void) -> u64 {
    // SAFETY: guaranteed by the caller.
    let header = unsafe { (data as *const ChunkHeader).read_unaligned() };
    let len = (header.bytes as usize).min(CHUNK_PAYLOAD_BYTES);
    // SAFETY: the stream bytes follow the header.
    let bytes = unsafe {
        core::slice::from_raw_parts(
            (data as *const u8).add(core::mem::size_of::<ChunkHeader>()),
            len,
        )
    };
    let result = std::panic::catch_unwind(|| match gather(&header, bytes) {
        Some(stream) => replay(&stream) as u32 as u64,
        None => 0,
    });
    result.unwrap_or(IOSTAT_NOT_SHOWN as u32 as u64)
}

/// Keeps a chunk with its statement's earlier ones; at the last, the whole stream.
fn gather(header: &ChunkHeader, bytes: &[u8]) -> Option<Vec<u8>> {
    let open = OPEN.get_or_init(Default::default);
    let mut open = open.lock().unwrap_or_else(|e| e.into_inner());
    if header.flags & flags::FIRST != 0 {
        // A statement of a kernel that stopped midway left its chunks under this id.
        open.remove(&header.statement);
    }
    if header.flags & flags::LAST == 0 {
        open.entry(header.statement)
            .or_default()
            .extend_from_slice(bytes);
        return None;
    }
    let mut stream = open.remove(&header.statement).unwrap_or_default();
    stream.extend_from_slice(bytes);
    Some(stream)
}

/// One statement as the device recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    pub unit: i32,
    pub line: i32,
    pub file: String,
    /// `None` for list-directed output.
    pub format: Option<Vec<u8>>,
    pub items: Vec<Item>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Integer1(i8),
    Integer2(i16),
    Integer4(i32),
    Integer8(i64),
    Real4(f32),
    Real8(f64),
    Complex4(f32, f32),
    Complex8(f64, f64),
    Logical(bool),
    /// Characters of a kind (1, 2 or 4) and their bytes.
    Characters(u8, Vec<u8>),
    /// What the device could not record: its CFI type code and element bytes.
    Unsupported(i8, u32),
    /// `EnableHandlers`' five flags (`IOSTAT=`, `ERR=`, `END=`, `EOR=`, `IOMSG=`) as bits 0-4.
    Handlers(u8),
}

/// Reads a statement's stream; `Err` names what is malformed.
pub fn parse(stream: &[u8]) -> Result<Statement, String> {
    let mut r = Reader { bytes: stream };
    let form = r.u8()?;
    let unit = i32::from_le_bytes(r.array()?);
    let line = i32::from_le_bytes(r.array()?);
    let file_len = r.u32()? as usize;
    let file = String::from_utf8_lossy(r.take(file_len)?).into_owned();
    let format_len = r.u32()? as usize;
    let format = r.take(format_len)?.to_vec();
    let format = match form {
        kind::LIST_DIRECTED => None,
        kind::FORMATTED => Some(format),
        other => return Err(format!("unknown statement form {other}")),
    };
    let mut items = Vec::new();
    while !r.bytes.is_empty() {
        let tag = r.u8()?;
        items.push(match tag {
            item::INTEGER1 => Item::Integer1(r.i64()? as i8),
            item::INTEGER2 => Item::Integer2(r.i64()? as i16),
            item::INTEGER4 => Item::Integer4(r.i64()? as i32),
            item::INTEGER8 => Item::Integer8(r.i64()?),
            item::REAL4 => Item::Real4(f32::from_le_bytes(r.array()?)),
            item::REAL8 => Item::Real8(f64::from_le_bytes(r.array()?)),
            item::COMPLEX4 => Item::Complex4(
                f32::from_le_bytes(r.array()?),
                f32::from_le_bytes(r.array()?),
            ),
            item::COMPLEX8 => Item::Complex8(
                f64::from_le_bytes(r.array()?),
                f64::from_le_bytes(r.array()?),
            ),
            item::LOGICAL => Item::Logical(r.u8()? != 0),
            item::ASCII => {
                let len = r.u32()? as usize;
                Item::Characters(1, r.take(len)?.to_vec())
            }
            item::CHARACTER => {
                let char_kind = r.u8()?;
                let len = r.u32()? as usize;
                Item::Characters(char_kind, r.take(len * char_kind as usize)?.to_vec())
            }
            item::UNSUPPORTED => Item::Unsupported(r.u8()? as i8, r.u32()?),
            item::HANDLERS => Item::Handlers(r.u8()?),
            other => return Err(format!("unknown item tag {other}")),
        });
    }
    Ok(Statement {
        unit,
        line,
        file,
        format,
        items,
    })
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.bytes.len() < n {
            return Err(format!(
                "{n} bytes wanted, {} left in the statement",
                self.bytes.len()
            ));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn i64(&mut self) -> Result<i64, String> {
        Ok(i64::from_le_bytes(self.array()?))
    }
}

/// Shows one statement; returns its `IOSTAT`.
fn replay(stream: &[u8]) -> i32 {
    let statement = match parse(stream) {
        Ok(statement) => statement,
        Err(why) => {
            eprintln!("omptarget error: Fortran output from the device: a statement could not be read ({why}); it is dropped");
            return IOSTAT_NOT_SHOWN;
        }
    };
    for item in &statement.items {
        if let Item::Unsupported(code, bytes) = item {
            eprintln!(
                "omptarget warning: Fortran output from the device ({}:{}): an item of CFI type code {code} ({bytes} bytes per element) cannot be sent from the device; it is left out",
                statement.file, statement.line
            );
        }
    }
    let runtime = Runtime::program();
    let missing = runtime.missing_for(&statement);
    if missing.is_empty() {
        // SAFETY: the program's flang runtime, with every entry point the statement needs.
        return unsafe { runtime.replay(&statement) };
    }
    static WARNED: Once = Once::new();
    WARNED.call_once(|| eprintln!("omptarget warning: Fortran output from the device is written without flang's formatting: the program does not link flang's {} (a stripped executable, or a statement its host code never makes)", missing.join(", ")));
    write_plainly(&statement);
    0
}

/// The items, space-separated on one line of standard output (no runtime to format them).
fn write_plainly(statement: &Statement) {
    let mut line = String::new();
    for item in &statement.items {
        if !matches!(item, Item::Handlers(_)) {
            line.push(' ');
        }
        match item {
            Item::Integer1(v) => line.push_str(&v.to_string()),
            Item::Integer2(v) => line.push_str(&v.to_string()),
            Item::Integer4(v) => line.push_str(&v.to_string()),
            Item::Integer8(v) => line.push_str(&v.to_string()),
            Item::Real4(v) => line.push_str(&format!("{v:?}")),
            Item::Real8(v) => line.push_str(&format!("{v:?}")),
            Item::Complex4(a, b) => line.push_str(&format!("({a:?},{b:?})")),
            Item::Complex8(a, b) => line.push_str(&format!("({a:?},{b:?})")),
            Item::Logical(v) => line.push(if *v { 'T' } else { 'F' }),
            Item::Characters(_, bytes) => line.push_str(&String::from_utf8_lossy(bytes)),
            Item::Unsupported(..) => line.push('?'),
            Item::Handlers(_) => {}
        }
    }
    line.push('\n');
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(line.as_bytes());
    let _ = out.flush();
}

type Cookie = *mut c_void;

/// A typed entry point of the program's flang runtime, if it links it.
fn entry<F: Copy>(name: &CStr) -> Option<F> {
    // SAFETY: each caller names the entry point whose io-api.h signature `F` is.
    super::program_entry(name).map(|address| unsafe { super::entry_point(address) })
}

/// The program's flang output entry points (flang/Runtime/io-api.h), each where the program
/// links it: a static program has the members of flang's runtime its own code uses, and its
/// host fallback of the same region uses the ones the statement needs.
#[derive(Clone, Copy)]
struct Runtime {
    begin_list: Option<unsafe extern "C" fn(i32, *const c_char, i32) -> Cookie>,
    begin_formatted: Option<
        unsafe extern "C" fn(
            *const c_char,
            usize,
            *const c_void,
            i32,
            *const c_char,
            i32,
        ) -> Cookie,
    >,
    handlers: Option<unsafe extern "C" fn(Cookie, bool, bool, bool, bool, bool)>,
    integer1: Option<unsafe extern "C" fn(Cookie, i8) -> bool>,
    integer2: Option<unsafe extern "C" fn(Cookie, i16) -> bool>,
    integer4: Option<unsafe extern "C" fn(Cookie, i32) -> bool>,
    integer8: Option<unsafe extern "C" fn(Cookie, i64) -> bool>,
    real4: Option<unsafe extern "C" fn(Cookie, f32) -> bool>,
    real8: Option<unsafe extern "C" fn(Cookie, f64) -> bool>,
    complex4: Option<unsafe extern "C" fn(Cookie, f32, f32) -> bool>,
    complex8: Option<unsafe extern "C" fn(Cookie, f64, f64) -> bool>,
    logical: Option<unsafe extern "C" fn(Cookie, bool) -> bool>,
    ascii: Option<unsafe extern "C" fn(Cookie, *const c_char, usize) -> bool>,
    character: Option<unsafe extern "C" fn(Cookie, *const c_char, usize, i32) -> bool>,
    end: Option<unsafe extern "C" fn(Cookie) -> i32>,
}

impl Runtime {
    fn program() -> Runtime {
        static PROGRAM: OnceLock<Runtime> = OnceLock::new();
        *PROGRAM.get_or_init(|| Runtime {
            begin_list: entry(c"_FortranAioBeginExternalListOutput"),
            begin_formatted: entry(c"_FortranAioBeginExternalFormattedOutput"),
            handlers: entry(c"_FortranAioEnableHandlers"),
            integer1: entry(c"_FortranAioOutputInteger8"),
            integer2: entry(c"_FortranAioOutputInteger16"),
            integer4: entry(c"_FortranAioOutputInteger32"),
            integer8: entry(c"_FortranAioOutputInteger64"),
            real4: entry(c"_FortranAioOutputReal32"),
            real8: entry(c"_FortranAioOutputReal64"),
            complex4: entry(c"_FortranAioOutputComplex32"),
            complex8: entry(c"_FortranAioOutputComplex64"),
            logical: entry(c"_FortranAioOutputLogical"),
            ascii: entry(c"_FortranAioOutputAscii"),
            character: entry(c"_FortranAioOutputCharacter"),
            end: entry(c"_FortranAioEndIoStatement"),
        })
    }

    /// The entry points `statement` needs that the program lacks, by name; empty when it can
    /// be replayed.
    fn missing_for(&self, statement: &Statement) -> Vec<&'static str> {
        let mut missing = Vec::new();
        let mut need = |present: bool, name: &'static str| {
            if !present && !missing.contains(&name) {
                missing.push(name);
            }
        };
        match statement.format {
            None => need(self.begin_list.is_some(), "BeginExternalListOutput"),
            Some(_) => need(
                self.begin_formatted.is_some(),
                "BeginExternalFormattedOutput",
            ),
        }
        need(self.end.is_some(), "EndIoStatement");
        for item in &statement.items {
            match item {
                Item::Integer1(_) => need(self.integer1.is_some(), "OutputInteger8"),
                Item::Integer2(_) => need(self.integer2.is_some(), "OutputInteger16"),
                Item::Integer4(_) => need(self.integer4.is_some(), "OutputInteger32"),
                Item::Integer8(_) => need(self.integer8.is_some(), "OutputInteger64"),
                Item::Real4(_) => need(self.real4.is_some(), "OutputReal32"),
                Item::Real8(_) => need(self.real8.is_some(), "OutputReal64"),
                Item::Complex4(..) => need(self.complex4.is_some(), "OutputComplex32"),
                Item::Complex8(..) => need(self.complex8.is_some(), "OutputComplex64"),
                Item::Logical(_) => need(self.logical.is_some(), "OutputLogical"),
                Item::Characters(1, _) => need(self.ascii.is_some(), "OutputAscii"),
                Item::Characters(..) => need(self.character.is_some(), "OutputCharacter"),
                Item::Handlers(_) => need(self.handlers.is_some(), "EnableHandlers"),
                Item::Unsupported(..) => {}
            }
        }
        missing
    }

    /// # Safety
    /// The entry points are the program's flang runtime's, and `missing_for(statement)` is
    /// empty.
    unsafe fn replay(&self, statement: &Statement) -> i32 {
        let file = CString::new(statement.file.replace('\0', "")).unwrap_or_default();
        // Present: checked by the caller (`missing_for`).
        fn f<F>(entry: Option<F>) -> F {
            entry.expect("checked by missing_for")
        }
        // SAFETY: a complete output statement, as flang's generated code makes one: begin,
        // one call per item with the statement's cookie, end. The strings outlive the calls.
        unsafe {
            let cookie = match &statement.format {
                None => f(self.begin_list)(statement.unit, file.as_ptr(), statement.line),
                Some(format) => f(self.begin_formatted)(
                    format.as_ptr() as *const c_char,
                    format.len(),
                    core::ptr::null(),
                    statement.unit,
                    file.as_ptr(),
                    statement.line,
                ),
            };
            for item in &statement.items {
                // A false answer means the statement failed; flang's own code goes on to the
                // end, which reports it.
                let _ = match *item {
                    Item::Integer1(v) => f(self.integer1)(cookie, v),
                    Item::Integer2(v) => f(self.integer2)(cookie, v),
                    Item::Integer4(v) => f(self.integer4)(cookie, v),
                    Item::Integer8(v) => f(self.integer8)(cookie, v),
                    Item::Real4(v) => f(self.real4)(cookie, v),
                    Item::Real8(v) => f(self.real8)(cookie, v),
                    Item::Complex4(a, b) => f(self.complex4)(cookie, a, b),
                    Item::Complex8(a, b) => f(self.complex8)(cookie, a, b),
                    Item::Logical(v) => f(self.logical)(cookie, v),
                    Item::Characters(1, ref bytes) => {
                        f(self.ascii)(cookie, bytes.as_ptr() as *const c_char, bytes.len())
                    }
                    Item::Characters(char_kind, ref bytes) => f(self.character)(
                        cookie,
                        bytes.as_ptr() as *const c_char,
                        bytes.len() / char_kind.max(1) as usize,
                        char_kind.into(),
                    ),
                    Item::Unsupported(..) => true,
                    Item::Handlers(bits) => {
                        let bit = |i: u8| bits & (1 << i) != 0;
                        f(self.handlers)(cookie, bit(0), bit(1), bit(2), bit(3), bit(4));
                        true
                    }
                };
            }
            f(self.end)(cookie)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(form: u8, format: &[u8], items: &[u8]) -> Vec<u8> {
        let mut s = vec![form];
        s.extend_from_slice(&6i32.to_le_bytes());
        s.extend_from_slice(&12i32.to_le_bytes());
        s.extend_from_slice(&3u32.to_le_bytes());
        s.extend_from_slice(b"a.f");
        s.extend_from_slice(&(format.len() as u32).to_le_bytes());
        s.extend_from_slice(format);
        s.extend_from_slice(items);
        s
    }

    #[test]
    fn a_statement_is_read_back_item_by_item() {
        let mut items = vec![item::INTEGER4];
        items.extend_from_slice(&(-7i64).to_le_bytes());
        items.push(item::REAL8);
        items.extend_from_slice(&2.5f64.to_le_bytes());
        items.extend_from_slice(&[item::LOGICAL, 1, item::ASCII]);
        items.extend_from_slice(&2u32.to_le_bytes());
        items.extend_from_slice(b"hi");
        items.extend_from_slice(&[item::CHARACTER, 4]);
        items.extend_from_slice(&1u32.to_le_bytes());
        items.extend_from_slice(&0x41u32.to_le_bytes());
        items.push(item::UNSUPPORTED);
        items.push(42);
        items.extend_from_slice(&24u32.to_le_bytes());
        let s = parse(&stream(kind::FORMATTED, b"(i0)", &items)).unwrap();
        assert_eq!(
            s,
            Statement {
                unit: 6,
                line: 12,
                file: "a.f".into(),
                format: Some(b"(i0)".to_vec()),
                items: vec![
                    Item::Integer4(-7),
                    Item::Real8(2.5),
                    Item::Logical(true),
                    Item::Characters(1, b"hi".to_vec()),
                    Item::Characters(4, 0x41u32.to_le_bytes().to_vec()),
                    Item::Unsupported(42, 24),
                ],
            }
        );
    }

    #[test]
    fn a_truncated_or_unknown_stream_is_refused_by_name() {
        let cut = stream(kind::LIST_DIRECTED, b"", &[item::REAL8, 0, 0]);
        assert!(parse(&cut).unwrap_err().contains("bytes wanted"));
        let unknown = stream(kind::LIST_DIRECTED, b"", &[99]);
        assert_eq!(parse(&unknown).unwrap_err(), "unknown item tag 99");
        assert!(parse(&stream(7, b"", &[]))
            .unwrap_err()
            .contains("unknown statement form 7"));
    }

    #[test]
    fn chunks_of_interleaved_statements_are_kept_apart() {
        use flags::{FIRST, LAST};
        let chunk = |statement: u64, flags: u32, bytes: &[u8]| {
            let header = ChunkHeader {
                statement,
                flags,
                bytes: bytes.len() as u32,
            };
            gather(&header, bytes)
        };
        // Two statements, split mid-item, their chunks interleaved.
        let a = stream(kind::LIST_DIRECTED, b"", &[item::LOGICAL, 1]);
        let b = stream(kind::FORMATTED, b"(l1)", &[item::LOGICAL, 0]);
        assert_eq!(chunk(11, FIRST, &a[..5]), None);
        assert_eq!(chunk(12, FIRST, &b[..9]), None);
        assert_eq!(chunk(11, LAST, &a[5..]), Some(a.clone()));
        assert_eq!(chunk(12, LAST, &b[9..]), Some(b));
        // A statement whose kernel stopped after its first chunk: the next statement whose
        // record comes back at the same address starts afresh.
        assert_eq!(chunk(13, FIRST, b"stale"), None);
        assert_eq!(chunk(13, FIRST | LAST, &a), Some(a));
        let open = OPEN.get().unwrap().lock().unwrap();
        assert!(![11, 12, 13].iter().any(|id| open.contains_key(id)));
    }

    #[test]
    fn a_malformed_statement_is_an_error_not_a_crash() {
        let a = stream(kind::LIST_DIRECTED, b"", &[item::LOGICAL, 1]);
        assert_eq!(replay(&a[..7]), IOSTAT_NOT_SHOWN);
    }
}
