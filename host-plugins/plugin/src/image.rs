//! What an offload image is, read from its bytes alone (no driver, no device): the
//! `OffloadBinary` container clang-22 wraps images in, the ELF facts that name an image's target
//! (class, machine, flags: `sm_XX` of a cubin, the `gfxNNNN` processor and target-id features of
//! an AMDGPU code object), PTX text and CUDA fatbinaries, and the symbol names an ELF defines.
//!
//! The front uses this to describe images and pick plugins; backends use it to decide which of
//! their devices can run an image. Every reader is bounds-checked: a malformed image yields
//! `None` or an error naming the field, never a panic.

use object::elf::{FileHeader64, SHT_SYMTAB};
use object::read::elf::FileHeader as _;
use object::LittleEndian as LE;
use rustomp_abi::OFFLOAD_BINARY_MAGIC;

mod params;
mod validate;
pub use params::{kernel_parameters, KernelParameters};
pub use validate::validate;

pub const TRIPLE_X86_64: &str = "x86_64-pc-linux-gnu";
pub const TRIPLE_NVPTX: &str = "nvptx64-nvidia-cuda";
pub const TRIPLE_AMDGCN: &str = "amdgcn-amd-amdhsa";

/// ELF machine numbers of the targets clang-22 offloads to.
pub mod machine {
    pub const X86_64: u16 = 62;
    /// `EM_CUDA`.
    pub const CUDA: u16 = 190;
    /// `EM_AMDGPU`.
    pub const AMDGPU: u16 = 224;
}

/// `e_ident[EI_ABIVERSION]` of the older CUDA ELF ABI: the SM number is the low byte of
/// `e_flags`; the newer ABI (version 8) keeps it in bits 8..16.
const ELFABIVERSION_CUDA_V1: u8 = 7;
const FATBIN_MAGIC: [u8; 4] = [0x50, 0xed, 0x55, 0xba];

/// What kind of image a byte string is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageKind {
    /// An x86_64 ELF shared object (host offload).
    HostElf,
    /// A device-linked CUDA ELF for one SM (e.g. 90 for sm_90).
    Cubin { sm: u32 },
    /// PTX assembly; its `.target sm_XX`, when found.
    Ptx { sm: Option<u32> },
    /// A CUDA fatbinary container; the driver picks the member for the GPU.
    Fatbinary,
    /// An AMDGPU code object (HSA ELF) for one processor and its target-id features.
    AmdgpuCodeObject { target: TargetId },
    /// Any other 64-bit little-endian ELF, by machine number.
    OtherElf { machine: u16 },
}

impl ImageKind {
    /// The target triple an image of this kind is for (empty when unknown).
    pub fn triple(&self) -> &'static str {
        match self {
            ImageKind::HostElf => TRIPLE_X86_64,
            ImageKind::Cubin { .. } | ImageKind::Ptx { .. } | ImageKind::Fatbinary => TRIPLE_NVPTX,
            ImageKind::AmdgpuCodeObject { .. } => TRIPLE_AMDGCN,
            ImageKind::OtherElf { .. } => "",
        }
    }

    /// The `--offload-arch` it was built for (`sm_90`, `gfx90a:xnack+`), empty when the image
    /// does not say.
    pub fn arch(&self) -> String {
        match self {
            ImageKind::Cubin { sm } | ImageKind::Ptx { sm: Some(sm) } => format!("sm_{sm}"),
            ImageKind::AmdgpuCodeObject { target } => target.to_string(),
            _ => String::new(),
        }
    }

    /// "sm_90 cubin", "gfx90a code object" and the like, for messages.
    pub fn label(&self) -> String {
        match self {
            ImageKind::HostElf => "x86_64 shared object".into(),
            ImageKind::Cubin { sm } => format!("sm_{sm} cubin"),
            ImageKind::Ptx { sm: Some(sm) } => format!("sm_{sm} PTX"),
            ImageKind::Ptx { sm: None } => "PTX".into(),
            ImageKind::Fatbinary => "fatbinary".into(),
            ImageKind::AmdgpuCodeObject { target } => format!("{target} code object"),
            ImageKind::OtherElf { machine } => format!("ELF for machine {machine}"),
        }
    }
}

