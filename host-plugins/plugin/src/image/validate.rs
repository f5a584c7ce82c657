//! Checks of an image's headers before any loader sees it.
//!
//! glibc's `dlopen`, the CUDA driver (`cuModuleLoadData`, which takes no length) and the HSA
//! loader trust what an image's headers say: a segment that ends beyond the file is a SIGBUS
//! when touched, a shifted `PT_LOAD` or `PT_DYNAMIC` makes the dynamic linker read and write
//! through wild addresses, a read-only segment under the relocations is a SIGSEGV. [`validate`]
//! reads every header those loaders use (with the `object` crate's bounds-checked ELF reader),
//! checks that what it describes lies inside the image and agrees with the section table, and
//! names the first field at fault and its offset in the image.
//!
//! Why one file of about 800 lines: it is one pass over the headers in the order a loader reads
//! them (identification, header, segments, sections, dynamic section, relocations), each step
//! relying on what the earlier ones proved; split by header kind, a reader would have to follow
//! that order across files. Its tests are the corrupted-image runs (`cargo xtask corrupt`) and
//! the fuzz targets, plus `image/tests.rs`.

use super::{classify, u16_at, u32_at, u64_at, ImageKind};
use object::elf::{self, FileHeader64, ProgramHeader64, SectionHeader64};
use object::read::elf::{
    Dyn as _, FileHeader as _, ProgramHeader as _, Rela as _, SectionHeader as _,
};
use object::LittleEndian as LE;

type Header = FileHeader64<LE>;
type Segment = ProgramHeader64<LE>;
type Section = SectionHeader64<LE>;

const EHDR_SIZE: u64 = 64;
const PHDR_SIZE: u64 = 56;
const SHDR_SIZE: u64 = 64;
const DYN_SIZE: u64 = 16;
const RELA_SIZE: u64 = 24;
const SYM_SIZE: u64 = 24;
/// More than any real image maps (64 TiB), less than what wraps the address arithmetic.
const MAX_SPAN: u64 = 1 << 46;

/// Reads the kind of `bytes` and checks the headers its loader will trust. `Err` names the
/// field at fault and where it is (offsets are from the start of `bytes`).
pub fn validate(bytes: &[u8]) -> Result<ImageKind, String> {
    let kind = classify(bytes).ok_or_else(|| {
        if bytes.starts_with(b"\x7fELF") {
            elf_ident_fault(bytes)
        } else {
            format!(
                "not an image any plugin runs: no ELF, PTX or fatbinary header ({} bytes)",
                bytes.len()
            )
        }
    })?;
    match &kind {
        ImageKind::Ptx { .. } => check_ptx(bytes)?,
        ImageKind::Fatbinary => check_fatbinary(bytes)?,
        ImageKind::HostElf | ImageKind::AmdgpuCodeObject { .. } => {
            let elf = Elf::read(bytes)?;
            elf.expect_type(&[elf::ET_DYN.0])?;
            elf.check_tables()?;
            elf.check_loadable()?;
        }
        ImageKind::Cubin { .. } => {
            let elf = Elf::read(bytes)?;
            elf.expect_type(&[elf::ET_EXEC.0, elf::ET_DYN.0, elf::ET_REL.0])?;
            elf.check_tables()?;
        }
        ImageKind::OtherElf { .. } => Elf::read(bytes)?.check_tables()?,
    }
    Ok(kind)
}

/// Why an image that starts with the ELF magic is no ELF any plugin reads: the first
/// identification byte at fault, else the size.
fn elf_ident_fault(bytes: &[u8]) -> String {
    let checks = [
        (4, 2, "EI_CLASS", "ELFCLASS64 (2)"),
        (5, 1, "EI_DATA", "ELFDATA2LSB (1)"),
        (6, 1, "EI_VERSION", "EV_CURRENT (1)"),
    ];
    for (offset, expected, field, meaning) in checks {
        match bytes.get(offset) {
            Some(&b) if b == expected => {}
            Some(&b) => {
                return format!("ELF header: {field} {b:#x} at offset {offset:#x} is not {meaning}")
            }
            None => break,
        }
    }
    format!(
        "ELF header at offset 0: truncated or not a 64-bit little-endian ELF ({} bytes)",
        bytes.len()
    )
}

