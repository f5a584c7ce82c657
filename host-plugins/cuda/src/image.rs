//! What an NVIDIA image is and which GPUs can run it (pure functions, no driver).
//!
//! clang-22 embeds the device-linked cubin (an ELF with machine `EM_CUDA`, its `sm_XX` in the
//! ELF flags) for `--offload-arch=sm_XX`; an `OffloadBinary` may also carry PTX text, which the
//! driver compiles at load time, or a fatbinary, from which the driver picks.
//!
//! Compatibility follows the hardware rules LLVM's CUDA plugin applies: a cubin runs on GPUs of
//! the same major compute capability with an equal or higher minor one (SASS is not portable
//! across majors); PTX runs on any GPU at or above its target.

/// The triple of every image this plugin runs.
pub const TRIPLE: &str = "nvptx64-nvidia-cuda";

/// ELF machine of CUDA objects (`EM_CUDA`).
const EM_CUDA: u16 = 190;
/// `e_ident[EI_ABIVERSION]` of the older CUDA ELF ABI: the SM number is the low byte of
/// `e_flags`; the newer ABI (version 8) keeps it in bits 8..16.
const ELFABIVERSION_CUDA_V1: u8 = 7;
const FATBIN_MAGIC: [u8; 4] = [0x50, 0xed, 0x55, 0xba];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    /// A device-linked CUDA ELF for one SM (e.g. 90 for sm_90).
    Cubin { sm: u32 },
    /// PTX assembly; its `.target sm_XX`, when found.
    Ptx { sm: Option<u32> },
    /// A fatbinary container; the driver picks the member for the GPU.
    Fatbinary,
}

/// Reads the kind of `bytes`, or `None` when it is none of the NVIDIA formats.
pub fn classify(bytes: &[u8]) -> Option<ImageKind> {
    if bytes.starts_with(b"\x7fELF") {
        return cubin_sm(bytes).map(|sm| ImageKind::Cubin { sm });
    }
    if bytes.starts_with(&FATBIN_MAGIC) {
        return Some(ImageKind::Fatbinary);
    }
    if looks_like_ptx(bytes) {
        return Some(ImageKind::Ptx { sm: ptx_target(bytes) });
    }
    None
}

/// The SM number of a 64-bit little-endian CUDA ELF, from its flags.
pub fn cubin_sm(bytes: &[u8]) -> Option<u32> {
    if bytes.len() < 64 || !bytes.starts_with(b"\x7fELF") || bytes[4] != 2 || bytes[5] != 1 {
        return None;
    }
    let machine = u16::from_le_bytes([bytes[18], bytes[19]]);
    if machine != EM_CUDA {
        return None;
    }
    let flags = u32::from_le_bytes([bytes[48], bytes[49], bytes[50], bytes[51]]);
    let sm = if bytes[8] == ELFABIVERSION_CUDA_V1 { flags & 0xff } else { (flags >> 8) & 0xff };
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
        rest.split(|c: char| c == ',' || c.is_whitespace()).find_map(parse_arch)
    })
}

/// `sm_90`, `sm_90a`, `sm_100f` -> 90, 90, 100.
pub fn parse_arch(arch: &str) -> Option<u32> {
    let digits: String = arch.trim().strip_prefix("sm_")?.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok().filter(|&sm| sm > 0)
}

/// Whether `bytes` holds the whole image its headers describe. The driver's loader takes no
/// length (`cuModuleLoadDataEx`), so a truncated container must be refused before it is passed.
pub fn is_complete(bytes: &[u8], kind: ImageKind) -> bool {
    let u16_at = |o: usize| bytes.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]) as u64);
    let u64_at = |o: usize| bytes.get(o..o + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])));
    let len = bytes.len() as u64;
    match kind {
        ImageKind::Cubin { .. } => {
            // The section and program header tables end within the image.
            let (Some(shoff), Some(shentsize), Some(shnum)) = (u64_at(40), u16_at(58), u16_at(60)) else {
                return false;
            };
            let (Some(phoff), Some(phentsize), Some(phnum)) = (u64_at(32), u16_at(54), u16_at(56)) else {
                return false;
            };
            let ends = |off: u64, size: u64, n: u64| off.checked_add(size * n).is_some_and(|end| end <= len);
            ends(shoff, shentsize, shnum) && ends(phoff, phentsize, phnum)
        }
        // Header: magic u32, version u16, header size u16, size of the rest u64.
        ImageKind::Fatbinary => match (u16_at(6), u64_at(8)) {
            (Some(header), Some(rest)) => header.checked_add(rest).is_some_and(|end| end <= len),
            _ => false,
        },
        ImageKind::Ptx { .. } => true,
    }
}

