//! A stand-in `libcuda.so.1` for machines without a GPU: the CUDA plugin loads it through
//! `RUSTOMP_CUDA_DRIVER`, and the GPU suite's real sm_90 binaries run against it.
//!
//! It answers as the real driver did on a GPU wherever that was seen (the first H200 run; the
//! behaviours are listed in `host-plugins/cuda/src/tests.rs`, `REAL_DRIVER`):
//! - a module is the cubin itself: its ELF symbol table gives the kernels (functions with
//!   parameter records in `.nv.info.<name>`), device functions and variables; each variable is
//!   host memory holding its initial bytes, with the cubin's 64-bit relocations applied (so the
//!   global clang emits for a `declare target indirect` function holds that function's
//!   "address", as on a GPU);
//! - `cuModuleGetGlobal` on a function's name answers CUDA_ERROR_INVALID_VALUE, on a name the
//!   module lacks CUDA_ERROR_NOT_FOUND; `cuModuleGetFunction` finds kernels only;
//! - `cuFuncGetParamCount` / `cuFuncGetParamInfo` report the parameters `.nv.info` states;
//! - `cuPointerGetAttributes` reads 0 for memory it does not know (pageable memory) and
//!   `CU_MEMORYTYPE_HOST` with the range's buffer id inside a `cuMemHostRegister` range;
//! - `cuLaunchKernel` reads `kernelParams` as far as the kernel declares (too short an array
//!   is read past its end, as the real driver does) and refuses a parameter buffer whose size is
//!   not the kernel's.
//!
//! No kernel runs: a launch that passes these checks returns success and changes nothing, so a
//! program's own checks of its results fail. What a run against this driver shows is whether
//! the runtime finds every symbol, launches every kernel with the arguments it declares, and
//! neither crashes nor hangs. "Device" memory is host memory.

use core::ffi::{c_char, c_int, c_uint, c_void};
use object::elf::{FileHeader64, SHT_NOBITS, SHT_RELA, STT_FUNC, STT_OBJECT};
use object::read::elf::{FileHeader as _, Rela as _, SectionHeader as _, Sym as _};
use object::LittleEndian as LE;
use rustomp_plugin::image::{kernel_parameters, ImageKind, KernelParameters};
use std::collections::HashMap;
use std::ffi::CStr;
use std::sync::{Mutex, MutexGuard};

type CUresult = c_int;
const SUCCESS: CUresult = 0;
const INVALID_VALUE: CUresult = 1;
const OUT_OF_MEMORY: CUresult = 2;
const INVALID_DEVICE: CUresult = 101;
const INVALID_IMAGE: CUresult = 200;
const INVALID_HANDLE: CUresult = 400;
const NOT_FOUND: CUresult = 500;

/// The one context, and the stream handles (never dereferenced by the plugin).
const CONTEXT: usize = 0xc0_0000;
/// Function handles, which are also the functions' "device addresses".
const FIRST_FUNCTION: usize = 0xf000_0000;

/// `st_other` of a kernel's symbol in a cubin (a device function has 0).
const STO_CUDA_ENTRY: u8 = 0x10;

/// `cuda.h` relocation types that store a symbol's 64-bit address (`R_CUDA_64`, `R_CUDA_G64`).
const R_CUDA_64: u32 = 2;
const R_CUDA_G64: u32 = 4;

struct Module {
    /// Variables by name: (address, size).
    variables: HashMap<String, (u64, usize)>,
    /// Kernels by name: their function handle.
    kernels: HashMap<String, usize>,
    /// The memory behind the variables, freed when the module is unloaded.
    memory: Vec<Box<[u64]>>,
}

struct Function {
    parameters: Option<KernelParameters>,
}