/// The ELF header fields that identify a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElfHeader {
    pub os_abi: u8,
    pub abi_version: u8,
    pub object_type: u16,
    pub machine: u16,
    pub flags: u32,
}

fn u16_at(bytes: &[u8], offset: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        bytes.get(offset..offset.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn u32_at(bytes: &[u8], offset: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        bytes.get(offset..offset.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn u64_at(bytes: &[u8], offset: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        bytes.get(offset..offset.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// The header of a 64-bit little-endian ELF (every offload target's format), else `None`.
pub fn elf_header(bytes: &[u8]) -> Option<ElfHeader> {
    let header = FileHeader64::<LE>::parse(bytes).ok()?;
    if !header.is_class_64() || !header.is_little_endian() {
        return None;
    }
    let ident = header.e_ident();
    Some(ElfHeader {
        os_abi: ident.os_abi.0,
        abi_version: ident.abi_version,
        object_type: header.e_type(LE).0,
        machine: header.e_machine(LE).0,
        flags: header.e_flags(LE).0,
    })
}

/// Reads the kind of `bytes`, or `None` when it is no image format an offload plugin runs.
pub fn classify(bytes: &[u8]) -> Option<ImageKind> {
    if bytes.starts_with(b"\x7fELF") {
        let header = elf_header(bytes)?;
        return Some(match header.machine {
            machine::X86_64 => ImageKind::HostElf,
            machine::CUDA => ImageKind::Cubin {
                sm: cubin_sm(&header)?,
            },
            machine::AMDGPU => ImageKind::AmdgpuCodeObject {
                target: TargetId::from_elf_flags(header.flags)?,
            },
            other => ImageKind::OtherElf { machine: other },
        });
    }
    if bytes.starts_with(&FATBIN_MAGIC) {
        return Some(ImageKind::Fatbinary);
    }
    if looks_like_ptx(bytes) {
        return Some(ImageKind::Ptx {
            sm: ptx_target(bytes),
        });
    }
    None
}

/// The SM number of a CUDA ELF, from its flags.
fn cubin_sm(header: &ElfHeader) -> Option<u32> {
    let sm = if header.abi_version == ELFABIVERSION_CUDA_V1 {
        header.flags & 0xff
    } else {
        (header.flags >> 8) & 0xff
    };
    (sm != 0).then_some(sm)
}

fn looks_like_ptx(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(4096)];
    let text = String::from_utf8_lossy(head);
    text.contains(".version") && text.contains(".target")
}

/// The `sm_XX` of a PTX module's `.target` directive.
pub fn ptx_target(bytes: &[u8]) -> Option<u32> {
    let head = &bytes[..bytes.len().min(64 * 1024)];
    let text = String::from_utf8_lossy(head);
    text.lines().find_map(|line| {
        let rest = line.trim().strip_prefix(".target")?;
        rest.split(|c: char| c == ',' || c.is_whitespace())
            .find_map(parse_sm)
    })
}

/// `sm_90`, `sm_90a`, `sm_100f` -> 90, 90, 100.
pub fn parse_sm(arch: &str) -> Option<u32> {
    let digits: String = arch
        .trim()
        .strip_prefix("sm_")?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok().filter(|&sm| sm > 0)
}

/// Names of the symbols an image defines that start with `prefix`: from the ELF symbol tables
/// of an ELF image, from the identifiers of PTX text (fatbinaries: none). Drivers cannot list
/// globals, and clang-22 names each device constructor (destructor) pointer
/// `__init_array_object_<...>_<priority>` (`__fini_array_object_...`).
pub fn symbols_with_prefix(bytes: &[u8], kind: &ImageKind, prefix: &str) -> Vec<String> {
    let mut names = match kind {
        ImageKind::Ptx { .. } => {
            let text = String::from_utf8_lossy(bytes);
            let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '.';
            text.match_indices(prefix)
                .filter(|(at, _)| !text[..*at].ends_with(is_ident))
                .map(|(at, _)| text[at..].chars().take_while(|&c| is_ident(c)).collect())
                .collect()
        }
        ImageKind::Fatbinary => Vec::new(),
        _ => elf_symbol_names(bytes).unwrap_or_default(),
    };
    names.retain(|n| n.starts_with(prefix));
    names.sort();
    names.dedup();
    names
}

/// Every symbol name of a 64-bit little-endian ELF (`None` when the tables are malformed).
fn elf_symbol_names(bytes: &[u8]) -> Option<Vec<String>> {
    let header = FileHeader64::<LE>::parse(bytes).ok()?;
    let sections = header.sections(LE, bytes).ok()?;
    let symbols = sections.symbols(LE, bytes, SHT_SYMTAB).ok()?;
    symbols
        .iter()
        .map(|symbol| symbols.symbol_name(LE, symbol).ok())
        .filter(|name| name.is_none_or(|n| !n.is_empty()))
        .map(|name| name.map(|n| String::from_utf8_lossy(n).into_owned()))
        .collect()
}

/// The values (addresses before relocation) of the defined symbols named `wanted` in a 64-bit
/// little-endian ELF's static symbol table, in `wanted`'s order (`None`: not there, or no
/// table, as in a stripped file).
pub fn elf_symbol_values(bytes: &[u8], wanted: &[&str]) -> Vec<Option<u64>> {
    let mut found = vec![None; wanted.len()];
    let Some(symbols) = FileHeader64::<LE>::parse(bytes)
        .ok()
        .and_then(|h| h.sections(LE, bytes).ok())
        .and_then(|s| s.symbols(LE, bytes, SHT_SYMTAB).ok())
    else {
        return found;
    };
    for symbol in symbols.iter() {
        if symbol.st_shndx.get(LE) == object::elf::SHN_UNDEF {
            continue;
        }
        let Ok(name) = symbols.symbol_name(LE, symbol) else {
            continue;
        };
        if let Some(i) = wanted.iter().position(|w| w.as_bytes() == name) {
            found[i] = Some(symbol.st_value.get(LE));
        }
    }
    found
}

/// The priority suffix of a constructor or destructor object name (`..._65535` -> 65535).
pub fn init_priority(name: &str) -> Option<u16> {
    name.rsplit('_').next()?.parse().ok()
}

/// A target-id feature's setting (`xnack`, `sramecc`): absent (the processor lacks it), any
/// (the image runs either way), or required on or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeatureSetting {
    Unsupported,
    Any,
    Off,
    On,
}

/// An AMDGPU target id: `gfx90a`, `gfx90a:xnack+`, `gfx942:sramecc+:xnack-`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetId {
    pub processor: String,
    pub xnack: FeatureSetting,
    pub sramecc: FeatureSetting,
}

/// `EF_AMDGPU_MACH` values of the processors clang-22 targets (ELF.h), by name.
const AMDGPU_PROCESSORS: &[(u32, &str)] = &[
    (0x02c, "gfx900"),
    (0x02d, "gfx902"),
    (0x02e, "gfx904"),
    (0x02f, "gfx906"),
    (0x030, "gfx908"),
    (0x031, "gfx909"),
    (0x032, "gfx90c"),
    (0x033, "gfx1010"),
    (0x034, "gfx1011"),
    (0x035, "gfx1012"),
    (0x036, "gfx1030"),
    (0x037, "gfx1031"),
    (0x038, "gfx1032"),
    (0x039, "gfx1033"),
    (0x03d, "gfx1035"),
    (0x03e, "gfx1034"),
    (0x03f, "gfx90a"),
    (0x041, "gfx1100"),
    (0x042, "gfx1013"),
    (0x043, "gfx1150"),
    (0x044, "gfx1103"),
    (0x045, "gfx1036"),
    (0x046, "gfx1101"),
    (0x047, "gfx1102"),
    (0x048, "gfx1200"),
    (0x049, "gfx1250"),
    (0x04a, "gfx1151"),
    (0x04c, "gfx942"),
    (0x04e, "gfx1201"),
    (0x04f, "gfx950"),
    (0x051, "gfx9-generic"),
    (0x052, "gfx10-1-generic"),
    (0x053, "gfx10-3-generic"),
    (0x054, "gfx11-generic"),
    (0x055, "gfx1152"),
    (0x058, "gfx1153"),
    (0x059, "gfx12-generic"),
    (0x05a, "gfx1251"),
    (0x05f, "gfx9-4-generic"),
];
const EF_AMDGPU_MACH: u32 = 0xff;
const EF_AMDGPU_FEATURE_XNACK_V4: u32 = 0x300;
const EF_AMDGPU_FEATURE_SRAMECC_V4: u32 = 0xc00;

impl TargetId {
    /// The target of an AMDGPU code object (v4 and later) from its `e_flags`.
    pub fn from_elf_flags(flags: u32) -> Option<Self> {
        let mach = flags & EF_AMDGPU_MACH;
        let processor = AMDGPU_PROCESSORS
            .iter()
            .find(|(m, _)| *m == mach)
            .map_or_else(
                || format!("gfx-mach-{mach:#x}"),
                |(_, name)| (*name).to_string(),
            );
        // Both feature fields use the same encoding, 2 bits apart.
        let setting = |bits: u32| match bits {
            0 => FeatureSetting::Unsupported,
            1 => FeatureSetting::Any,
            2 => FeatureSetting::Off,
            _ => FeatureSetting::On,
        };
        Some(TargetId {
            processor,
            xnack: setting((flags & EF_AMDGPU_FEATURE_XNACK_V4) >> 8),
            sramecc: setting((flags & EF_AMDGPU_FEATURE_SRAMECC_V4) >> 10),
        })
    }

    /// Parses `gfx90a:xnack+` or a full ISA name `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`.
    /// A feature the text does not mention reads as `Any` (clang's default for an arch
    /// string); use [`TargetId::of_agent`] for a device's ISA name.
    pub fn parse(text: &str) -> Option<Self> {
        let id = text.rsplit("--").next()?.trim();
        let mut parts = id.split(':');
        let processor = parts.next().filter(|p| p.starts_with("gfx"))?.to_string();
        let mut target = TargetId {
            processor,
            xnack: FeatureSetting::Any,
            sramecc: FeatureSetting::Any,
        };
        for feature in parts {
            let (name, setting) = match feature.as_bytes().last() {
                Some(b'+') => (&feature[..feature.len() - 1], FeatureSetting::On),
                Some(b'-') => (&feature[..feature.len() - 1], FeatureSetting::Off),
                _ => return None,
            };
            match name {
                "xnack" => target.xnack = setting,
                "sramecc" => target.sramecc = setting,
                _ => return None,
            }
        }
        Some(target)
    }

    /// A device's target from its ISA name: features it does not list, it does not support.
    pub fn of_agent(isa_name: &str) -> Option<Self> {
        let mut target = Self::parse(isa_name)?;
        let id = isa_name.rsplit("--").next().unwrap_or("");
        if !id.contains("xnack") {
            target.xnack = FeatureSetting::Unsupported;
        }
        if !id.contains("sramecc") {
            target.sramecc = FeatureSetting::Unsupported;
        }
        Some(target)
    }

    /// Whether an image built for `self` runs on a device whose target is `device`; `Err`
    /// says why not (as LLVM's target-id compatibility: same processor, and every feature the
    /// image fixes is set the same way on the device).
    pub fn runs_on(&self, device: &TargetId) -> Result<(), String> {
        if self.processor != device.processor {
            return Err(format!(
                "an image for {self} runs only on {} GPUs, this one is {device}",
                self.processor
            ));
        }
        for (name, image, on_device) in [
            ("xnack", self.xnack, device.xnack),
            ("sramecc", self.sramecc, device.sramecc),
        ] {
            let fixed = matches!(image, FeatureSetting::On | FeatureSetting::Off);
            if fixed && image != on_device {
                return Err(format!(
                    "the image needs {name}{}, this GPU has {device}",
                    feature_suffix(image)
                ));
            }
        }
        Ok(())
    }
}

fn feature_suffix(setting: FeatureSetting) -> &'static str {
    match setting {
        FeatureSetting::On => "+",
        FeatureSetting::Off => "-",
        FeatureSetting::Any | FeatureSetting::Unsupported => "",
    }
}

impl std::fmt::Display for TargetId {
    /// LLVM's order: `gfx90a:sramecc+:xnack-`; unsupported and any features are not written.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.processor)?;
        for (name, setting) in [("sramecc", self.sramecc), ("xnack", self.xnack)] {
            if matches!(setting, FeatureSetting::On | FeatureSetting::Off) {
                write!(f, ":{name}{}", feature_suffix(setting))?;
            }
        }
        Ok(())
    }
}

/// An image found inside its `OffloadBinary` container, or taken bare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainedImage {
    /// Where the image starts within the bytes given, and its length.
    pub offset: usize,
    pub len: usize,
    /// The container's `triple` and `arch` strings, or what the bare image says of itself.
    pub triple: String,
    pub arch: String,
}