/// PTX goes to the driver as a C string: it must be text, and end at its NUL or at the
/// image's end (the backend adds the terminator).
fn check_ptx(bytes: &[u8]) -> Result<(), String> {
    let text = bytes.split(|&b| b == 0).next().unwrap_or_default();
    if let Err(e) = std::str::from_utf8(text) {
        return Err(format!(
            "PTX text: byte {:#x} at offset {:#x} is not UTF-8",
            text[e.valid_up_to()],
            e.valid_up_to()
        ));
    }
    Ok(())
}

/// A fatbinary: its header, then entries of (kind u16, version u16, header size u32, payload
/// size u64, ...), each followed by its payload, all inside the header's size.
fn check_fatbinary(bytes: &[u8]) -> Result<(), String> {
    let len = bytes.len() as u64;
    let header_size = u64::from(u16_at(bytes, 6).ok_or("fatbinary header at offset 0: truncated")?);
    let body = u64_at(bytes, 8).ok_or("fatbinary header at offset 0: truncated")?;
    if header_size < 16 {
        return Err(format!(
            "fatbinary header size {header_size} at offset 0x6: smaller than the header"
        ));
    }
    let end = header_size
        .checked_add(body)
        .filter(|&end| end <= len)
        .ok_or_else(|| {
            format!("fatbinary size {body:#x} at offset 0x8: ends beyond the image's {len} bytes")
        })?;
    let mut at = header_size;
    while at < end {
        let field = |offset: u64| usize::try_from(at + offset).ok();
        let entry_header = field(4).and_then(|o| u32_at(bytes, o)).map(u64::from);
        let payload = field(8).and_then(|o| u64_at(bytes, o));
        let (Some(entry_header), Some(payload)) = (entry_header, payload) else {
            return Err(format!("fatbinary entry at offset {at:#x}: truncated"));
        };
        if entry_header < 16 {
            return Err(format!("fatbinary entry at offset {at:#x}: header size {entry_header} is smaller than its fields"));
        }
        at = at
            .checked_add(entry_header)
            .and_then(|a| a.checked_add(payload))
            .filter(|&next| next <= end)
            .ok_or_else(|| format!("fatbinary entry at offset {at:#x}: header {entry_header:#x} + payload {payload:#x} bytes end beyond the fatbinary's {end:#x}"))?;
    }
    Ok(())
}

/// A 64-bit little-endian ELF whose header and header tables lie inside it.
struct Elf<'a> {
    bytes: &'a [u8],
    header: &'a Header,
    segments: &'a [Segment],
    sections: &'a [Section],
    phoff: u64,
    shoff: u64,
}

/// The name of a segment type, for messages.
fn segment_type_name(p_type: u32) -> String {
    match elf::ProgramType(p_type) {
        elf::PT_NULL => "PT_NULL".into(),
        elf::PT_LOAD => "PT_LOAD".into(),
        elf::PT_DYNAMIC => "PT_DYNAMIC".into(),
        elf::PT_INTERP => "PT_INTERP".into(),
        elf::PT_NOTE => "PT_NOTE".into(),
        elf::PT_PHDR => "PT_PHDR".into(),
        elf::PT_TLS => "PT_TLS".into(),
        elf::PT_GNU_EH_FRAME => "PT_GNU_EH_FRAME".into(),
        elf::PT_GNU_STACK => "PT_GNU_STACK".into(),
        elf::PT_GNU_RELRO => "PT_GNU_RELRO".into(),
        elf::PT_GNU_PROPERTY => "PT_GNU_PROPERTY".into(),
        _ => format!("type {p_type:#x}"),
    }
}

/// One `PT_LOAD` segment, as the loader maps it.
#[derive(Clone, Copy)]
struct Load {
    index: usize,
    offset: u64,
    vaddr: u64,
    filesz: u64,
    memsz: u64,
    flags: u32,
}