#[derive(Default)]
struct State {
    modules: HashMap<usize, Module>,
    functions: HashMap<usize, Function>,
    next_handle: usize,
    /// Ranges registered with `cuMemHostRegister`: start -> bytes.
    registered: std::collections::BTreeMap<u64, usize>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

fn state() -> MutexGuard<'static, Option<State>> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

fn with<T>(f: impl FnOnce(&mut State) -> T) -> T {
    f(state().get_or_insert_with(State::default))
}

/// Writes `value` through an out-pointer the caller passed (null is an invalid value).
///
/// # Safety
/// `out` is null or valid for a write of `T`.
unsafe fn put<T>(out: *mut T, value: T) -> CUresult {
    if out.is_null() {
        return INVALID_VALUE;
    }
    // SAFETY: non-null and valid for writes (the caller's contract).
    unsafe { out.write(value) };
    SUCCESS
}

/// The bytes of an ELF image whose length the driver is not told: up to the end of its section
/// header table or of its last section, whichever is later.
///
/// # Safety
/// `image` points at a complete ELF image.
unsafe fn elf_bytes<'a>(image: *const u8) -> Option<&'a [u8]> {
    // SAFETY: an ELF image has at least its 64-byte header.
    let header = unsafe { std::slice::from_raw_parts(image, 64) };
    if &header[..4] != b"\x7fELF" {
        return None;
    }
    let u16_at = |o: usize| u16::from_le_bytes([header[o], header[o + 1]]) as usize;
    let shoff = u64::from_le_bytes(header[40..48].try_into().ok()?) as usize;
    let (shentsize, shnum) = (u16_at(58), u16_at(60));
    let table_end = shoff.checked_add(shentsize.checked_mul(shnum)?)?;
    // SAFETY: the section header table lies within the image (the caller's contract).
    let table = unsafe { std::slice::from_raw_parts(image.add(shoff), shentsize * shnum) };
    let mut end = table_end;
    for i in 0..shnum {
        let h = &table[i * shentsize..(i + 1) * shentsize];
        let kind = u32::from_le_bytes(h[4..8].try_into().ok()?);
        let offset = u64::from_le_bytes(h[24..32].try_into().ok()?) as usize;
        let size = u64::from_le_bytes(h[32..40].try_into().ok()?) as usize;
        if kind != SHT_NOBITS.0 {
            end = end.max(offset.checked_add(size)?);
        }
    }
    // SAFETY: every section lies within the image (the caller's contract).
    Some(unsafe { std::slice::from_raw_parts(image, end) })
}

/// Reads a cubin into a module: kernels, variables with their initial bytes and relocations.
fn load(bytes: &[u8], state: &mut State) -> Option<Module> {
    let header = FileHeader64::<LE>::parse(bytes).ok()?;
    let sections = header.sections(LE, bytes).ok()?;
    let symbols = sections.symbols(LE, bytes, object::elf::SHT_SYMTAB).ok()?;
    let declared = kernel_parameters(bytes, &ImageKind::Cubin { sm: 90 });
    let mut module = Module {
        variables: HashMap::new(),
        kernels: HashMap::new(),
        memory: Vec::new(),
    };
    // Every symbol's address (functions: their handle), by symbol index, for relocations.
    let mut addresses: HashMap<usize, u64> = HashMap::new();
    // Variables by section: (start, size, memory index), for relocations.
    let mut placed: HashMap<usize, Vec<(u64, usize, usize)>> = HashMap::new();
    for (index, symbol) in symbols.iter().enumerate() {
        let Ok(name) = symbols.symbol_name(LE, symbol) else {
            continue;
        };
        let name = String::from_utf8_lossy(name).into_owned();
        // Undefined symbols (`free`, `vprintf`, the reserved shared-memory markers) are the
        // driver's own.
        if symbol.st_shndx(LE).0 == 0 {
            continue;
        }
        match symbol.st_type() {
            STT_FUNC => {
                state.next_handle += 1;
                let handle = FIRST_FUNCTION + 0x100 * state.next_handle;
                addresses.insert(index, handle as u64);
                if symbol.st_other().0 & STO_CUDA_ENTRY != 0 {
                    state.functions.insert(
                        handle,
                        Function {
                            parameters: declared.get(&name).copied(),
                        },
                    );
                    module.kernels.insert(name, handle);
                }
            }
            STT_OBJECT => {
                let size = symbol.st_size(LE) as usize;
                let mut memory = vec![0u64; size.div_ceil(8).max(1)].into_boxed_slice();
                let section_index = usize::from(symbol.st_shndx(LE).0);
                let value = symbol.st_value(LE);
                if let Ok(section) = sections.section(object::SectionIndex(section_index)) {
                    if section.sh_type(LE) != SHT_NOBITS {
                        let data = section.data(LE, bytes).ok()?;
                        let start = value as usize;
                        let initial = data.get(start..start + size)?;
                        // SAFETY: `memory` holds at least `size` bytes.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                initial.as_ptr(),
                                memory.as_mut_ptr() as *mut u8,
                                size,
                            )
                        };
                    }
                }
                let address = memory.as_ptr() as u64;
                addresses.insert(index, address);
                placed
                    .entry(section_index)
                    .or_default()
                    .push((value, size, module.memory.len()));
                module.memory.push(memory);
                module.variables.insert(name, (address, size));
            }
            _ => {}
        }
    }
    for section in sections.iter().filter(|s| s.sh_type(LE) == SHT_RELA) {
        let target = section.sh_info(LE) as usize;
        let Some(variables) = placed.get(&target) else {
            continue;
        };
        let Ok(relocations) = section.data_as_array::<object::elf::Rela64<LE>, _>(LE, bytes) else {
            continue;
        };
        for relocation in relocations {
            let kind = relocation.r_type(LE, false).0;
            if kind != R_CUDA_64 && kind != R_CUDA_G64 {
                continue;
            }
            let offset = relocation.r_offset(LE);
            let symbol = relocation.r_sym(LE, false) as usize;
            let Some(&address) = addresses.get(&symbol) else {
                continue;
            };
            let value = address.wrapping_add(relocation.r_addend(LE) as u64);
            let Some(&(start, _, memory)) = variables
                .iter()
                .find(|&&(start, size, _)| offset >= start && offset + 8 <= start + size as u64)
            else {
                continue;
            };
            let at = (offset - start) as usize;
            let bytes = module.memory[memory].as_mut_ptr() as *mut u8;
            // SAFETY: `at + 8` lies within the variable's memory (checked above).
            unsafe { (bytes.add(at) as *mut u64).write_unaligned(value) };
        }
    }
    Some(module)
}

fn name_of(name: *const c_char) -> Option<String> {
    (!name.is_null()).then(|| {
        // SAFETY: the plugin passes NUL-terminated names.
        unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned()
    })
}

pub mod api;

#[cfg(test)]
mod tests;
