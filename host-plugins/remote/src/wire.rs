//! The messages between the application's remote plugin and a `rustomp-proxy`, and their one
//! byte encoding, shared by both sides and by the fuzz target (`fuzz/fuzz_targets/remote_wire.rs`).
//!
//! A control message is a [`Header`] (24 bytes) and a payload of `length` bytes, every integer
//! little-endian. A request's header carries its kind, the application's request id and the
//! payload length; its reply has the same id, the kind with [`REPLY`] set, and a status (0, or
//! the [`ErrorKind`] code of a failure, whose payload is then the message). Bulk data (copies,
//! images) never rides in a control message: it follows on the request's data tag in fragments
//! of at most [`FRAGMENT`] bytes, straight from and into the user's memory (see `link`).
//!
//! Decoding trusts nothing: the magic and version, the kind, the length against the bytes
//! received, every string and list length against the bytes left *before* anything is
//! allocated, UTF-8, enumeration values, and no bytes left over. A message that fails any
//! check is refused with a [`WireError`] naming what was wrong.

use rustomp_plugin::{AllocKind, ErrorKind, LaunchConfig};
use static_assertions::const_assert_eq;
use std::fmt;
use std::mem::{offset_of, size_of};

// The messages: requests (request.rs) and replies (reply.rs), over the encoding below.
mod reply;
mod request;

pub use reply::{DeviceInfo, Failure, Hello, Reply};
pub use request::Request;

/// "RMPI" read as a little-endian u32.
pub const MAGIC: u32 = u32::from_le_bytes(*b"RMPI");
/// The protocol version both sides must speak (checked in every header and at `Hello`).
pub const VERSION: u16 = 2;
/// Set in a reply's kind.
pub const REPLY: u16 = 0x8000;
/// The largest control message either side accepts. Larger payloads (images, copies) go as
/// bulk data.
pub const MAX_CONTROL: usize = 4 << 20;
/// The largest reply (the application receives replies into buffers of this size; a proxy
/// answers a larger result with an error instead).
pub const MAX_REPLY: usize = 1 << 20;
/// The largest bulk fragment: far below MPI's `int` count limit, large enough that MPI's
/// per-message cost vanishes against the transfer.
pub const FRAGMENT: usize = 32 << 20;
/// Names (kernels, globals, plugins, properties) are never longer.
pub const MAX_STRING: usize = 16 << 10;

/// The first bytes of every control message.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub magic: u32,
    pub version: u16,
    /// A [`Kind`] value, with [`REPLY`] set in a reply.
    pub kind: u16,
    /// The application's request id; the reply repeats it.
    pub id: u64,
    /// 0, or in a reply the code of the [`ErrorKind`] of a failure.
    pub status: u32,
    /// Payload bytes after the header.
    pub length: u32,
}

pub const HEADER_BYTES: usize = 24;
const_assert_eq!(size_of::<Header>(), HEADER_BYTES);
const_assert_eq!(offset_of!(Header, magic), 0);
const_assert_eq!(offset_of!(Header, version), 4);
const_assert_eq!(offset_of!(Header, kind), 6);
const_assert_eq!(offset_of!(Header, id), 8);
const_assert_eq!(offset_of!(Header, status), 16);
const_assert_eq!(offset_of!(Header, length), 20);

impl Header {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.magic.to_le_bytes());
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&self.kind.to_le_bytes());
        out.extend_from_slice(&self.id.to_le_bytes());
        out.extend_from_slice(&self.status.to_le_bytes());
        out.extend_from_slice(&self.length.to_le_bytes());
    }

    /// The header of `bytes`, checked: magic, version, and a length that is exactly what
    /// follows.
    pub fn decode(bytes: &[u8]) -> Result<Header, WireError> {
        if bytes.len() > MAX_CONTROL {
            return Err(WireError::new(format!(
                "message of {} bytes, more than the {MAX_CONTROL} a control message may have",
                bytes.len()
            )));
        }
        let mut r = Reader::new(bytes, "header");
        let header = Header {
            magic: r.u32()?,
            version: r.u16()?,
            kind: r.u16()?,
            id: r.u64()?,
            status: r.u32()?,
            length: r.u32()?,
        };
        if header.magic != MAGIC {
            return Err(WireError::new(format!(
                "not a rustomp message (magic {:#010x})",
                header.magic
            )));
        }
        if header.version != VERSION {
            return Err(WireError::new(format!(
                "protocol version {} (this side speaks {VERSION})",
                header.version
            )));
        }
        if header.length as usize != r.remaining() {
            return Err(WireError::new(format!(
                "header says {} payload bytes, {} arrived",
                header.length,
                r.remaining()
            )));
        }
        Ok(header)
    }
}