/// Names of the symbols an image defines that start with `prefix`: from the ELF symbol tables
/// of a cubin, from the identifiers of PTX text (fatbinaries: none). The driver API cannot list
/// globals, and clang-22 names each device constructor (destructor) pointer
/// `__init_array_object_<...>_<priority>` (`__fini_array_object_...`).
pub fn symbols_with_prefix(bytes: &[u8], kind: ImageKind, prefix: &str) -> Vec<String> {
    let mut names = match kind {
        ImageKind::Cubin { .. } => elf_symbol_names(bytes).unwrap_or_default(),
        ImageKind::Ptx { .. } => {
            let text = String::from_utf8_lossy(bytes);
            let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '.';
            text.match_indices(prefix)
                .filter(|(at, _)| !text[..*at].ends_with(is_ident))
                .map(|(at, _)| text[at..].chars().take_while(|&c| is_ident(c)).collect())
                .collect()
        }
        ImageKind::Fatbinary => Vec::new(),
    };
    names.retain(|n| n.starts_with(prefix));
    names.sort();
    names.dedup();
    names
}

/// Every symbol name of a 64-bit little-endian ELF (`None` when the tables are malformed).
fn elf_symbol_names(bytes: &[u8]) -> Option<Vec<String>> {
    let u16_at = |o: u64| -> Option<u64> {
        let o = usize::try_from(o).ok()?;
        bytes.get(o..o.checked_add(2)?).map(|b| u64::from(u16::from_le_bytes([b[0], b[1]])))
    };
    let u32_at = |o: u64| -> Option<u64> {
        let o = usize::try_from(o).ok()?;
        bytes.get(o..o.checked_add(4)?).map(|b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
    };
    let u64_at = |o: u64| -> Option<u64> {
        let o = usize::try_from(o).ok()?;
        bytes.get(o..o.checked_add(8)?).map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    };
    const SHT_SYMTAB: u64 = 2;
    const SYM_SIZE: u64 = 24;
    let (shoff, shentsize, shnum) = (u64_at(40)?, u16_at(58)?, u16_at(60)?);
    let section = |i: u64| shoff.checked_add(i.checked_mul(shentsize)?);
    let mut names = Vec::new();
    for i in 0..shnum {
        let header = section(i)?;
        if u32_at(header + 4)? != SHT_SYMTAB {
            continue;
        }
        let (offset, size, link) = (u64_at(header + 24)?, u64_at(header + 32)?, u32_at(header + 40)?);
        let strings_header = section(link)?;
        let (strings, strings_size) = (u64_at(strings_header + 24)?, u64_at(strings_header + 32)?);
        let table = bytes.get(usize::try_from(strings).ok()?..usize::try_from(strings.checked_add(strings_size)?).ok()?)?;
        for s in 0..size / SYM_SIZE {
            let name = u32_at(offset + s * SYM_SIZE)? as usize;
            let tail = table.get(name..)?;
            let end = tail.iter().position(|&b| b == 0)?;
            if end > 0 {
                names.push(String::from_utf8_lossy(&tail[..end]).into_owned());
            }
        }
    }
    Some(names)
}

/// The priority suffix of a constructor or destructor object name (`..._65535` -> 65535).
pub fn init_priority(name: &str) -> Option<u16> {
    name.rsplit('_').next()?.parse().ok()
}

/// What the front needs to select an image that is not inside an `OffloadBinary` (clang-22
/// points `ImageStart` at the bare cubin): its triple and `sm_XX`.
pub fn describe(bytes: &[u8]) -> Option<(&'static str, String)> {
    match classify(bytes)? {
        ImageKind::Cubin { sm } | ImageKind::Ptx { sm: Some(sm) } => Some((TRIPLE, format!("sm_{sm}"))),
        ImageKind::Ptx { sm: None } | ImageKind::Fatbinary => Some((TRIPLE, String::new())),
    }
}

/// A compute capability, e.g. 9.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ComputeCapability {
    pub major: u32,
    pub minor: u32,
}

impl ComputeCapability {
    pub fn sm(self) -> u32 {
        self.major * 10 + self.minor
    }
}

impl std::fmt::Display for ComputeCapability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sm_{}", self.sm())
    }
}

