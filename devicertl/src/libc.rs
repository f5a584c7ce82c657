//! The C library and C++ runtime functions device code calls: `assert` (`__assert_fail`), the
//! memory and string basics clang emits calls to (amdgcn calls `memcpy`, `strlen`, `calloc`
//! outright), `calloc`, the C++ ABI's pure/deleted virtual traps, and the profiling hooks of
//! device `-fprofile-generate` (linked, as LLVM's, and inert).
//!
//! On the host (emulation tests) these are ordinary Rust functions: exporting them there would
//! replace the C library's own in the test programs.
//!
//! The loops here are plain byte loops on purpose: LLVM does not turn a loop inside a function
//! named `memcpy`/`memset`/`memcmp` into a call to itself, and `strlen` reads volatile so no
//! idiom pass can either.

use crate::{arch, heap};
use core::ffi::{c_char, c_void, CStr};

/// A line of text built on the device without allocating (cut at 511 bytes), then printed.
pub struct TextBuffer {
    bytes: [u8; 512],
    len: usize,
}

impl Default for TextBuffer {
    fn default() -> Self {
        Self::new()
    }
}

impl TextBuffer {
    pub fn new() -> Self {
        TextBuffer {
            bytes: [0; 512],
            len: 0,
        }
    }
    pub fn push(&mut self, text: &[u8]) {
        for &b in text {
            if self.len + 1 < self.bytes.len() {
                self.bytes[self.len] = b;
                self.len += 1;
            }
        }
    }
    /// # Safety
    /// `s` is null or a NUL-terminated string.
    pub unsafe fn push_c(&mut self, s: *const c_char) {
        if s.is_null() {
            self.push(b"(null)");
        } else {
            // SAFETY: guaranteed by the caller.
            self.push(unsafe { CStr::from_ptr(s) }.to_bytes());
        }
    }
    fn push_u32(&mut self, mut n: u32) {
        let mut digits = [0u8; 10];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.push(&digits[i..]);
    }
    pub fn print(&self) {
        // `len < bytes.len()` and the buffer starts zeroed: NUL-terminated.
        if let Ok(text) = CStr::from_bytes_until_nul(&self.bytes) {
            arch::print_message(text);
        }
    }
}

/// The message of a failed assertion, then a trap (the host sees the launch fail).
///
/// # Safety
/// The pointers are null or NUL-terminated strings.
#[cfg_attr(
    any(target_arch = "nvptx64", target_arch = "amdgpu"),
    unsafe(no_mangle)
)]
pub unsafe extern "C" fn __assert_fail_internal(
    expression: *const c_char,
    message: *const c_char,
    file: *const c_char,
    line: u32,
    function: *const c_char,
) -> ! {
    // SAFETY: forwarded.
    unsafe { assertion_message(expression, message, file, line, function) }.print();
    arch::trap()
}

/// The text `__assert_fail_internal` prints.
///
/// # Safety
/// As `__assert_fail_internal`.
unsafe fn assertion_message(
    expression: *const c_char,
    message: *const c_char,
    file: *const c_char,
    line: u32,
    function: *const c_char,
) -> TextBuffer {
    let mut m = TextBuffer::new();
    // SAFETY: forwarded from the caller.
    unsafe {
        m.push_c(file);
        m.push(b":");
        m.push_u32(line);
        m.push(b": ");
        m.push_c(function);
        m.push(b": Assertion `");
        m.push_c(expression);
        m.push(b"' failed.");
        if !message.is_null() {
            m.push(b" ");
            m.push_c(message);
        }
    }
    m.push(b"\n");
    m
}

/// The assertion text as bytes (host tests check it against glibc's wording).
///
/// # Safety
/// As `__assert_fail_internal`.
pub unsafe fn assertion_text(
    expression: *const c_char,
    file: *const c_char,
    line: u32,
    function: *const c_char,
    out: &mut [u8],
) -> usize {
    // SAFETY: forwarded.
    let m = unsafe { assertion_message(expression, core::ptr::null(), file, line, function) };
    let n = m.len.min(out.len());
    out[..n].copy_from_slice(&m.bytes[..n]);
    n
}

/// What `assert` calls (glibc's signature).
///
/// # Safety
/// As `__assert_fail_internal`.
#[cfg_attr(
    any(target_arch = "nvptx64", target_arch = "amdgpu"),
    unsafe(no_mangle)
)]
pub unsafe extern "C" fn __assert_fail(
    expression: *const c_char,
    file: *const c_char,
    line: u32,
    function: *const c_char,
) -> ! {
    // SAFETY: forwarded.
    unsafe { __assert_fail_internal(expression, core::ptr::null(), file, line, function) }
}

/// `__assert_assume(cond)`: the program promises `cond`; a false one stops the kernel.
#[unsafe(no_mangle)]
pub extern "C" fn __assert_assume(condition: bool) {
    if !condition {
        arch::trap();
    }
}