/// What was wrong with a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError(pub String);

impl WireError {
    fn new(why: impl Into<String>) -> Self {
        Self(why.into())
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed message: {}", self.0)
    }
}

/// Request kinds.
#[repr(u16)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Hello = 1,
    Ping = 2,
    Stop = 3,
    StoreImage = 4,
    Compatibility = 5,
    OpenDevice = 6,
    Alloc = 7,
    Free = 8,
    CopyTo = 9,
    CopyFrom = 10,
    CopyWithin = 11,
    CopyLocal = 12,
    PeerSend = 13,
    PeerRecv = 14,
    LoadImage = 15,
    UnloadImage = 16,
    Kernel = 17,
    Global = 18,
    Launch = 19,
    SetIndirect = 20,
    Synchronize = 21,
    Baseline = 22,
    Trace = 23,
    Clock = 24,
}

const KINDS: [Kind; 24] = [
    Kind::Hello,
    Kind::Ping,
    Kind::Stop,
    Kind::StoreImage,
    Kind::Compatibility,
    Kind::OpenDevice,
    Kind::Alloc,
    Kind::Free,
    Kind::CopyTo,
    Kind::CopyFrom,
    Kind::CopyWithin,
    Kind::CopyLocal,
    Kind::PeerSend,
    Kind::PeerRecv,
    Kind::LoadImage,
    Kind::UnloadImage,
    Kind::Kernel,
    Kind::Global,
    Kind::Launch,
    Kind::SetIndirect,
    Kind::Synchronize,
    Kind::Baseline,
    Kind::Trace,
    Kind::Clock,
];

impl Kind {
    pub fn from_u16(value: u16) -> Option<Kind> {
        KINDS.iter().copied().find(|k| *k as u16 == value)
    }

    /// The operation in words, for messages ("launch", "copy to the device").
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Hello => "hello",
            Kind::Ping => "ping",
            Kind::Stop => "stop",
            Kind::StoreImage => "image transfer",
            Kind::Compatibility => "image compatibility check",
            Kind::OpenDevice => "device open",
            Kind::Alloc => "allocation",
            Kind::Free => "free",
            Kind::CopyTo => "copy to the device",
            Kind::CopyFrom => "copy from the device",
            Kind::CopyWithin => "copy within the device",
            Kind::CopyLocal => "copy between devices of one rank",
            Kind::PeerSend => "copy to another rank",
            Kind::PeerRecv => "copy from another rank",
            Kind::LoadImage => "image load",
            Kind::UnloadImage => "image unload",
            Kind::Kernel => "kernel lookup",
            Kind::Global => "global lookup",
            Kind::Launch => "launch",
            Kind::SetIndirect => "indirect-call table",
            Kind::Synchronize => "synchronize",
            Kind::Baseline => "baseline measurement",
            Kind::Trace => "tracing switch",
            Kind::Clock => "clock reading",
        }
    }
}

/// A content hash of an image: what images are cached by on a proxy.
pub type ImageHash = [u8; 16];

/// Messages are cut to fit a control message (a reason or a property can be anything a
/// driver said).
fn truncated(text: &str) -> &str {
    if text.len() <= MAX_STRING {
        return text;
    }
    let mut end = MAX_STRING;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

const ERROR_KINDS: [ErrorKind; 9] = [
    ErrorKind::OutOfMemory,
    ErrorKind::InvalidImage,
    ErrorKind::SymbolNotFound,
    ErrorKind::LaunchFailed,
    ErrorKind::TransferFailed,
    ErrorKind::MappingError,
    ErrorKind::DeviceUnavailable,
    ErrorKind::InvalidArgument,
    ErrorKind::Unsupported,
];

fn error_code(kind: ErrorKind) -> u32 {
    ERROR_KINDS
        .iter()
        .position(|k| *k == kind)
        .map_or(ERROR_KINDS.len() as u32, |i| i as u32 + 1)
}

fn error_kind(code: u32) -> Option<ErrorKind> {
    ERROR_KINDS.get((code as usize).checked_sub(1)?).copied()
}

fn alloc_kind_code(kind: AllocKind) -> u8 {
    match kind {
        AllocKind::Device => 0,
        AllocKind::Host => 1,
        AllocKind::Shared => 2,
    }
}

#[derive(Default)]
struct Writer {
    payload: Vec<u8>,
}

impl Writer {
    fn u8(&mut self, v: u8) {
        self.payload.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.payload.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.payload.extend_from_slice(&v.to_le_bytes());
    }
    fn hash(&mut self, h: &ImageHash) {
        self.payload.extend_from_slice(h);
    }
    fn str(&mut self, s: &str) {
        let s = truncated(s);
        self.u32(s.len() as u32);
        self.payload.extend_from_slice(s.as_bytes());
    }
    fn option_u64(&mut self, v: Option<u64>) {
        match v {
            None => self.u8(0),
            Some(v) => {
                self.u8(1);
                self.u64(v);
            }
        }
    }
    fn message(self, kind: u16, id: u64, status: u32) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_BYTES + self.payload.len());
        Header {
            magic: MAGIC,
            version: VERSION,
            kind,
            id,
            status,
            length: self.payload.len() as u32,
        }
        .encode(&mut out);
        out.extend_from_slice(&self.payload);
        out
    }
}

