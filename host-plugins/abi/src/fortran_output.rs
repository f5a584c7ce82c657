//! Fortran output from device code: how a `print` or `write` statement a device thread executed
//! travels to the host (the device runtime's `fortran_io`, the plugins' `fortran::output`).
//!
//! The device records the statement's items in order, as a byte stream, and sends it in chunks
//! through `__llvm_omp_host_call` to the host function whose address the plugin publishes in
//! [`SERVER_SYMBOL`]. Each chunk is a [`ChunkHeader`] and up to
//! [`CHUNK_PAYLOAD_BYTES`] of the stream. The host gathers a statement's chunks by its id and
//! replays the whole statement at its last chunk; the call's result is then the statement's
//! `IOSTAT` (0 before the last chunk).
//!
//! The stream (all numbers little-endian):
//! - the statement: [`kind`] (1 byte), unit (i32), source line (i32), source file (u32 length
//!   and bytes), format (u32 length and bytes, empty for list-directed);
//! - then its items, each an [`item`] tag followed by the value as the tag says.

use crate::HOST_CALL_DATA_BYTES;
use core::mem::{offset_of, size_of};
use static_assertions::const_assert_eq;

/// The device runtime's `u64` that holds the host address of the plugin's statement server
/// (0: none, the output cannot be shown).
pub const SERVER_SYMBOL: &str = "__rustomp_fortran_output";

/// What precedes each chunk of a statement's stream in the host call's data.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChunkHeader {
    /// The statement's id: the device address of its record, unique while it is open (the
    /// devices of a process share one virtual address space).
    pub statement: u64,
    /// [`flags`].
    pub flags: u32,
    /// Bytes of the stream that follow the header in this chunk.
    pub bytes: u32,
}
const_assert_eq!(size_of::<ChunkHeader>(), 16);
const_assert_eq!(offset_of!(ChunkHeader, flags), 8);
const_assert_eq!(offset_of!(ChunkHeader, bytes), 12);

/// Stream bytes one chunk carries at most.
pub const CHUNK_PAYLOAD_BYTES: usize = HOST_CALL_DATA_BYTES - size_of::<ChunkHeader>();

/// [`ChunkHeader::flags`].
pub mod flags {
    /// The statement's last chunk: the host replays it and answers its `IOSTAT`.
    pub const LAST: u32 = 1;
    /// The statement's first chunk: whatever the host holds under its id (a statement of a
    /// kernel that stopped midway, whose record's address came back) is dropped.
    pub const FIRST: u32 = 2;
}

/// The `IOSTAT` of a statement that could not be shown (out of device heap, no statement
/// server, a stream the host could not read): flang's `IostatGenericError`.
pub const IOSTAT_NOT_SHOWN: i32 = 1001;

/// The statement's form.
pub mod kind {
    /// `print *` / `write(u, *)`.
    pub const LIST_DIRECTED: u8 = 0;
    /// `print '(...)'` / `write(u, fmt)`: the format's text follows.
    pub const FORMATTED: u8 = 1;
}

/// Item tags and what follows each.
pub mod item {
    /// Integers of kind 1, 2, 4, 8: the value as 8 bytes (sign-extended).
    pub const INTEGER1: u8 = 1;
    pub const INTEGER2: u8 = 2;
    pub const INTEGER4: u8 = 3;
    pub const INTEGER8: u8 = 4;
    /// `real(4)`: 4 bytes.
    pub const REAL4: u8 = 5;
    /// `real(8)`: 8 bytes.
    pub const REAL8: u8 = 6;
    /// `complex(4)`: two `real(4)`.
    pub const COMPLEX4: u8 = 7;
    /// `complex(8)`: two `real(8)`.
    pub const COMPLEX8: u8 = 8;
    /// A logical: 1 byte, 0 or 1.
    pub const LOGICAL: u8 = 9;
    /// Default character: u32 length and the bytes.
    pub const ASCII: u8 = 10;
    /// Character of kind 2 or 4: the kind (1 byte), u32 length in characters, the bytes.
    pub const CHARACTER: u8 = 11;
    /// An item the device cannot record (a derived type, `real(10)`, `real(16)`, ...): the
    /// descriptor's type code (1 byte) and element length (u32), for the host's message.
    pub const UNSUPPORTED: u8 = 12;
    /// `EnableHandlers` (`IOSTAT=`, `ERR=`, ... on the statement): 1 byte, bit 0 `IOSTAT=`,
    /// 1 `ERR=`, 2 `END=`, 3 `EOR=`, 4 `IOMSG=`.
    pub const HANDLERS: u8 = 13;
}