impl Load {
    fn contains(&self, addr: u64, size: u64) -> bool {
        addr >= self.vaddr
            && addr
                .checked_add(size)
                .is_some_and(|end| end <= self.vaddr + self.memsz)
    }
    /// Whether `[addr, addr + size)` is backed by the file, at the file offset `offset` when
    /// given.
    fn maps_file(&self, addr: u64, size: u64, offset: Option<u64>) -> bool {
        addr >= self.vaddr
            && addr
                .checked_add(size)
                .is_some_and(|end| end <= self.vaddr + self.filesz)
            && offset.is_none_or(|o| o >= self.offset && o - self.offset == addr - self.vaddr)
    }
}

impl<'a> Elf<'a> {
    fn read(bytes: &'a [u8]) -> Result<Self, String> {
        let header = Header::parse(bytes).map_err(|e| format!("ELF header at offset 0: {e}"))?;
        let e = LE;
        if !header.is_class_64() || !header.is_little_endian() {
            return Err("ELF header at offset 0: not 64-bit little-endian".into());
        }
        if header.e_version(e) != 1 {
            return Err(format!(
                "ELF header field e_version at offset 0x14: {}, expected 1",
                header.e_version(e)
            ));
        }
        if u64::from(header.e_ehsize(e)) != EHDR_SIZE {
            return Err(format!(
                "ELF header field e_ehsize at offset 0x34: {}, expected {EHDR_SIZE}",
                header.e_ehsize(e)
            ));
        }
        let (phoff, shoff) = (header.e_phoff(e), header.e_shoff(e));
        let segments = header.program_headers(e, bytes).map_err(|err| {
            format!(
                "program header table (e_phoff {phoff:#x} at offset 0x20, e_phentsize {} at 0x36, e_phnum {} at 0x38) in {} bytes: {err}",
                header.e_phentsize(e),
                header.e_phnum(e),
                bytes.len()
            )
        })?;
        let sections = header.section_headers(e, bytes).map_err(|err| {
            format!(
                "section header table (e_shoff {shoff:#x} at offset 0x28, e_shentsize {} at 0x3a, e_shnum {} at 0x3c) in {} bytes: {err}",
                header.e_shentsize(e),
                header.e_shnum(e),
                bytes.len()
            )
        })?;
        if !sections.is_empty() {
            let index = header.e_shstrndx(e).0;
            let names = sections.get(usize::from(index));
            if index != 0 && names.is_none_or(|s| s.sh_type(e) != elf::SHT_STRTAB) {
                return Err(format!("ELF header field e_shstrndx at offset 0x3e: {index} is not a string table section of the {}", sections.len()));
            }
        }
        Ok(Self {
            bytes,
            header,
            segments,
            sections,
            phoff,
            shoff,
        })
    }

    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn expect_type(&self, allowed: &[u16]) -> Result<(), String> {
        let t = self.header.e_type(LE).0;
        if allowed.contains(&t) {
            return Ok(());
        }
        Err(format!(
            "ELF header field e_type at offset 0x10: {t}, expected {}",
            allowed
                .iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join(" or ")
        ))
    }

    /// "program header 3 (PT_LOAD) at offset 0xe8".
    fn segment_at(&self, i: usize) -> String {
        let p_type = self.segments[i].p_type(LE).0;
        format!(
            "program header {i} ({}) at offset {:#x}",
            segment_type_name(p_type),
            self.phoff + i as u64 * PHDR_SIZE
        )
    }

    fn section_name(&self, i: usize) -> String {
        let e = LE;
        let names = usize::from(self.header.e_shstrndx(e).0);
        let name = self.sections.get(names).and_then(|table| {
            let (offset, size) = table.file_range(e)?;
            let strings = self.bytes.get(
                usize::try_from(offset).ok()?..usize::try_from(offset.checked_add(size)?).ok()?,
            )?;
            let tail = strings.get(usize::try_from(self.sections[i].sh_name(e)).ok()?..)?;
            let end = tail.iter().position(|&b| b == 0)?;
            std::str::from_utf8(&tail[..end]).ok().map(str::to_owned)
        });
        name.unwrap_or_default()
    }

    /// "section 12 (.text) at offset 0x3a90".
    fn section_at(&self, i: usize) -> String {
        format!(
            "section {i} ({}) at offset {:#x}",
            self.section_name(i),
            self.shoff + i as u64 * SHDR_SIZE
        )
    }

