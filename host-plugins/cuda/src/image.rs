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
mod tests {
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
