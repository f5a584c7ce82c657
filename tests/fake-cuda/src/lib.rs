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
    let mut module = Module { variables: HashMap::new(), kernels: HashMap::new(), memory: Vec::new() };
    // Every symbol's address (functions: their handle), by symbol index, for relocations.
    let mut addresses: HashMap<usize, u64> = HashMap::new();
    // Variables by section: (start, size, memory index), for relocations.
    let mut placed: HashMap<usize, Vec<(u64, usize, usize)>> = HashMap::new();
    for (index, symbol) in symbols.iter().enumerate() {
        let Ok(name) = symbols.symbol_name(LE, symbol) else { continue };
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
                    state.functions.insert(handle, Function { parameters: declared.get(&name).copied() });
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
                            std::ptr::copy_nonoverlapping(initial.as_ptr(), memory.as_mut_ptr() as *mut u8, size)
                        };
                    }
                }
                let address = memory.as_ptr() as u64;
                addresses.insert(index, address);
                placed.entry(section_index).or_default().push((value, size, module.memory.len()));
                module.memory.push(memory);
                module.variables.insert(name, (address, size));
            }
            _ => {}
        }
    }
    for section in sections.iter().filter(|s| s.sh_type(LE) == SHT_RELA) {
        let target = section.sh_info(LE) as usize;
        let Some(variables) = placed.get(&target) else { continue };
        let Ok(relocations) = section.data_as_array::<object::elf::Rela64<LE>, _>(LE, bytes) else { continue };
        for relocation in relocations {
            let kind = relocation.r_type(LE, false).0;
            if kind != R_CUDA_64 && kind != R_CUDA_G64 {
                continue;
            }
            let offset = relocation.r_offset(LE);
            let symbol = relocation.r_sym(LE, false) as usize;
            let Some(&address) = addresses.get(&symbol) else { continue };
            let value = address.wrapping_add(relocation.r_addend(LE) as u64);
            let Some(&(start, _, memory)) =
                variables.iter().find(|&&(start, size, _)| offset >= start && offset + 8 <= start + size as u64)
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
    // SAFETY: the plugin passes NUL-terminated names.
    (!name.is_null()).then(|| unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned())
}

/// The driver entry points: every function `libcuda.so.1` exports that the plugin resolves.
///
/// # Safety
/// Each is called as `cuda.h` declares it: out-pointers valid for writes, handles this driver
/// made, memory ranges inside its allocations.
#[allow(non_snake_case, reason = "the driver's own entry point names")]
#[allow(clippy::missing_safety_doc, reason = "every entry point's contract is cuda.h's, stated once above")]
pub mod api {
    use super::*;

    #[unsafe(no_mangle)]
    pub extern "C" fn cuInit(_flags: c_uint) -> CUresult {
        SUCCESS
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuDriverGetVersion(version: *mut c_int) -> CUresult {
        // SAFETY: the caller's out-pointer.
        unsafe { put(version, 13000) }
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuDeviceGetCount(count: *mut c_int) -> CUresult {
        // SAFETY: as above.
        unsafe { put(count, 1) }
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuDeviceGet(device: *mut c_int, ordinal: c_int) -> CUresult {
        if ordinal != 0 {
            return INVALID_DEVICE;
        }
        // SAFETY: as above.
        unsafe { put(device, 0) }
    }

    /// An H200's answers (132 SMs, compute capability 9.0).
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuDeviceGetAttribute(value: *mut c_int, attribute: c_int, _device: c_int) -> CUresult {
        let answer = match attribute {
            1 | 2 => 1024,         // MAX_THREADS_PER_BLOCK, MAX_BLOCK_DIM_X
            5 => i32::MAX,         // MAX_GRID_DIM_X
            8 => 48 << 10,         // MAX_SHARED_MEMORY_PER_BLOCK
            10 => 32,              // WARP_SIZE
            13 => 1_980_000,       // CLOCK_RATE (kHz)
            16 => 132,             // MULTIPROCESSOR_COUNT
            39 => 2048,            // MAX_THREADS_PER_MULTIPROCESSOR
            75 => 9,               // COMPUTE_CAPABILITY_MAJOR
            76 => 0,               // COMPUTE_CAPABILITY_MINOR
            83 => 1,               // MANAGED_MEMORY
            97 => 227 << 10,       // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
            _ => 0,
        };
        // SAFETY: as above.
        unsafe { put(value, answer) }
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuDeviceGetName(name: *mut c_char, length: c_int, _device: c_int) -> CUresult {
        let text = c"rustomp fake CUDA driver (sm_90, no kernels run)".to_bytes_with_nul();
        if name.is_null() || (length as usize) < text.len() {
            return INVALID_VALUE;
        }
        // SAFETY: the caller's buffer holds `length` bytes.
        unsafe { std::ptr::copy_nonoverlapping(text.as_ptr() as *const c_char, name, text.len()) };
        SUCCESS
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, _device: c_int) -> CUresult {
        // SAFETY: as above.
        unsafe { put(bytes, 141 << 30) }
    }

    fn error_name(code: CUresult) -> Option<&'static CStr> {
        Some(match code {
            SUCCESS => c"CUDA_SUCCESS",
            INVALID_VALUE => c"CUDA_ERROR_INVALID_VALUE",
            OUT_OF_MEMORY => c"CUDA_ERROR_OUT_OF_MEMORY",
            INVALID_DEVICE => c"CUDA_ERROR_INVALID_DEVICE",
            INVALID_IMAGE => c"CUDA_ERROR_INVALID_IMAGE",
            INVALID_HANDLE => c"CUDA_ERROR_INVALID_HANDLE",
            NOT_FOUND => c"CUDA_ERROR_NOT_FOUND",
            _ => return None,
        })
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuGetErrorName(code: CUresult, out: *mut *const c_char) -> CUresult {
        match error_name(code) {
            // SAFETY: as above.
            Some(name) => unsafe { put(out, name.as_ptr()) },
            None => INVALID_VALUE,
        }
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuGetErrorString(code: CUresult, out: *mut *const c_char) -> CUresult {
        let text: &'static CStr = match code {
            SUCCESS => c"no error",
            INVALID_VALUE => c"invalid argument",
            OUT_OF_MEMORY => c"out of memory",
            INVALID_DEVICE => c"invalid device ordinal",
            INVALID_IMAGE => c"device kernel image is invalid",
            INVALID_HANDLE => c"invalid resource handle",
            NOT_FOUND => c"named symbol not found",
            _ => return INVALID_VALUE,
        };
        // SAFETY: as above.
        unsafe { put(out, text.as_ptr()) }
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(context: *mut *mut c_void, _device: c_int) -> CUresult {
        // SAFETY: as above.
        unsafe { put(context, CONTEXT as *mut c_void) }
    }

    #[unsafe(no_mangle)]
    pub extern "C" fn cuDevicePrimaryCtxRelease_v2(_device: c_int) -> CUresult {
        SUCCESS
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuDevicePrimaryCtxGetState(_device: c_int, flags: *mut c_uint, active: *mut c_int) -> CUresult {
        // SAFETY: as above.
        unsafe {
            put(flags, 0);
            put(active, 0)
        }
    }

    #[unsafe(no_mangle)]
    pub extern "C" fn cuDevicePrimaryCtxSetFlags_v2(_device: c_int, _flags: c_uint) -> CUresult {
        SUCCESS
    }

    #[unsafe(no_mangle)]
    pub extern "C" fn cuCtxSetCurrent(_context: *mut c_void) -> CUresult {
        SUCCESS
    }

    #[unsafe(no_mangle)]
    pub extern "C" fn cuCtxSetLimit(_limit: c_int, _value: usize) -> CUresult {
        SUCCESS
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuStreamCreate(stream: *mut *mut c_void, _flags: c_uint) -> CUresult {
        let handle = with(|s| {
            s.next_handle += 1;
            CONTEXT + s.next_handle
        });
        // SAFETY: as above.
        unsafe { put(stream, handle as *mut c_void) }
    }

    #[unsafe(no_mangle)]
    pub extern "C" fn cuStreamDestroy_v2(_stream: *mut c_void) -> CUresult {
        SUCCESS
    }

    #[unsafe(no_mangle)]
    pub extern "C" fn cuStreamSynchronize(_stream: *mut c_void) -> CUresult {
        SUCCESS
    }

    /// Every launch has finished (no kernel runs).
    #[unsafe(no_mangle)]
    pub extern "C" fn cuStreamQuery(_stream: *mut c_void) -> CUresult {
        SUCCESS
    }

    fn allocate(bytes: usize) -> Option<u64> {
        // SAFETY: calloc takes any size; null is failure.
        let p = unsafe { libc::calloc(bytes.max(1), 1) };
        (!p.is_null()).then_some(p as u64)
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuMemAlloc_v2(address: *mut u64, bytes: usize) -> CUresult {
        match allocate(bytes) {
            // SAFETY: as above.
            Some(a) => unsafe { put(address, a) },
            None => OUT_OF_MEMORY,
        }
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuMemFree_v2(address: u64) -> CUresult {
        // SAFETY: the plugin frees what cuMemAlloc gave, once.
        unsafe { libc::free(address as *mut c_void) };
        SUCCESS
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuMemAllocHost_v2(address: *mut *mut c_void, bytes: usize) -> CUresult {
        match allocate(bytes) {
            // SAFETY: as above.
            Some(a) => unsafe { put(address, a as *mut c_void) },
            None => OUT_OF_MEMORY,
        }
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuMemFreeHost(address: *mut c_void) -> CUresult {
        // SAFETY: as in cuMemFree_v2.
        unsafe { libc::free(address) };
        SUCCESS
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuMemAllocManaged(address: *mut u64, bytes: usize, _flags: c_uint) -> CUresult {
        // SAFETY: as in cuMemAlloc_v2.
        unsafe { cuMemAlloc_v2(address, bytes) }
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuMemcpyHtoDAsync_v2(dst: u64, src: *const c_void, bytes: usize, _s: *mut c_void) -> CUresult {
        // SAFETY: "device" memory is host memory; the plugin passes valid ranges.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
        SUCCESS
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuMemcpyDtoHAsync_v2(dst: *mut c_void, src: u64, bytes: usize, _s: *mut c_void) -> CUresult {
        // SAFETY: as above.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
        SUCCESS
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuMemcpyDtoDAsync_v2(dst: u64, src: u64, bytes: usize, _s: *mut c_void) -> CUresult {
        // SAFETY: as above.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
        SUCCESS
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuModuleLoadDataEx(
        module: *mut *mut c_void,
        image: *const c_void,
        _options: c_uint,
        _keys: *mut c_int,
        _values: *mut *mut c_void,
    ) -> CUresult {
        if image.is_null() {
            return INVALID_VALUE;
        }
        // SAFETY: the plugin passes a complete image (cubins only: this fake compiles no PTX).
        let Some(bytes) = (unsafe { elf_bytes(image as *const u8) }) else {
            return INVALID_IMAGE;
        };
        let handle = with(|s| {
            let loaded = load(bytes, s)?;
            s.next_handle += 1;
            let handle = 0x4000_0000 + s.next_handle;
            s.modules.insert(handle, loaded);
            Some(handle)
        });
        match handle {
            // SAFETY: as above.
            Some(h) => unsafe { put(module, h as *mut c_void) },
            None => INVALID_IMAGE,
        }
    }

    #[unsafe(no_mangle)]
    pub extern "C" fn cuModuleUnload(module: *mut c_void) -> CUresult {
        match with(|s| s.modules.remove(&(module as usize))) {
            Some(_) => SUCCESS,
            None => INVALID_HANDLE,
        }
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuModuleGetFunction(function: *mut *mut c_void, module: *mut c_void, name: *const c_char) -> CUresult {
        let Some(name) = name_of(name) else { return INVALID_VALUE };
        let found = with(|s| {
            let m = s.modules.get(&(module as usize)).ok_or(INVALID_HANDLE)?;
            m.kernels.get(&name).copied().ok_or(NOT_FOUND)
        });
        match found {
            // SAFETY: as above.
            Ok(handle) => unsafe { put(function, handle as *mut c_void) },
            Err(code) => code,
        }
    }

    /// A variable's address and size; the name of a function is an invalid value (as an H200
    /// with driver 580 answered), a name the module lacks is not found.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuModuleGetGlobal_v2(
        address: *mut u64,
        bytes: *mut usize,
        module: *mut c_void,
        name: *const c_char,
    ) -> CUresult {
        let Some(name) = name_of(name) else { return INVALID_VALUE };
        let found = with(|s| {
            let m = s.modules.get(&(module as usize)).ok_or(INVALID_HANDLE)?;
            if m.kernels.contains_key(&name) {
                return Err(INVALID_VALUE);
            }
            m.variables.get(&name).copied().ok_or(NOT_FOUND)
        });
        match found {
            Ok((a, size)) => {
                // SAFETY: as above; either out-pointer may be null (cuda.h).
                unsafe {
                    if !address.is_null() {
                        address.write(a);
                    }
                    if !bytes.is_null() {
                        bytes.write(size);
                    }
                }
                SUCCESS
            }
            Err(code) => code,
        }
    }

    fn parameters_of(function: *mut c_void) -> Result<Option<KernelParameters>, CUresult> {
        with(|s| s.functions.get(&(function as usize)).map(|f| f.parameters).ok_or(INVALID_HANDLE))
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuFuncGetAttribute(value: *mut c_int, attribute: c_int, function: *mut c_void) -> CUresult {
        if let Err(code) = parameters_of(function) {
            return code;
        }
        let answer = match attribute {
            0 => 1024,     // MAX_THREADS_PER_BLOCK
            8 => 48 << 10, // MAX_DYNAMIC_SHARED_SIZE_BYTES
            _ => 0,
        };
        // SAFETY: as above.
        unsafe { put(value, answer) }
    }

    #[unsafe(no_mangle)]
    pub extern "C" fn cuFuncSetAttribute(function: *mut c_void, _attribute: c_int, _value: c_int) -> CUresult {
        parameters_of(function).map_or_else(|code| code, |_| SUCCESS)
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuFuncGetParamCount(function: *mut c_void, count: *mut usize) -> CUresult {
        match parameters_of(function) {
            // SAFETY: as above.
            Ok(p) => unsafe { put(count, p.map_or(0, |p| p.count)) },
            Err(code) => code,
        }
    }

    /// Parameter `index`: 8 bytes each, back to back (clang-22's OpenMP kernels).
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cuFuncGetParamInfo(function: *mut c_void, index: usize, offset: *mut usize, size: *mut usize) -> CUresult {
        let count = match parameters_of(function) {
            Ok(p) => p.map_or(0, |p| p.count),
            Err(code) => return code,
        };
        if index >= count {
            return INVALID_VALUE;
        }
        // SAFETY: as above; `size` may be null (cuda.h).
        unsafe {
            if !size.is_null() {
                size.write(8);
            }
            put(offset, 8 * index)
        }
    }

    #[unsafe(no_mangle)]
    #[allow(clippy::too_many_arguments, reason = "cuLaunchKernel's own signature")]
    pub unsafe extern "C" fn cuLaunchKernel(
        function: *mut c_void,
        _gx: c_uint,
        _gy: c_uint,
        _gz: c_uint,
        _bx: c_uint,
        _by: c_uint,
        _bz: c_uint,
        _shared: c_uint,
        _stream: *mut c_void,
        params: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) -> CUresult {
        let declared = match parameters_of(function) {
            Ok(p) => p.unwrap_or(KernelParameters { count: 0, bytes: 0 }),
            Err(code) => return code,
        };
        if !extra.is_null() {
            // CU_LAUNCH_PARAM_BUFFER_POINTER (1), CU_LAUNCH_PARAM_BUFFER_SIZE (2), ..., END (0).
            let mut size = None;
            let mut at = 0;
            loop {
                // SAFETY: the caller's array ends with CU_LAUNCH_PARAM_END.
                let key = unsafe { *extra.add(at) } as usize;
                if key == 0 {
                    break;
                }
                // SAFETY: every key but the end has a value after it.
                let value = unsafe { *extra.add(at + 1) };
                match key {
                    1 => {}
                    // SAFETY: the value of CU_LAUNCH_PARAM_BUFFER_SIZE points at a size_t.
                    2 => size = Some(unsafe { *(value as *const usize) }),
                    _ => return INVALID_VALUE,
                }
                at += 2;
            }
            if size != Some(declared.bytes) {
                return INVALID_VALUE;
            }
        } else if declared.count > 0 {
            if params.is_null() {
                return INVALID_VALUE;
            }
            // As the real driver: one pointer per declared parameter, whatever the caller passed.
            for i in 0..declared.count {
                // SAFETY: only as long as the caller passed enough pointers: what this exposes.
                let value = unsafe { *(*params.add(i) as *const u64) };
                std::hint::black_box(value);
            }
        }
        SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::api::*;
    use super::*;

    /// The real cubin of `host-plugins/plugin/tests/fixtures` (kernels.c): main_l7 takes 4
    /// parameters, main_l9 takes 2; both read the device environment.
    const CUBIN: &[u8] = include_bytes!("../../../host-plugins/plugin/tests/fixtures/kernels.sm_90.cubin");
    const L7: &CStr = c"__omp_offloading_fe00_51c003_main_l7";

    #[test]
    fn a_real_cubin_answers_as_the_driver_does() {
        let mut module = std::ptr::null_mut();
        // SAFETY: a complete cubin and a live out-pointer.
        assert_eq!(unsafe { cuModuleLoadDataEx(&mut module, CUBIN.as_ptr().cast(), 0, std::ptr::null_mut(), std::ptr::null_mut()) }, SUCCESS);
        let (mut function, mut address, mut size) = (std::ptr::null_mut(), 0u64, 0usize);
        // SAFETY: live out-pointers, a module this driver made, NUL-terminated names.
        unsafe {
            assert_eq!(cuModuleGetFunction(&mut function, module, L7.as_ptr()), SUCCESS);
            assert_eq!(cuModuleGetGlobal_v2(&mut address, &mut size, module, L7.as_ptr()), INVALID_VALUE, "a kernel is no global");
            assert_eq!(cuModuleGetGlobal_v2(&mut address, &mut size, module, c"nothing".as_ptr()), NOT_FOUND);
            assert_eq!(cuModuleGetFunction(&mut function, module, c"nothing".as_ptr()), NOT_FOUND);
            assert_eq!(cuModuleGetFunction(&mut function, module, L7.as_ptr()), SUCCESS);
            let env = c"__omp_rtl_device_environment";
            assert_eq!(cuModuleGetGlobal_v2(&mut address, &mut size, module, env.as_ptr()), SUCCESS);
            assert_eq!(size, 48);
            let mut count = 0;
            assert_eq!(cuFuncGetParamCount(function, &mut count), SUCCESS);
            assert_eq!(count, 4);
            let (mut offset, mut bytes) = (0, 0);
            assert_eq!(cuFuncGetParamInfo(function, 3, &mut offset, &mut bytes), SUCCESS);
            assert_eq!((offset, bytes), (24, 8));
            assert_eq!(cuFuncGetParamInfo(function, 4, &mut offset, &mut bytes), INVALID_VALUE);
            // A buffer of the kernel's size launches; any other size is an invalid value.
            let mut parameters = [0u64; 4];
            let mut launch = |size: usize| {
                let mut size = size;
                // CU_LAUNCH_PARAM_BUFFER_POINTER (1), ..._SIZE (2), END: keys, not addresses.
                let key = |k: usize| std::ptr::without_provenance_mut::<c_void>(k);
                let mut extra = [key(1), parameters.as_mut_ptr().cast(), key(2), (&raw mut size).cast(), key(0)];
                cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, std::ptr::null_mut(), std::ptr::null_mut(), extra.as_mut_ptr())
            };
            assert_eq!(launch(32), SUCCESS);
            assert_eq!(launch(24), INVALID_VALUE);
            assert_eq!(cuModuleUnload(module), SUCCESS);
        }
    }

    #[test]
    fn relocations_give_function_pointers_the_functions_addresses() {
        // The kernel environment of main_l7 points at its dynamic environment (R_CUDA_G64): the
        // relocated value is that global's address.
        let mut module = std::ptr::null_mut();
        // SAFETY: as above.
        unsafe {
            assert_eq!(cuModuleLoadDataEx(&mut module, CUBIN.as_ptr().cast(), 0, std::ptr::null_mut(), std::ptr::null_mut()), SUCCESS);
            let (mut environment, mut dynamic, mut size) = (0u64, 0u64, 0usize);
            let name = c"__omp_offloading_fe00_51c003_main_l7_kernel_environment";
            assert_eq!(cuModuleGetGlobal_v2(&mut environment, &mut size, module, name.as_ptr()), SUCCESS);
            let name = c"__omp_offloading_fe00_51c003_main_l7_dynamic_environment";
            assert_eq!(cuModuleGetGlobal_v2(&mut dynamic, &mut size, module, name.as_ptr()), SUCCESS);
            // KernelEnvironmentTy: 32 bytes of configuration, then the ident and the dynamic
            // environment pointers.
            let pointer = (environment as *const u64).add(5).read_unaligned();
            assert_eq!(pointer, dynamic);
            assert_eq!(cuModuleUnload(module), SUCCESS);
        }
    }
}