    /// Every segment's and section's file range lies inside the image.
    fn check_tables(&self) -> Result<(), String> {
        let e = LE;
        let len = self.len();
        for (i, p) in self.segments.iter().enumerate() {
            let (offset, filesz) = (p.p_offset(e), p.p_filesz(e));
            if offset.checked_add(filesz).is_none_or(|end| end > len) {
                return Err(format!("{}: p_offset {offset:#x} + p_filesz {filesz:#x} ends beyond the image's {len} bytes", self.segment_at(i)));
            }
        }
        let count = self.sections.len() as u64;
        for (i, s) in self.sections.iter().enumerate() {
            if let Some((offset, size)) = s.file_range(e) {
                if offset.checked_add(size).is_none_or(|end| end > len) {
                    return Err(format!("{}: sh_offset {offset:#x} + sh_size {size:#x} ends beyond the image's {len} bytes", self.section_at(i)));
                }
            }
            if u64::from(s.sh_link(e)) >= count.max(1) {
                return Err(format!(
                    "{}: sh_link {} names no section (there are {count})",
                    self.section_at(i),
                    s.sh_link(e)
                ));
            }
        }
        Ok(())
    }

    fn loads(&self) -> Vec<Load> {
        let e = LE;
        self.segments
            .iter()
            .enumerate()
            .filter(|(_, p)| p.p_type(e) == elf::PT_LOAD)
            .map(|(index, p)| Load {
                index,
                offset: p.p_offset(e),
                vaddr: p.p_vaddr(e),
                filesz: p.p_filesz(e),
                memsz: p.p_memsz(e),
                flags: p.p_flags(e).0,
            })
            .collect()
    }