/// Reads an `OffloadBinary` (`0x10FF10AD`) container, or takes a bare image as it is (clang-22
/// may point a device image at the ELF inside its container). `Err` names the field at fault.
pub fn unwrap_container(bytes: &[u8]) -> Result<ContainedImage, String> {
    let len = bytes.len();
    if len == 0 {
        return Err("empty image".into());
    }
    if !bytes.starts_with(&OFFLOAD_BINARY_MAGIC) {
        return match classify(bytes) {
            Some(kind) => Ok(ContainedImage {
                offset: 0,
                len,
                triple: kind.triple().into(),
                arch: kind.arch(),
            }),
            None if bytes.starts_with(b"\x7fELF") => Err(validate(bytes).err().unwrap_or_default()),
            None => Err(format!(
                "not an offload binary (no 0x10FF10AD magic; {len} bytes)"
            )),
        };
    }
    // Header: magic, version u32, size u64, entry offset u64, entry size u64 (32 bytes).
    // Entry: image kind u16, offload kind u16, flags u32, string offset u64, number of strings
    // u64, image offset u64, image size u64 (40 bytes). String entry: key and value offsets.
    let field = |offset: usize, read: fn(&[u8], usize) -> Option<u64>, what: &str| {
        read(bytes, offset).ok_or_else(|| {
            format!(
                "corrupted offload binary: {what} at offset {offset} lies beyond its {len} bytes"
            )
        })
    };
    let u64_field = |offset: usize, what: &str| field(offset, u64_at, what);
    let offset_of = |value: u64, what: &str| {
        usize::try_from(value)
            .ok()
            .filter(|&v| v <= len)
            .ok_or_else(|| {
                format!("corrupted offload binary: {what} {value:#x} lies beyond its {len} bytes")
            })
    };
    let entry = offset_of(u64_field(16, "entry offset")?, "entry offset")?;
    // The entry's image kind (bitcode for JIT is passed on: no plugin classifies it as
    // runnable, so it ends as "no plugin runs" rather than as a registration error).
    field(entry, |b, o| u16_at(b, o).map(u64::from), "image kind")?;
    let strings = offset_of(
        u64_field(entry + 8, "string table offset")?,
        "string table offset",
    )?;
    let string_count = u64_field(entry + 16, "string count")?;
    let image_offset = offset_of(u64_field(entry + 24, "image offset")?, "image offset")?;
    let image_size = u64_field(entry + 32, "image size")?;
    let image_len = usize::try_from(image_size)
        .ok()
        .filter(|&size| image_offset.checked_add(size).is_some_and(|end| end <= len))
        .ok_or_else(|| format!("corrupted offload binary: image of {image_size} bytes at offset {image_offset} lies beyond its {len} bytes"))?;
    if string_count > (len as u64) / 16 {
        return Err(format!(
            "corrupted offload binary: {string_count} strings cannot fit in {len} bytes"
        ));
    }
    let c_string_at = |offset: u64| -> Result<String, String> {
        let tail = usize::try_from(offset)
            .ok()
            .and_then(|o| bytes.get(o..))
            .ok_or_else(|| {
                format!(
                    "corrupted offload binary: string at {offset:#x} lies beyond its {len} bytes"
                )
            })?;
        let end = tail.iter().position(|&b| b == 0).ok_or_else(|| {
            format!("corrupted offload binary: unterminated string at {offset:#x}")
        })?;
        Ok(String::from_utf8_lossy(&tail[..end]).into_owned())
    };
    let (mut triple, mut arch) = (String::new(), String::new());
    for i in 0..string_count as usize {
        let at = strings + i * 16;
        let key = c_string_at(u64_field(at, "string key")?)?;
        let value = c_string_at(u64_field(at + 8, "string value")?)?;
        match key.as_str() {
            "triple" => triple = value,
            "arch" => arch = value,
            _ => {}
        }
    }
    Ok(ContainedImage {
        offset: image_offset,
        len: image_len,
        triple,
        arch,
    })
}

/// Builders of small images for tests (of this crate and of the backends).
#[doc(hidden)]
pub mod testing;

#[cfg(test)]
mod tests;
