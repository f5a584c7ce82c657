//! Builders of small images for tests (of this crate and of the backends): ELF headers,
//! ELF files with symbol tables, `OffloadBinary` containers.

use rustomp_abi::{image_kind, OFFLOAD_BINARY_MAGIC};

/// A minimal 64-byte ELF header with the given machine, ABI version and flags (a CUDA ELF
/// is an executable, the others shared objects, as the linkers write them).
pub fn elf(machine: u16, abi_version: u8, flags: u32) -> Vec<u8> {
    let mut h = vec![0u8; 64];
    h[..4].copy_from_slice(b"\x7fELF");
    h[4] = 2; // 64-bit
    h[5] = 1; // little endian
    h[6] = 1;
    h[7] = 0x41;
    h[8] = abi_version;
    let object_type: u16 = if machine == super::machine::CUDA {
        2
    } else {
        3
    };
    h[16..18].copy_from_slice(&object_type.to_le_bytes());
    h[18..20].copy_from_slice(&machine.to_le_bytes());
    h[20..24].copy_from_slice(&1u32.to_le_bytes());
    h[48..52].copy_from_slice(&flags.to_le_bytes());
    h[52..54].copy_from_slice(&64u16.to_le_bytes());
    h
}

/// An ELF with a string table and a symbol table naming `names` (what nvlink and lld
/// write, reduced to the parts the readers use). Besides a CUDA ELF it is a loadable shared
/// object: one `PT_LOAD` mapping the whole file at address 0 and a `.dynamic` section with
/// only its terminator, so it passes `validate`.
pub fn elf_with_symbols(machine: u16, flags: u32, names: &[&str]) -> Vec<u8> {
    let abi_version = if machine == super::machine::AMDGPU {
        3
    } else {
        8
    };
    let loadable = machine != super::machine::CUDA;
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
    let shstrtab = b"\0.dynamic\0.shstrtab\0";
    let mut out = elf(machine, abi_version, flags);
    let phnum: u16 = if loadable { 2 } else { 0 };
    out.resize(64 + 56 * usize::from(phnum), 0);
    let strtab_at = out.len() as u64;
    out.extend_from_slice(&strtab);
    out.resize(out.len().next_multiple_of(8), 0);
    let symtab_at = out.len() as u64;
    out.extend_from_slice(&symtab);
    let dynamic_at = out.len() as u64;
    out.extend_from_slice(&[0u8; 16]);
    let shstrtab_at = out.len() as u64;
    out.extend_from_slice(shstrtab);
    out.resize(out.len().next_multiple_of(8), 0);
    let shoff = out.len() as u64;
    let mut section = |name: u32, kind: u32, flags: u64, offset: u64, size: u64, link: u32| {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(&name.to_le_bytes());
        h[4..8].copy_from_slice(&kind.to_le_bytes());
        h[8..16].copy_from_slice(&flags.to_le_bytes());
        // Loaded sections sit at their file offset.
        let address = if flags & 2 != 0 { offset } else { 0 };
        h[16..24].copy_from_slice(&address.to_le_bytes());
        h[24..32].copy_from_slice(&offset.to_le_bytes());
        h[32..40].copy_from_slice(&size.to_le_bytes());
        h[40..44].copy_from_slice(&link.to_le_bytes());
        out.extend_from_slice(&h);
    };
    section(0, 0, 0, 0, 0, 0);
    section(0, 3, 0, strtab_at, strtab.len() as u64, 0);
    section(0, 2, 0, symtab_at, symtab.len() as u64, 1);
    // SHT_DYNAMIC, SHF_WRITE | SHF_ALLOC.
    section(1, 6, 3, dynamic_at, 16, 1);
    section(10, 3, 0, shstrtab_at, shstrtab.len() as u64, 0);
    out[40..48].copy_from_slice(&shoff.to_le_bytes());
    out[58..60].copy_from_slice(&64u16.to_le_bytes());
    out[60..62].copy_from_slice(&5u16.to_le_bytes());
    out[62..64].copy_from_slice(&4u16.to_le_bytes());
    if loadable {
        let len = out.len() as u64;
        out[32..40].copy_from_slice(&64u64.to_le_bytes());
        out[54..56].copy_from_slice(&56u16.to_le_bytes());
        out[56..58].copy_from_slice(&phnum.to_le_bytes());
        let mut segment = |at: usize, kind: u32, flags: u32, offset: u64, size: u64, align: u64| {
            let h = &mut out[at..at + 56];
            h[..4].copy_from_slice(&kind.to_le_bytes());
            h[4..8].copy_from_slice(&flags.to_le_bytes());
            // Offset, virtual and physical address: all the same.
            for field in [8, 16, 24] {
                h[field..field + 8].copy_from_slice(&offset.to_le_bytes());
            }
            h[32..40].copy_from_slice(&size.to_le_bytes());
            h[40..48].copy_from_slice(&size.to_le_bytes());
            h[48..56].copy_from_slice(&align.to_le_bytes());
        };
        // PT_LOAD (read, write, execute), PT_DYNAMIC (read, write).
        segment(64, 1, 7, 0, len, 0x1000);
        segment(120, 2, 6, dynamic_at, 16, 8);
    }
    out
}

/// An `OffloadBinary` around `image` with the given strings.
pub fn offload_binary(image: &[u8], strings: &[(&str, &str)]) -> Vec<u8> {
    let mut out = vec![0u8; 32 + 40];
    out[..4].copy_from_slice(&OFFLOAD_BINARY_MAGIC);
    out[4..8].copy_from_slice(&1u32.to_le_bytes());
    out[16..24].copy_from_slice(&32u64.to_le_bytes());
    out[24..32].copy_from_slice(&40u64.to_le_bytes());
    out[32..34].copy_from_slice(&image_kind::OBJECT.to_le_bytes());
    let table_at = out.len();
    out.resize(table_at + 16 * strings.len(), 0);
    let mut pairs = Vec::new();
    for (key, value) in strings {
        let k = out.len();
        out.extend_from_slice(key.as_bytes());
        out.push(0);
        let v = out.len();
        out.extend_from_slice(value.as_bytes());
        out.push(0);
        pairs.push((k as u64, v as u64));
    }
    for (i, (k, v)) in pairs.into_iter().enumerate() {
        out[table_at + 16 * i..table_at + 16 * i + 8].copy_from_slice(&k.to_le_bytes());
        out[table_at + 16 * i + 8..table_at + 16 * i + 16].copy_from_slice(&v.to_le_bytes());
    }
    let image_at = out.len();
    out.extend_from_slice(image);
    let size = out.len() as u64;
    out[8..16].copy_from_slice(&size.to_le_bytes());
    out[32 + 8..32 + 16].copy_from_slice(&(table_at as u64).to_le_bytes());
    out[32 + 16..32 + 24].copy_from_slice(&(strings.len() as u64).to_le_bytes());
    out[32 + 24..32 + 32].copy_from_slice(&(image_at as u64).to_le_bytes());
    out[32 + 32..32 + 40].copy_from_slice(&(image.len() as u64).to_le_bytes());
    out
}