/// Reads a payload front to back; every read checks the bytes left first.
struct Reader<'a> {
    data: &'a [u8],
    at: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn new(data: &'a [u8], what: &'static str) -> Self {
        Self { data, at: 0, what }
    }
    fn remaining(&self) -> usize {
        self.data.len() - self.at
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if n > self.remaining() {
            return Err(WireError::new(format!(
                "truncated {} message: {n} more bytes needed at offset {}, {} left",
                self.what,
                self.at,
                self.remaining()
            )));
        }
        let bytes = &self.data[self.at..self.at + n];
        self.at += n;
        Ok(bytes)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }
    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.array::<1>()?[0])
    }
    fn u16(&mut self) -> Result<u16, WireError> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    fn hash(&mut self) -> Result<ImageHash, WireError> {
        self.array()
    }
    fn bool(&mut self) -> Result<bool, WireError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(WireError::new(format!(
                "{} message: flag byte {v} at offset {} (0 or 1)",
                self.what,
                self.at - 1
            ))),
        }
    }
    fn option_u64(&mut self) -> Result<Option<u64>, WireError> {
        Ok(if self.bool()? {
            Some(self.u64()?)
        } else {
            None
        })
    }
    /// A list length, checked against the bytes left (each element takes at least
    /// `min_bytes`) before the caller allocates for it.
    fn count(&mut self, min_bytes: usize, what: &str) -> Result<usize, WireError> {
        let count = self.u32()? as usize;
        if count.saturating_mul(min_bytes) > self.remaining() {
            return Err(WireError::new(format!(
                "{} message: {count} {what} cannot fit in the {} bytes left",
                self.what,
                self.remaining()
            )));
        }
        Ok(count)
    }
    fn str(&mut self) -> Result<String, WireError> {
        let len = self.u32()? as usize;
        if len > MAX_STRING {
            return Err(WireError::new(format!(
                "{} message: a string of {len} bytes (at most {MAX_STRING})",
                self.what
            )));
        }
        let bytes = self.take(len)?;
        std::str::from_utf8(bytes)
            .map(str::to_string)
            .map_err(|e| WireError::new(format!("{} message: string not UTF-8: {e}", self.what)))
    }
    fn alloc_kind(&mut self) -> Result<AllocKind, WireError> {
        match self.u8()? {
            0 => Ok(AllocKind::Device),
            1 => Ok(AllocKind::Host),
            2 => Ok(AllocKind::Shared),
            v => Err(WireError::new(format!(
                "{} message: allocation kind {v}",
                self.what
            ))),
        }
    }
    fn finish(&self) -> Result<(), WireError> {
        if self.remaining() != 0 {
            return Err(WireError::new(format!(
                "{} message: {} bytes left over",
                self.what,
                self.remaining()
            )));
        }
        Ok(())
    }
}

/// Tags on the plugin's communicator: requests on [`REQUEST_TAG`]; request `id`'s reply on
/// `reply_tag(id)` and its bulk data on `reply_tag(id) + 1`. Ids wrap around `slots` pairs of
/// tags; requests in flight at once are far fewer, so no two share a tag.
pub const REQUEST_TAG: i32 = 1;
const FIRST_SLOT_TAG: i32 = 16;

/// Tag pairs available under MPI's `tag_ub` (at least 32767 by the standard).
pub fn tag_slots(tag_ub: i32) -> u64 {
    (((tag_ub.max(32767) - FIRST_SLOT_TAG) / 2) as u64).min(1 << 20)
}

pub fn reply_tag(id: u64, slots: u64) -> i32 {
    FIRST_SLOT_TAG + 2 * (id % slots.max(1)) as i32
}

pub fn data_tag(id: u64, slots: u64) -> i32 {
    reply_tag(id, slots) + 1
}

/// The fragments of a bulk transfer of `bytes` bytes: (offset, length) pairs.
pub fn fragments(bytes: u64) -> impl Iterator<Item = (u64, usize)> {
    let step = FRAGMENT as u64;
    (0..bytes.div_ceil(step)).map(move |i| {
        let offset = i * step;
        (offset, (bytes - offset).min(step) as usize)
    })
}

#[cfg(test)]
mod tests;