/// Whether an image of `kind` (with the container's `arch` string, possibly empty) runs on a
/// GPU of capability `cc`; `Err` says why not.
pub fn runs_on(kind: ImageKind, arch: &str, cc: ComputeCapability) -> Result<(), String> {
    match kind {
        ImageKind::Cubin { sm } => {
            let (major, minor) = (sm / 10, sm % 10);
            if major == cc.major && minor <= cc.minor {
                Ok(())
            } else {
                Err(format!("a cubin for sm_{sm} runs only on GPUs sm_{major}{minor}..sm_{major}9, this one is {cc}"))
            }
        }
        ImageKind::Ptx { sm } => match sm.or_else(|| parse_arch(arch)) {
            Some(sm) if sm > cc.sm() => Err(format!("PTX for sm_{sm} needs a GPU of at least that capability, this one is {cc}")),
            _ => Ok(()),
        },
        ImageKind::Fatbinary => Ok(()),
    }
}

/// Whether the image's container triple (empty when unknown) is ours.
pub fn triple_matches(triple: &str) -> bool {
    triple.is_empty() || triple.starts_with("nvptx64")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal 64-byte ELF header with the given machine, ABI version and flags.
    fn elf(machine: u16, abi_version: u8, flags: u32) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = 2; // 64-bit
        h[5] = 1; // little endian
        h[6] = 1;
        h[7] = 0x41;
        h[8] = abi_version;
        h[18..20].copy_from_slice(&machine.to_le_bytes());
        h[48..52].copy_from_slice(&flags.to_le_bytes());
        h
    }

    #[test]
    fn cubin_sm_from_both_elf_abis() {
        // clang-22 + CUDA 13 nvlink for sm_90: ABI version 8, flags 0x06005a04.
        assert_eq!(cubin_sm(&elf(190, 8, 0x0600_5a04)), Some(90));
        // The older ABI keeps the SM in the low byte.
        assert_eq!(cubin_sm(&elf(190, 7, 0x0050_0550)), Some(80));
        assert_eq!(cubin_sm(&elf(62, 8, 0x5a00)), None, "x86_64 is not a cubin");
        assert_eq!(cubin_sm(b"\x7fELF"), None, "truncated");
        assert_eq!(classify(&elf(190, 8, 0x6405)), Some(ImageKind::Cubin { sm: 100 }));
    }

    #[test]
    fn ptx_and_fatbinary_are_recognised() {
        let ptx = b"//\n// Generated by LLVM NVPTX Back-End\n//\n\n.version 8.8\n.target sm_90a\n.address_size 64\n";
        assert_eq!(classify(ptx), Some(ImageKind::Ptx { sm: Some(90) }));
        assert_eq!(ptx_target(b".version 7.0\n.target sm_70, debug\n"), Some(70));
        assert_eq!(classify(&[0x50, 0xed, 0x55, 0xba, 1, 0, 0, 0]), Some(ImageKind::Fatbinary));
        assert_eq!(classify(b"hello"), None);
        assert_eq!(describe(ptx), Some((TRIPLE, "sm_90".to_string())));
        assert_eq!(describe(&elf(190, 8, 0x5a04)), Some((TRIPLE, "sm_90".to_string())));
    }

    #[test]
    fn truncated_images_are_refused() {
        let mut cubin = elf(190, 8, 0x5a04);
        // Section headers: 2 entries of 64 bytes at offset 64.
        cubin[40..48].copy_from_slice(&64u64.to_le_bytes());
        cubin[58..60].copy_from_slice(&64u16.to_le_bytes());
        cubin[60..62].copy_from_slice(&2u16.to_le_bytes());
        let kind = ImageKind::Cubin { sm: 90 };
        assert!(!is_complete(&cubin, kind));
        cubin.resize(64 + 128, 0);
        assert!(is_complete(&cubin, kind));
        let mut fatbin = vec![0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0];
        fatbin.extend_from_slice(&100u64.to_le_bytes());
        assert!(!is_complete(&fatbin, ImageKind::Fatbinary));
        fatbin.resize(116, 0);
        assert!(is_complete(&fatbin, ImageKind::Fatbinary));
        assert!(!is_complete(&fatbin[..10], ImageKind::Fatbinary));
    }

    /// An ELF with a string table and a symbol table naming `names` (what nvlink writes, reduced
    /// to the parts the reader uses).
    pub(crate) fn elf_with_symbols(sm: u32, names: &[&str]) -> Vec<u8> {
        let mut strtab = vec![0u8];
        let mut offsets = Vec::new();
        for n in names {
            offsets.push(strtab.len() as u32);
            strtab.extend_from_slice(n.as_bytes());
            strtab.push(0);
        }
        let mut symtab = vec![0u8; 24]; // the null symbol
        for o in offsets {
            let mut sym = vec![0u8; 24];
            sym[..4].copy_from_slice(&o.to_le_bytes());
            symtab.extend_from_slice(&sym);
        }
        let mut out = elf(190, 8, sm << 8 | 4);
        let strtab_at = out.len() as u64;
        out.extend_from_slice(&strtab);
        let symtab_at = out.len() as u64;
        out.extend_from_slice(&symtab);
        let shoff = out.len() as u64;
        let mut section = |kind: u32, offset: u64, size: u64, link: u32| {
            let mut h = vec![0u8; 64];
            h[4..8].copy_from_slice(&kind.to_le_bytes());
            h[24..32].copy_from_slice(&offset.to_le_bytes());
            h[32..40].copy_from_slice(&size.to_le_bytes());
            h[40..44].copy_from_slice(&link.to_le_bytes());
            out.extend_from_slice(&h);
        };
        section(0, 0, 0, 0);
        section(3, strtab_at, strtab.len() as u64, 0);
        section(2, symtab_at, symtab.len() as u64, 1);
        out[40..48].copy_from_slice(&shoff.to_le_bytes());
        out[58..60].copy_from_slice(&64u16.to_le_bytes());
        out[60..62].copy_from_slice(&3u16.to_le_bytes());
        out
    }

    #[test]
    fn constructor_objects_are_found_by_name() {
        let names = ["__init_array_object__GLOBAL__sub_I_a_cpp_65535", "counter", "__init_array_object_b_101", "__fini_array_object_c_7"];
        let cubin = elf_with_symbols(90, &names);
        let kind = classify(&cubin).unwrap();
        assert!(is_complete(&cubin, kind));
        assert_eq!(
            symbols_with_prefix(&cubin, kind, "__init_array_object_"),
            vec!["__init_array_object__GLOBAL__sub_I_a_cpp_65535".to_string(), "__init_array_object_b_101".to_string()]
        );
        assert_eq!(symbols_with_prefix(&cubin, kind, "__fini_array_object_"), vec!["__fini_array_object_c_7".to_string()]);
        let ptx = b".version 8.8\n.target sm_90\n.visible .const .align 8 .u64 __init_array_object__GLOBAL__sub_I_ctor_$_cpp_4bf8_65535 = _GLOBAL__sub_I_ctor_$_cpp;\n";
        assert_eq!(
            symbols_with_prefix(ptx, classify(ptx).unwrap(), "__init_array_object_"),
            vec!["__init_array_object__GLOBAL__sub_I_ctor_$_cpp_4bf8_65535".to_string()]
        );
        assert_eq!(init_priority("__init_array_object_b_101"), Some(101));
        assert_eq!(init_priority("__init_array_object_x"), None);
        // A symbol table pointing outside the image reads as none, not as a crash.
        let mut broken = cubin.clone();
        let shoff = u64::from_le_bytes(cubin[40..48].try_into().unwrap()) as usize;
        let symtab_offset = shoff + 2 * 64 + 24;
        broken[symtab_offset..symtab_offset + 8].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
        assert!(symbols_with_prefix(&broken, kind, "__init_array_object_").is_empty());
        broken.truncate(shoff + 64);
        assert!(symbols_with_prefix(&broken, kind, "__init_array_object_").is_empty());
    }

    #[test]
    fn arch_strings() {
        assert_eq!(parse_arch("sm_90"), Some(90));
        assert_eq!(parse_arch("sm_90a"), Some(90));
        assert_eq!(parse_arch("sm_100f"), Some(100));
        assert_eq!(parse_arch("gfx90a"), None);
        assert_eq!(parse_arch("sm_"), None);
    }

    #[test]
    fn cubins_run_within_their_major_ptx_at_or_above_its_target() {
        let h100 = ComputeCapability { major: 9, minor: 0 };
        let a100 = ComputeCapability { major: 8, minor: 0 };
        let rtx4090 = ComputeCapability { major: 8, minor: 9 };
        assert!(runs_on(ImageKind::Cubin { sm: 90 }, "sm_90", h100).is_ok());
        assert!(runs_on(ImageKind::Cubin { sm: 80 }, "sm_80", rtx4090).is_ok());
        assert!(runs_on(ImageKind::Cubin { sm: 86 }, "", a100).is_err(), "minor too high");
        let why = runs_on(ImageKind::Cubin { sm: 80 }, "sm_80", h100).unwrap_err();
        assert!(why.contains("sm_80") && why.contains("sm_90"), "{why}");
        assert!(runs_on(ImageKind::Cubin { sm: 90 }, "", a100).is_err());
        assert!(runs_on(ImageKind::Ptx { sm: Some(80) }, "", h100).is_ok());
        assert!(runs_on(ImageKind::Ptx { sm: Some(90) }, "", a100).is_err());
        assert!(runs_on(ImageKind::Ptx { sm: None }, "sm_90", a100).is_err(), "container arch used");
        assert!(runs_on(ImageKind::Fatbinary, "", a100).is_ok());
    }
}