    /// What a dynamic loader maps and reads: the `PT_LOAD` segments, the segments it reads
    /// through them (`PT_DYNAMIC`, notes, TLS, RELRO, the unwinder's `PT_GNU_EH_FRAME`), the
    /// dynamic section's tables and the relocations, against the section table.
    fn check_loadable(&self) -> Result<(), String> {
        let e = LE;
        let loads = self.loads();
        if loads.is_empty() {
            return Err(format!(
                "program header table at offset {:#x}: no PT_LOAD segment",
                self.phoff
            ));
        }
        let mut previous_end = 0u64;
        for (n, load) in loads.iter().enumerate() {
            let at = self.segment_at(load.index);
            let p = &self.segments[load.index];
            let align = p.p_align(e);
            if load.memsz == 0 {
                return Err(format!("{at}: p_memsz is 0"));
            }
            if load.filesz > load.memsz {
                return Err(format!(
                    "{at}: p_filesz {:#x} exceeds p_memsz {:#x}",
                    load.filesz, load.memsz
                ));
            }
            if load
                .vaddr
                .checked_add(load.memsz)
                .is_none_or(|end| end > MAX_SPAN)
            {
                return Err(format!(
                    "{at}: p_vaddr {:#x} + p_memsz {:#x} is beyond any address space",
                    load.vaddr, load.memsz
                ));
            }
            if align > 1
                && (!align.is_power_of_two()
                    || (load.vaddr.wrapping_sub(load.offset)) & (align - 1) != 0)
            {
                return Err(format!("{at}: p_align {align:#x} is not a power of two dividing p_vaddr {:#x} - p_offset {:#x}", load.vaddr, load.offset));
            }
            if n > 0 && load.vaddr < previous_end {
                return Err(format!("{at}: p_vaddr {:#x} is below the end {previous_end:#x} of the PT_LOAD before it (PT_LOAD segments are sorted and disjoint)", load.vaddr));
            }
            previous_end = load.vaddr + load.memsz;
        }
        self.check_sections_in_segments(&loads)?;
        let mut dynamic = None;
        for (i, p) in self.segments.iter().enumerate() {
            let p_type = p.p_type(e);
            let (offset, vaddr, filesz, memsz) =
                (p.p_offset(e), p.p_vaddr(e), p.p_filesz(e), p.p_memsz(e));
            let at = || self.segment_at(i);
            match p_type {
                elf::PT_LOAD | elf::PT_NULL | elf::PT_GNU_STACK => continue,
                elf::PT_DYNAMIC if dynamic.is_some() => {
                    return Err(format!("{}: a second PT_DYNAMIC", at()))
                }
                elf::PT_DYNAMIC => dynamic = Some(i),
                _ => {}
            }
            if filesz == 0 && memsz == 0 {
                continue;
            }
            if filesz > memsz {
                return Err(format!(
                    "{}: p_filesz {filesz:#x} exceeds p_memsz {memsz:#x}",
                    at()
                ));
            }
            // TLS beyond its initialized part is per-thread memory, not in the segment.
            let in_memory = if p_type == elf::PT_TLS { filesz } else { memsz };
            let Some(load) = loads.iter().find(|l| l.contains(vaddr, in_memory)) else {
                return Err(format!(
                    "{}: [p_vaddr {vaddr:#x}, + {in_memory:#x}) is not inside one PT_LOAD segment",
                    at()
                ));
            };
            if filesz > 0 && !load.maps_file(vaddr, filesz, Some(offset)) {
                return Err(format!(
                    "{}: p_offset {offset:#x} and p_vaddr {vaddr:#x} disagree with {}",
                    at(),
                    self.segment_at(load.index)
                ));
            }
            let align = p.p_align(e);
            if p_type == elf::PT_TLS && align > 1 && !align.is_power_of_two() {
                return Err(format!(
                    "{}: p_align {align:#x} is not a power of two",
                    at()
                ));
            }
            // lld sizes PT_PHDR for the segments it planned: an image without code (no
            // executable segment, as clang-22 links an amdgcn image whose kernels are all
            // gone) has one table entry fewer than PT_PHDR covers.
            let table = self.segments.len() as u64 * PHDR_SIZE;
            if p_type == elf::PT_PHDR
                && (offset != self.phoff || (filesz != table && filesz != table + PHDR_SIZE))
            {
                return Err(format!("{}: describes [{offset:#x}, + {filesz:#x}), not the program header table at e_phoff {:#x}", at(), self.phoff));
            }
            if p_type == elf::PT_NOTE || p_type == elf::PT_GNU_PROPERTY {
                self.check_notes(i, offset, filesz, align)?;
            }
            if p_type == elf::PT_GNU_RELRO {
                self.check_relro(i, vaddr, memsz)?;
            }
            if p_type == elf::PT_GNU_EH_FRAME || p_type == elf::PT_DYNAMIC {
                let section_type = if p_type == elf::PT_DYNAMIC {
                    Some(elf::SHT_DYNAMIC)
                } else {
                    None
                };
                self.check_matches_section(
                    i,
                    section_type,
                    if p_type == elf::PT_GNU_EH_FRAME {
                        ".eh_frame_hdr"
                    } else {
                        ".dynamic"
                    },
                )?;
            }
        }
        let dynamic = dynamic.ok_or_else(|| {
            format!(
                "program header table at offset {:#x}: no PT_DYNAMIC segment",
                self.phoff
            )
        })?;
        self.check_dynamic(dynamic, &loads)
    }

    /// Every allocated section lies in a `PT_LOAD` that maps it from its file offset, with the
    /// access it needs: so no segment's address, offset, size or flags was changed alone.
    fn check_sections_in_segments(&self, loads: &[Load]) -> Result<(), String> {
        let e = LE;
        if self.sections.is_empty() {
            return Err(format!("ELF header field e_shoff at offset 0x28: {:#x}, no section header table to check the segments against", self.shoff));
        }
        let mut has_tls_sections = false;
        for (i, s) in self.sections.iter().enumerate() {
            let flags = s.sh_flags(e).0;
            let (addr, size) = (s.sh_addr(e), s.sh_size(e));
            if flags & elf::SHF_ALLOC.0 == 0 || size == 0 {
                continue;
            }
            let nobits = s.sh_type(e) == elf::SHT_NOBITS;
            if flags & elf::SHF_TLS.0 != 0 {
                has_tls_sections = true;
                if nobits {
                    continue;
                }
            }
            let Some(load) = loads.iter().find(|l| l.contains(addr, size)) else {
                return Err(format!(
                    "{}: [sh_addr {addr:#x}, + {size:#x}) is not inside any PT_LOAD segment",
                    self.section_at(i)
                ));
            };
            let at = || {
                format!(
                    "{} (holding {})",
                    self.segment_at(load.index),
                    self.section_at(i)
                )
            };
            if !nobits && !load.maps_file(addr, size, Some(s.sh_offset(e))) {
                return Err(format!("{}: p_offset {:#x}, p_vaddr {:#x}, p_filesz {:#x} do not map the section's file bytes at {:#x}", at(), load.offset, load.vaddr, load.filesz, s.sh_offset(e)));
            }
            let needs = [
                (true, elf::PF_R.0, "readable"),
                (flags & elf::SHF_WRITE.0 != 0, elf::PF_W.0, "writable"),
                (flags & elf::SHF_EXECINSTR.0 != 0, elf::PF_X.0, "executable"),
            ];
            for (needed, bit, what) in needs {
                if needed && load.flags & bit == 0 {
                    return Err(format!("{}: p_flags {:#x} is not {what}", at(), load.flags));
                }
            }
        }
        let has_tls_segment = self.segments.iter().any(|p| p.p_type(e) == elf::PT_TLS);
        if has_tls_sections && !has_tls_segment {
            return Err(format!(
                "program header table at offset {:#x}: thread-local sections but no PT_TLS segment",
                self.phoff
            ));
        }
        Ok(())
    }