/// # Safety
/// As C's: `dst` and `src` are valid for `n` bytes and do not overlap.
#[cfg_attr(
    any(target_arch = "nvptx64", target_arch = "amdgpu"),
    unsafe(no_mangle)
)]
pub unsafe extern "C" fn memcpy(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void {
    let (d, s) = (dst as *mut u8, src as *const u8);
    for i in 0..n {
        // SAFETY: guaranteed by the caller.
        unsafe { *d.add(i) = *s.add(i) };
    }
    dst
}

/// # Safety
/// As C's: `dst` and `src` are valid for `n` bytes (they may overlap).
#[cfg_attr(
    any(target_arch = "nvptx64", target_arch = "amdgpu"),
    unsafe(no_mangle)
)]
pub unsafe extern "C" fn memmove(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void {
    let (d, s) = (dst as *mut u8, src as *const u8);
    if (d as usize) < (s as usize) {
        for i in 0..n {
            // SAFETY: guaranteed by the caller; forward copy when the destination is below.
            unsafe { d.add(i).write_volatile(s.add(i).read_volatile()) };
        }
    } else {
        for i in (0..n).rev() {
            // SAFETY: as above, backwards.
            unsafe { d.add(i).write_volatile(s.add(i).read_volatile()) };
        }
    }
    dst
}

/// # Safety
/// As C's: `dst` is valid for `n` bytes.
#[cfg_attr(
    any(target_arch = "nvptx64", target_arch = "amdgpu"),
    unsafe(no_mangle)
)]
pub unsafe extern "C" fn memset(dst: *mut c_void, value: i32, n: usize) -> *mut c_void {
    let d = dst as *mut u8;
    for i in 0..n {
        // SAFETY: guaranteed by the caller.
        unsafe { *d.add(i) = value as u8 };
    }
    dst
}

/// # Safety
/// As C's: both are valid for `n` bytes.
#[cfg_attr(
    any(target_arch = "nvptx64", target_arch = "amdgpu"),
    unsafe(no_mangle)
)]
pub unsafe extern "C" fn memcmp(a: *const c_void, b: *const c_void, n: usize) -> i32 {
    let (a, b) = (a as *const u8, b as *const u8);
    for i in 0..n {
        // SAFETY: guaranteed by the caller.
        let (x, y) = unsafe { (*a.add(i), *b.add(i)) };
        if x != y {
            return x as i32 - y as i32;
        }
    }
    0
}

/// # Safety
/// As C's: `s` is NUL-terminated.
#[cfg_attr(
    any(target_arch = "nvptx64", target_arch = "amdgpu"),
    unsafe(no_mangle)
)]
pub unsafe extern "C" fn strlen(s: *const c_char) -> usize {
    let mut n = 0;
    // SAFETY: guaranteed by the caller; volatile so no pass turns this loop into a call.
    while unsafe { (s as *const u8).add(n).read_volatile() } != 0 {
        n += 1;
    }
    n
}

/// Zeroed heap memory for `count` objects of `size` bytes, or null (also on overflow).
#[cfg_attr(
    any(target_arch = "nvptx64", target_arch = "amdgpu"),
    unsafe(no_mangle)
)]
pub extern "C" fn calloc(count: usize, size: usize) -> *mut c_void {
    let Some(bytes) = count.checked_mul(size) else {
        return core::ptr::null_mut();
    };
    let p = heap::device_malloc(bytes.max(1));
    if !p.is_null() {
        // SAFETY: `p` has `bytes` bytes.
        unsafe { memset(p as *mut c_void, 0, bytes) };
    }
    p as *mut c_void
}

#[cfg_attr(
    any(target_arch = "nvptx64", target_arch = "amdgpu"),
    unsafe(no_mangle)
)]
pub extern "C" fn __cxa_pure_virtual() -> ! {
    arch::print_message(c"rustomp device runtime: pure virtual function called\n");
    arch::trap()
}

#[cfg_attr(
    any(target_arch = "nvptx64", target_arch = "amdgpu"),
    unsafe(no_mangle)
)]
pub extern "C" fn __cxa_deleted_virtual() -> ! {
    arch::print_message(c"rustomp device runtime: deleted virtual function called\n");
    arch::trap()
}

/// Device profiling (`-fprofile-generate` on the device) registers its counters here; as in
/// LLVM's device runtime, nothing collects them yet, but such programs link and run.
#[unsafe(no_mangle)]
pub extern "C" fn __llvm_profile_register_function(_data: *mut c_void) {}
#[unsafe(no_mangle)]
pub extern "C" fn __llvm_profile_register_names_function(_names: *mut c_void, _size: i64) {}
#[unsafe(no_mangle)]
pub extern "C" fn __llvm_profile_instrument_memop(_value: i64, _data: *mut c_void, _index: u32) {}
