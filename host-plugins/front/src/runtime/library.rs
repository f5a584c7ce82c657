//! The registered programs: their host entries and their device images, as found in the
//! program's memory (an `OffloadBinary` container read, its headers checked once).

use rustomp_abi::OffloadEntry;
use rustomp_plugin::{image, ImageInfo};

/// One registered executable or shared object.
pub(super) struct Library {
    pub(super) id: u64,
    pub(super) host_entries: Vec<OffloadEntry>,
    pub(super) images: Vec<RawImage>,
}

/// An image inside the registered program's memory (valid while the library is registered).
#[derive(Clone)]
pub(super) struct RawImage {
    pub(super) start: usize,
    pub(super) len: usize,
    pub(super) triple: String,
    pub(super) arch: String,
    /// Why the image's headers cannot be trusted (`image::validate`): it goes to no plugin.
    pub(super) corrupted: Option<String>,
}

// SAFETY: the entries' pointers refer to the registered program's static data, valid for the
// whole registration, and are only read.
unsafe impl Send for Library {}

pub(super) fn entries(begin: *mut OffloadEntry, end: *mut OffloadEntry) -> Vec<OffloadEntry> {
    if begin.is_null() || end <= begin {
        return Vec::new();
    }
    let count = (end as usize - begin as usize) / std::mem::size_of::<OffloadEntry>();
    // SAFETY: the linker-provided section bounds enclose `count` entries.
    unsafe { std::slice::from_raw_parts(begin, count) }.to_vec()
}

impl RawImage {
    /// "nvptx64-nvidia-cuda sm_90" and the like.
    pub(super) fn describe(&self) -> String {
        if self.triple.is_empty() && self.arch.is_empty() {
            "no target triple".into()
        } else if self.arch.is_empty() {
            self.triple.clone()
        } else {
            format!("{} {}", self.triple, self.arch)
        }
    }

    pub(super) fn info(&self) -> ImageInfo<'static> {
        ImageInfo {
            // SAFETY: the image lies in the registered program's memory while it is registered.
            bytes: unsafe { std::slice::from_raw_parts(self.start as *const u8, self.len) },
            triple: self.triple.clone(),
            arch: self.arch.clone(),
        }
    }
}

/// The image inside the registered program's memory: its `OffloadBinary` container read, or a
/// bare image taken as it is (see `rustomp_plugin::image::unwrap_container`).
pub(super) fn parse_container(start: usize, end: usize) -> std::result::Result<RawImage, String> {
    if start == 0 || end <= start {
        return Err("empty image".into());
    }
    // SAFETY: the compiler-provided bounds enclose the image.
    let bytes = unsafe { std::slice::from_raw_parts(start as *const u8, end - start) };
    let found = image::unwrap_container(bytes)?;
    let contained = &bytes[found.offset..found.offset + found.len];
    // An image of a format the built-in plugins read (or claiming to be an ELF) is checked
    // here, once, before any loader; any other format is an external plugin's to judge.
    let ours = contained.starts_with(b"\x7fELF") || image::classify(contained).is_some();
    let corrupted = if ours {
        image::validate(contained).err()
    } else {
        None
    };
    Ok(RawImage {
        start: start + found.offset,
        len: found.len,
        triple: found.triple,
        arch: found.arch,
        corrupted,
    })
}