    /// A segment that names a section's contents (`PT_DYNAMIC`, `PT_GNU_EH_FRAME`) describes
    /// exactly that section, when the section table has it.
    fn check_matches_section(
        &self,
        i: usize,
        section_type: Option<elf::SectionType>,
        name: &str,
    ) -> Result<(), String> {
        let e = LE;
        let p = &self.segments[i];
        let found = self
            .sections
            .iter()
            .enumerate()
            .find(|(j, s)| match section_type {
                Some(t) => s.sh_type(e) == t,
                None => self.section_name(*j) == name,
            });
        let Some((j, s)) = found else { return Ok(()) };
        if (p.p_offset(e), p.p_vaddr(e), p.p_filesz(e))
            != (s.sh_offset(e), s.sh_addr(e), s.sh_size(e))
        {
            return Err(format!(
                "{}: [p_offset {:#x}, p_vaddr {:#x}, + {:#x}) is not {} [{:#x}, {:#x}, + {:#x})",
                self.segment_at(i),
                p.p_offset(e),
                p.p_vaddr(e),
                p.p_filesz(e),
                self.section_at(j),
                s.sh_offset(e),
                s.sh_addr(e),
                s.sh_size(e)
            ));
        }
        Ok(())
    }

    /// Note headers (name size, descriptor size, type) and their padded contents fit.
    fn check_notes(&self, i: usize, offset: u64, size: u64, align: u64) -> Result<(), String> {
        let step = if align == 8 { 8 } else { 4 };
        let pad = |n: u64| n.checked_add(step - 1).map(|n| n & !(step - 1));
        let mut at = offset;
        let end = offset + size;
        while at < end {
            let read = |o: u64| {
                usize::try_from(o)
                    .ok()
                    .and_then(|o| u32_at(self.bytes, o))
                    .map(u64::from)
            };
            let next = match (read(at), read(at + 4)) {
                (Some(name), Some(desc)) => pad(name)
                    .zip(pad(desc))
                    .and_then(|(n, d)| (at + 12).checked_add(n)?.checked_add(d)),
                _ => None,
            };
            at = next.filter(|&next| next <= end).ok_or_else(|| {
                format!(
                    "{}: the note at offset {at:#x} runs past the segment's end {end:#x}",
                    self.segment_at(i)
                )
            })?;
        }
        Ok(())
    }

