//! `vprintf(format, arguments)`, which clang calls for `printf` in nvptx code and the CUDA
//! driver provides (`__vgpu_vprintf` in a retargeted image, which must not reach the C
//! library's `vprintf`): the arguments are packed in one buffer, each at its size's alignment (after
//! C's promotions: int 4 bytes, long, pointer and double 8). Formatted by the device runtime's
//! own formatter; each call's text reaches the C library's stdout in one piece, so it keeps its
//! place among the host program's own output.

use devicertl::printf::{format, Args, Line};

/// One call's text at most (longer text is cut, as the device runtime's own printf does).
const LINE_BYTES: usize = 4096;

struct Packed {
    at: *const u8,
}

impl Packed {
    fn take<T: Copy>(&mut self) -> T {
        let align = core::mem::align_of::<T>();
        let at = (self.at as usize).next_multiple_of(align) as *const T;
        // SAFETY: the format says a `T` comes next in the caller's buffer (printf's contract).
        let value = unsafe { at.read_unaligned() };
        // SAFETY: still inside (or one past) the caller's buffer.
        self.at = unsafe { (at as *const u8).add(core::mem::size_of::<T>()) };
        value
    }
}

impl Args for Packed {
    fn int(&mut self) -> i32 {
        self.take()
    }
    fn long(&mut self) -> i64 {
        self.take()
    }
    fn double(&mut self) -> f64 {
        self.take()
    }
    fn pointer(&mut self) -> usize {
        self.take()
    }
}

unsafe extern "C" {
    static mut stdout: *mut libc::FILE;
}

/// # Safety
/// As CUDA's `vprintf`: `format` is NUL-terminated and `arguments` holds what it converts.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __vgpu_vprintf(format_text: *const u8, arguments: *const u8) -> i32 {
    let mut line = Line::<LINE_BYTES>::new();
    // SAFETY: the caller's contract.
    unsafe { format(format_text, &mut Packed { at: arguments }, &mut line) };
    let text = line.as_bytes();
    // SAFETY: the C library's stdout stream; fwrite locks it for the one call.
    unsafe {
        libc::fwrite(text.as_ptr().cast(), 1, text.len(), stdout);
    }
    line.wanted() as i32
}
