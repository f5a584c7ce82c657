//! Rebinding an image's references to a symbol: the GOT slots the dynamic loader filled for
//! it are pointed at another function. Each device loads its own copy of an image, and this is
//! how the plugin gives a copy an answer of its own (`device_number`: `omp_get_device_num`;
//! `indirect`: `__kmpc_target_translate_fptr`).

use core::ffi::{c_char, c_int, c_void, CStr};

/// glibc's `struct link_map` (its public prefix).
#[repr(C)]
struct LinkMap {
    l_addr: usize,
    l_name: *const c_char,
    l_ld: *const Elf64Dyn,
}

#[repr(C)]
struct Elf64Dyn {
    d_tag: i64,
    d_val: u64,
}

#[repr(C)]
struct Elf64Rela {
    r_offset: u64,
    r_info: u64,
    r_addend: i64,
}

#[repr(C)]
struct Elf64Sym {
    st_name: u32,
    st_info: u8,
    st_other: u8,
    st_shndx: u16,
    st_value: u64,
    st_size: u64,
}

const DT_NULL: i64 = 0;
const DT_PLTRELSZ: i64 = 2;
const DT_STRTAB: i64 = 5;
const DT_SYMTAB: i64 = 6;
const DT_RELA: i64 = 7;
const DT_RELASZ: i64 = 8;
const DT_JMPREL: i64 = 23;
const R_X86_64_GLOB_DAT: u64 = 6;
const R_X86_64_JUMP_SLOT: u64 = 7;

/// Points every GOT slot of `symbol` in the object `handle` (from `dlopen`) at `target`.
/// Returns how many slots were rewritten (0 when the object does not call `symbol`).
///
/// # Safety
/// `handle` is a live `dlopen` handle and no thread runs code of the object yet; `target` is
/// the address of a function with the symbol's signature.
pub unsafe fn rebind(handle: *mut c_void, symbol: &CStr, target: usize) -> Result<usize, String> {
    let mut map: *const LinkMap = std::ptr::null();
    // SAFETY: RTLD_DI_LINKMAP stores a `struct link_map *` at the given address.
    let rc = unsafe {
        libc::dlinfo(
            handle,
            libc::RTLD_DI_LINKMAP,
            &mut map as *mut *const LinkMap as *mut c_void,
        )
    };
    if rc != 0 || map.is_null() {
        return Err("dlinfo(RTLD_DI_LINKMAP) failed".into());
    }
    // SAFETY: the loader's link map of a loaded object.
    let (load, dynamic) = unsafe { ((*map).l_addr, (*map).l_ld) };
    // glibc relocates the address entries of the dynamic section in place; other loaders may
    // not: an address below the load address is still an offset.
    let address = |value: u64| {
        if (value as usize) < load {
            load + value as usize
        } else {
            value as usize
        }
    };
    let (mut strtab, mut symtab, mut rela, mut rela_size, mut jmprel, mut jmprel_size) =
        (0, 0, 0, 0, 0, 0);
    let mut entry = dynamic;
    loop {
        // SAFETY: the dynamic section is an array of entries ended by DT_NULL.
        let (tag, value) = unsafe { ((*entry).d_tag, (*entry).d_val) };
        match tag {
            DT_NULL => break,
            DT_STRTAB => strtab = address(value),
            DT_SYMTAB => symtab = address(value),
            DT_RELA => rela = address(value),
            DT_RELASZ => rela_size = value as usize,
            DT_JMPREL => jmprel = address(value),
            DT_PLTRELSZ => jmprel_size = value as usize,
            _ => {}
        }
        // SAFETY: not past DT_NULL.
        entry = unsafe { entry.add(1) };
    }
    if strtab == 0 || symtab == 0 {
        return Err("the image has no dynamic symbol table".into());
    }
    let relro = relro_range(load);
    let mut rebound = 0;
    for (table, bytes) in [(rela, rela_size), (jmprel, jmprel_size)] {
        if table == 0 {
            continue;
        }
        let count = bytes / std::mem::size_of::<Elf64Rela>();
        // SAFETY: DT_RELA/DT_JMPREL with their sizes describe arrays of Elf64_Rela.
        let relocations = unsafe { std::slice::from_raw_parts(table as *const Elf64Rela, count) };
        for relocation in relocations {
            let kind = relocation.r_info & 0xffff_ffff;
            if kind != R_X86_64_JUMP_SLOT && kind != R_X86_64_GLOB_DAT {
                continue;
            }
            let index = (relocation.r_info >> 32) as usize;
            // SAFETY: the relocation's symbol index lies in the dynamic symbol table, and its
            // name offset in the string table.
            let name = unsafe {
                let sym = &*(symtab as *const Elf64Sym).add(index);
                CStr::from_ptr((strtab + sym.st_name as usize) as *const c_char)
            };
            if name != symbol {
                continue;
            }
            let slot = load + relocation.r_offset as usize;
            // SAFETY: the slot is the object's GOT entry for this relocation.
            unsafe { write_slot(slot, target, relro)? };
            rebound += 1;
        }
    }
    Ok(rebound)
}

/// The object's read-only-after-relocation range, if it has one.
fn relro_range(load: usize) -> Option<(usize, usize)> {
    struct Search {
        load: usize,
        found: Option<(usize, usize)>,
    }
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info and our `Search`.
        let (info, search) = unsafe { (&*info, &mut *(data as *mut Search)) };
        if info.dlpi_addr as usize != search.load || info.dlpi_phdr.is_null() {
            return 0;
        }
        // SAFETY: the object's program headers, `dlpi_phnum` of them.
        let headers =
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
        search.found = headers
            .iter()
            .find(|h| h.p_type == libc::PT_GNU_RELRO)
            .map(|h| {
                (
                    search.load + h.p_vaddr as usize,
                    search.load + (h.p_vaddr + h.p_memsz) as usize,
                )
            });
        1
    }
    let mut search = Search { load, found: None };
    // SAFETY: the callback only reads the loader's headers and writes `search`.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut search as *mut Search as *mut c_void) };
    search.found
}

/// Writes `value` into the GOT slot, unprotecting its page for the write if it lies in RELRO.
///
/// # Safety
/// `slot` is a pointer-sized GOT entry of a loaded object whose code does not run yet.
unsafe fn write_slot(
    slot: usize,
    value: usize,
    relro: Option<(usize, usize)>,
) -> Result<(), String> {
    let protected = relro.is_some_and(|(begin, end)| slot >= begin && slot < end);
    // SAFETY: sysconf has no preconditions.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    let page = slot & !(page_size - 1);
    let protect = |flags: c_int| {
        // SAFETY: the page belongs to the loaded object's mapping.
        if unsafe { libc::mprotect(page as *mut c_void, page_size, flags) } != 0 {
            return Err(format!(
                "mprotect of the GOT page at {page:#x}: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    };
    if protected {
        protect(libc::PROT_READ | libc::PROT_WRITE)?;
    }
    // SAFETY: the slot is writable now and holds a pointer.
    unsafe { (slot as *mut usize).write_volatile(value) };
    if protected {
        protect(libc::PROT_READ)?;
    }
    Ok(())
}