    /// The pages `PT_GNU_RELRO` makes read-only after relocation hold no code and no data
    /// written later (only what linkers put there: the GOT, `.dynamic`, init/fini arrays,
    /// `.data.rel.ro`, TLS images).
    fn check_relro(&self, i: usize, vaddr: u64, memsz: u64) -> Result<(), String> {
        const PAGE: u64 = 4096;
        let e = LE;
        // glibc rounds the start down and the end down to pages.
        let (start, end) = (vaddr & !(PAGE - 1), (vaddr + memsz) & !(PAGE - 1));
        let relro_name = |name: &str| {
            [
                ".init_array",
                ".fini_array",
                ".preinit_array",
                ".data.rel.ro",
                ".tdata",
                ".tbss",
                ".ctors",
                ".dtors",
                ".jcr",
                ".eh_frame",
                ".gcc_except_table",
            ]
            .iter()
            .any(|prefix| name.starts_with(prefix))
                || name == ".dynamic"
                || name == ".got"
                || name == ".relro_padding" // lld's NOBITS fill of RELRO's last page (LLVM 18+)
        };
        for (j, s) in self.sections.iter().enumerate() {
            let flags = s.sh_flags(e).0;
            let (addr, size) = (s.sh_addr(e), s.sh_size(e));
            if flags & elf::SHF_ALLOC.0 == 0
                || size == 0
                || addr >= end
                || addr.saturating_add(size) <= start
            {
                continue;
            }
            if flags & elf::SHF_TLS.0 != 0 && s.sh_type(e) == elf::SHT_NOBITS {
                continue;
            }
            let executable = flags & elf::SHF_EXECINSTR.0 != 0;
            let name = self.section_name(j);
            // lld ends RELRO on a page boundary inside `.got.plt`, after its three reserved
            // entries, which the loader writes before it protects the pages.
            let reserved_got = name == ".got.plt" && (addr + size).min(end) <= addr + 24;
            let written = flags & elf::SHF_WRITE.0 != 0 && !relro_name(&name) && !reserved_got;
            if executable || written {
                return Err(format!(
                    "{}: [p_vaddr {vaddr:#x}, + {memsz:#x}) would make {} read-only",
                    self.segment_at(i),
                    self.section_at(j)
                ));
            }
        }
        Ok(())
    }

    /// The dynamic section: terminated, its tables inside file-backed memory, string offsets
    /// inside the string table, relocations aimed at writable memory and at existing symbols.
    fn check_dynamic(&self, i: usize, loads: &[Load]) -> Result<(), String> {
        let e = LE;
        let p = &self.segments[i];
        let at = self.segment_at(i);
        let entries = p
            .dynamic(e, self.bytes)
            .map_err(|err| format!("{at}: {err}"))?
            .unwrap_or_default();
        let Some(count) = entries.iter().position(|d| d.d_tag(e) == elf::DT_NULL) else {
            return Err(format!(
                "{at}: no DT_NULL among its {} entries",
                entries.len()
            ));
        };
        let entries = &entries[..count];
        let value = |tag: elf::DynamicTag| {
            entries
                .iter()
                .find(|d| d.d_tag(e) == tag)
                .map(|d| d.d_val(e))
        };
        let entry_at = |n: usize| p.p_offset(e) + n as u64 * DYN_SIZE;
        // The file bytes a dynamic address refers to.
        let file_offset = |addr: u64, size: u64| -> Option<u64> {
            loads
                .iter()
                .find(|l| l.maps_file(addr, size.max(1), None))
                .map(|l| l.offset + (addr - l.vaddr))
        };
        for (tag, want) in [(elf::DT_SYMENT, SYM_SIZE), (elf::DT_RELAENT, RELA_SIZE)] {
            if let Some(n) = entries.iter().position(|d| d.d_tag(e) == tag) {
                if entries[n].d_val(e) != want {
                    return Err(format!(
                        "dynamic entry {n} at offset {:#x}: tag {:#x} is {}, expected {want}",
                        entry_at(n),
                        tag.0,
                        entries[n].d_val(e)
                    ));
                }
            }
        }
        let sized = [
            (elf::DT_STRTAB, Some(elf::DT_STRSZ)),
            (elf::DT_RELA, Some(elf::DT_RELASZ)),
            (elf::DT_JMPREL, Some(elf::DT_PLTRELSZ)),
            (elf::DT_INIT_ARRAY, Some(elf::DT_INIT_ARRAYSZ)),
            (elf::DT_FINI_ARRAY, Some(elf::DT_FINI_ARRAYSZ)),
            (elf::DT_PREINIT_ARRAY, Some(elf::DT_PREINIT_ARRAYSZ)),
            (elf::DT_RELR, Some(elf::DT_RELRSZ)),
            (elf::DT_REL, Some(elf::DT_RELSZ)),
            (elf::DT_SYMTAB, None),
            (elf::DT_HASH, None),
            (elf::DT_GNU_HASH, None),
            (elf::DT_VERSYM, None),
            (elf::DT_VERNEED, None),
            (elf::DT_VERDEF, None),
            (elf::DT_PLTGOT, None),
        ];
        for (n, d) in entries.iter().enumerate() {
            let tag = d.d_tag(e);
            let addr = d.d_val(e);
            if let Some((_, size_tag)) = sized.iter().find(|(t, _)| *t == tag) {
                let size = size_tag.and_then(value).unwrap_or(1);
                if file_offset(addr, size).is_none() {
                    return Err(format!("dynamic entry {n} at offset {:#x}: tag {:#x} names [{addr:#x}, + {size:#x}), outside the file-backed PT_LOAD memory", entry_at(n), tag.0));
                }
            }
            if tag == elf::DT_INIT || tag == elf::DT_FINI {
                let code = loads
                    .iter()
                    .any(|l| l.contains(addr, 1) && l.flags & elf::PF_X.0 != 0);
                if !code {
                    return Err(format!("dynamic entry {n} at offset {:#x}: tag {:#x} names {addr:#x}, outside the executable PT_LOAD memory", entry_at(n), tag.0));
                }
            }
        }
        let strings_size = value(elf::DT_STRSZ).unwrap_or(0);
        let strings = value(elf::DT_STRTAB).and_then(|addr| file_offset(addr, strings_size));
        for (n, d) in entries.iter().enumerate() {
            if !d.is_string(e) {
                continue;
            }
            let offset = d.d_val(e);
            let terminated = strings.is_some_and(|table| {
                offset < strings_size
                    && usize::try_from(table + offset)
                        .ok()
                        .and_then(|from| {
                            self.bytes
                                .get(from..usize::try_from(table + strings_size).ok()?)
                        })
                        .is_some_and(|tail| tail.contains(&0))
            });
            if !terminated {
                return Err(format!("dynamic entry {n} at offset {:#x}: string offset {offset:#x} is outside the {strings_size}-byte DT_STRTAB", entry_at(n)));
            }
        }
        if value(elf::DT_REL).is_some() || value(elf::DT_RELR).is_some() {
            // x86_64 and AMDGPU use RELA; REL and RELR tables would need their own checks.
            return Err(format!(
                "{at}: DT_REL/DT_RELR relocations, which no offload target uses"
            ));
        }
        let symbols = self
            .sections
            .iter()
            .find(|s| s.sh_type(e) == elf::SHT_DYNSYM)
            .map(|s| s.sh_size(e) / SYM_SIZE);
        let text_relocations = value(elf::DT_TEXTREL).is_some()
            || value(elf::DT_FLAGS).is_some_and(|f| f & elf::DF_TEXTREL.0 != 0);
        for (table, size_tag) in [
            (elf::DT_RELA, elf::DT_RELASZ),
            (elf::DT_JMPREL, elf::DT_PLTRELSZ),
        ] {
            let (Some(addr), Some(size)) = (value(table), value(size_tag)) else {
                continue;
            };
            let Some(offset) = file_offset(addr, size) else {
                continue;
            };
            for r in 0..size / RELA_SIZE {
                let at = offset + r * RELA_SIZE;
                let Some(rela) = usize::try_from(at)
                    .ok()
                    .and_then(|a| self.bytes.get(a..a + RELA_SIZE as usize))
                    .and_then(|b| object::pod::from_bytes::<object::elf::Rela64<LE>>(b).ok())
                    .map(|(r, _)| r)
                else {
                    return Err(format!("relocation at offset {at:#x}: outside the image"));
                };
                let target = rela.r_offset(e);
                let writable = loads.iter().any(|l| {
                    l.contains(target, 8) && (text_relocations || l.flags & elf::PF_W.0 != 0)
                });
                if !writable {
                    return Err(format!("relocation at offset {at:#x}: r_offset {target:#x} is not in writable PT_LOAD memory"));
                }
                let symbol = u64::from(rela.r_sym(e, false));
                if symbols.is_some_and(|count| symbol >= count) {
                    return Err(format!("relocation at offset {at:#x}: symbol {symbol} beyond the {} dynamic symbols", symbols.unwrap_or(0)));
                }
            }
        }
        Ok(())
    }
}
