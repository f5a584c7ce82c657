//! `printf` for amdgcn device code (on nvptx clang calls the CUDA driver's `vprintf` instead).
//!
//! The device formats each call itself, C99 style, and appends the text to a device-global
//! byte buffer, `__rustomp_printf_buffer`; the AMDGPU plugin reads the buffer after each launch,
//! prints it on the host's stdout and resets the cursor. One call's text lands contiguously,
//! so lines from different threads never interleave. A call longer than `LINE_BYTES`, or one that
//! does not fit in the buffer any more, is cut short and counted in `truncated`.
//!
//! The formatter reads its arguments through [`Args`], so the host tests can drive it with a
//! list of values and compare with the C library's `snprintf`.

use core::fmt::Write as _;

/// Where conversions take their values from (a `va_list` on the device).
pub trait Args {
    fn int(&mut self) -> i32;
    fn long(&mut self) -> i64;
    fn double(&mut self) -> f64;
    fn pointer(&mut self) -> usize;
}

/// A fixed-size output buffer that counts what did not fit.
pub struct Line<const N: usize> {
    bytes: [u8; N],
    len: usize,
    wanted: usize,
}

impl<const N: usize> Line<N> {
    pub const fn new() -> Self {
        Self {
            bytes: [0; N],
            len: 0,
            wanted: 0,
        }
    }
    fn push(&mut self, byte: u8) {
        if self.len < N {
            self.bytes[self.len] = byte;
            self.len += 1;
        }
        self.wanted += 1;
    }
    fn push_n(&mut self, byte: u8, count: usize) {
        for _ in 0..count {
            self.push(byte);
        }
    }
    fn extend(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.push(b);
        }
    }
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
    /// The length the whole text would have had (what `printf` returns).
    pub fn wanted(&self) -> usize {
        self.wanted
    }
}

impl<const N: usize> Default for Line<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> core::fmt::Write for Line<N> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.extend(s.as_bytes());
        Ok(())
    }
}

#[derive(Default, Clone, Copy)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alternate: bool,
    zero: bool,
    width: usize,
    precision: Option<usize>,
    long: bool,
    /// `hh` (1) or `h` (2): the value is truncated to char or short.
    short: u8,
}

/// Formats `format` (a NUL-terminated C string) with `args` into `out`.
///
/// # Safety
/// `format` and every `%s` argument are readable NUL-terminated strings.
pub unsafe fn format<const N: usize>(format: *const u8, args: &mut impl Args, out: &mut Line<N>) {
    let mut at = format;
    loop {
        // SAFETY: `at` stays within the NUL-terminated format (guaranteed by the caller).
        let byte = unsafe { *at };
        at = at.wrapping_add(1);
        match byte {
            0 => return,
            b'%' => {}
            other => {
                out.push(other);
                continue;
            }
        }
        let mut spec = Spec::default();
        let next = |at: &mut *const u8| {
            // SAFETY: as above; the conversion ends at the NUL at the latest.
            let b = unsafe { **at };
            if b != 0 {
                *at = at.wrapping_add(1);
            }
            b
        };
        let mut c = next(&mut at);
        loop {
            match c {
                b'-' => spec.left = true,
                b'+' => spec.plus = true,
                b' ' => spec.space = true,
                b'#' => spec.alternate = true,
                b'0' => spec.zero = true,
                _ => break,
            }
            c = next(&mut at);
        }
        if c == b'*' {
            let width = args.int();
            spec.left |= width < 0;
            spec.width = width.unsigned_abs() as usize;
            c = next(&mut at);
        } else {
            while c.is_ascii_digit() {
                spec.width = spec.width * 10 + (c - b'0') as usize;
                c = next(&mut at);
            }
        }
        if c == b'.' {
            c = next(&mut at);
            let mut precision = 0usize;
            if c == b'*' {
                let p = args.int();
                c = next(&mut at);
                spec.precision = (p >= 0).then_some(p as usize);
            } else {
                while c.is_ascii_digit() {
                    precision = precision * 10 + (c - b'0') as usize;
                    c = next(&mut at);
                }
                spec.precision = Some(precision);
            }
        }
        loop {
            match c {
                b'l' | b'j' | b'z' | b't' | b'L' | b'q' => spec.long = true,
                b'h' => spec.short += 1,
                _ => break,
            }
            c = next(&mut at);
        }
        match c {
            b'd' | b'i' => {
                let value = if spec.long {
                    args.long()
                } else {
                    narrow_signed(args.int(), spec.short)
                };
                integer(out, &spec, Some(value < 0), value.unsigned_abs(), 10, false);
            }
            b'u' | b'o' | b'x' | b'X' => {
                let value = if spec.long {
                    args.long() as u64
                } else {
                    narrow_unsigned(args.int(), spec.short)
                };
                let radix = match c {
                    b'o' => 8,
                    b'u' => 10,
                    _ => 16,
                };
                integer(out, &spec, None, value, radix, c == b'X');
            }
            b'c' => {
                let byte = args.int() as u8;
                pad(out, &spec, 1, |o| o.push(byte));
            }
            b's' => {
                let s = args.pointer() as *const u8;
                let text: &[u8] = if s.is_null() {
                    b"(null)"
                } else {
                    // SAFETY: `%s` arguments are NUL-terminated strings (caller's contract); the
                    // length stops at the precision when one is given.
                    unsafe { c_string(s, spec.precision.unwrap_or(usize::MAX)) }
                };
                let text = &text[..text.len().min(spec.precision.unwrap_or(usize::MAX))];
                pad(
                    out,
                    &Spec {
                        zero: false,
                        ..spec
                    },
                    text.len(),
                    |o| o.extend(text),
                );
            }
            b'p' => {
                let value = args.pointer() as u64;
                let spec = Spec {
                    alternate: true,
                    long: true,
                    ..spec
                };
                integer(out, &spec, None, value, 16, false);
            }
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => {
                let value = args.double();
                float(out, &spec, value, c);
            }
            b'n' => {
                // Writing through a pointer from a format string is a classic hole: skip it.
                args.pointer();
            }
            b'%' => out.push(b'%'),
            0 => return,
            other => {
                out.push(b'%');
                out.push(other);
            }
        }
    }
}

fn narrow_signed(value: i32, short: u8) -> i64 {
    match short {
        0 => value as i64,
        1 => value as i16 as i64,
        _ => value as i8 as i64,
    }
}

fn narrow_unsigned(value: i32, short: u8) -> u64 {
    match short {
        0 => value as u32 as u64,
        1 => value as u16 as u64,
        _ => value as u8 as u64,
    }
}

/// The bytes of a C string, at most `limit` of them.
///
/// # Safety
/// `s` is readable up to its NUL or `limit` bytes.
unsafe fn c_string<'a>(s: *const u8, limit: usize) -> &'a [u8] {
    let mut len = 0;
    // SAFETY: guaranteed by the caller.
    while len < limit && unsafe { *s.add(len) } != 0 {
        len += 1;
    }
    // SAFETY: the `len` bytes just read.
    unsafe { core::slice::from_raw_parts(s, len) }
}

/// Pads `len` bytes written by `body` to the field width.
fn pad<const N: usize>(
    out: &mut Line<N>,
    spec: &Spec,
    len: usize,
    body: impl FnOnce(&mut Line<N>),
) {
    let fill = spec.width.saturating_sub(len);
    if !spec.left {
        out.push_n(b' ', fill);
    }
    body(out);
    if spec.left {
        out.push_n(b' ', fill);
    }
}

/// Sign or prefix, then zeros (from the `0` flag or a precision), then the digits.
fn number<const N: usize>(
    out: &mut Line<N>,
    spec: &Spec,
    prefix: &[u8],
    zeros: usize,
    digits: &[u8],
    zero_pad: bool,
) {
    let len = prefix.len() + zeros + digits.len();
    let fill = spec.width.saturating_sub(len);
    if spec.left {
        out.extend(prefix);
        out.push_n(b'0', zeros);
        out.extend(digits);
        out.push_n(b' ', fill);
    } else if zero_pad {
        out.extend(prefix);
        out.push_n(b'0', zeros + fill);
        out.extend(digits);
    } else {
        out.push_n(b' ', fill);
        out.extend(prefix);
        out.push_n(b'0', zeros);
        out.extend(digits);
    }
}

fn sign(spec: &Spec, negative: bool) -> &'static [u8] {
    if negative {
        b"-"
    } else if spec.plus {
        b"+"
    } else if spec.space {
        b" "
    } else {
        b""
    }
}

/// `negative`: `Some` for signed conversions (which take the `+` and space flags), `None` for
/// unsigned ones.
fn integer<const N: usize>(
    out: &mut Line<N>,
    spec: &Spec,
    negative: Option<bool>,
    value: u64,
    radix: u64,
    upper: bool,
) {
    let table: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut buf = [0u8; 24];
    let mut start = buf.len();
    let mut v = value;
    while v > 0 {
        start -= 1;
        buf[start] = table[(v % radix) as usize];
        v /= radix;
    }
    let digits = &buf[start..];
    let precision = spec.precision.unwrap_or(1);
    let mut zeros = precision.saturating_sub(digits.len());
    let mut prefix = [0u8; 3];
    let mut prefix_len = 0;
    let sign_bytes = match negative {
        Some(negative) => sign(spec, negative),
        None => b"",
    };
    for &b in sign_bytes {
        prefix[prefix_len] = b;
        prefix_len += 1;
    }
    if spec.alternate {
        if radix == 8 && zeros == 0 && (value != 0 || precision == 0) {
            zeros = 1;
        }
        if radix == 16 && value != 0 {
            prefix[prefix_len] = b'0';
            prefix[prefix_len + 1] = if upper { b'X' } else { b'x' };
            prefix_len += 2;
        }
    }
    let zero_pad = spec.zero && !spec.left && spec.precision.is_none();
    number(out, spec, &prefix[..prefix_len], zeros, digits, zero_pad);
}

/// Decimal exponent of `value` once rounded to `precision` digits after the point, and the
/// `d.ddd` digits (Rust's `{:e}` formatting rounds exactly, as C requires).
fn scientific(value: f64, precision: usize) -> (Line<400>, i32) {
    let mut text = Line::<400>::new();
    let _ = write!(text, "{:.*e}", precision, value);
    let bytes = text.as_bytes();
    let e = bytes.iter().position(|&b| b == b'e').unwrap_or(bytes.len());
    let mut exponent = 0i32;
    let mut negative = false;
    for &b in &bytes[(e + 1).min(bytes.len())..] {
        match b {
            b'-' => negative = true,
            d => exponent = exponent * 10 + (d - b'0') as i32,
        }
    }
    // Keep only the `d.ddd` part.
    text.len = e;
    (text, if negative { -exponent } else { exponent })
}

fn push_exponent<const N: usize>(out: &mut Line<N>, exponent: i32, upper: bool) {
    out.push(if upper { b'E' } else { b'e' });
    out.push(if exponent < 0 { b'-' } else { b'+' });
    let e = exponent.unsigned_abs();
    if e < 10 {
        out.push(b'0');
    }
    let _ = write!(out, "{e}");
}

/// Drops trailing zeros after the point, and the point when nothing follows it.
fn trim_fraction(body: &mut Line<400>) {
    if !body.as_bytes().contains(&b'.') {
        return;
    }
    while body.len > 0 && body.bytes[body.len - 1] == b'0' {
        body.len -= 1;
    }
    if body.len > 0 && body.bytes[body.len - 1] == b'.' {
        body.len -= 1;
    }
}

fn float<const N: usize>(out: &mut Line<N>, spec: &Spec, value: f64, conversion: u8) {
    let upper = conversion.is_ascii_uppercase();
    let negative = value.is_sign_negative();
    let prefix = sign(spec, negative);
    if !value.is_finite() {
        let text: &[u8] = match (value.is_nan(), upper) {
            (true, false) => b"nan",
            (true, true) => b"NAN",
            (false, false) => b"inf",
            (false, true) => b"INF",
        };
        return number(out, spec, prefix, 0, text, false);
    }
    let magnitude = value.abs();
    let precision = spec.precision.unwrap_or(6);
    let mut body = Line::<400>::new();
    match conversion.to_ascii_lowercase() {
        b'f' => {
            let _ = write!(body, "{:.*}", precision, magnitude);
            if spec.alternate && precision == 0 {
                body.push(b'.');
            }
        }
        b'g' => {
            let significant = precision.max(1);
            let (mantissa, exponent) = scientific(magnitude, significant - 1);
            if (exponent as i64) < significant as i64 && exponent >= -4 {
                let decimals = (significant as i64 - 1 - exponent as i64) as usize;
                let _ = write!(body, "{:.*}", decimals, magnitude);
                if !spec.alternate {
                    trim_fraction(&mut body);
                } else if decimals == 0 {
                    body.push(b'.');
                }
            } else {
                body.extend(mantissa.as_bytes());
                if !spec.alternate {
                    trim_fraction(&mut body);
                } else if significant == 1 {
                    body.push(b'.');
                }
                push_exponent(&mut body, exponent, upper);
            }
        }
        // %e, and %a, which this formatter prints in decimal.
        _ => {
            let (mantissa, exponent) = scientific(magnitude, precision);
            body.extend(mantissa.as_bytes());
            if spec.alternate && precision == 0 {
                body.push(b'.');
            }
            push_exponent(&mut body, exponent, upper);
        }
    }
    let zero_pad = spec.zero && !spec.left;
    number(out, spec, prefix, 0, body.as_bytes(), zero_pad);
}

/// Bytes of one call's text kept at most.
pub const LINE_BYTES: usize = 512;
/// Size of the device buffer the plugin drains after each launch.
pub const BUFFER_BYTES: usize = 64 << 10;

/// The device-side output buffer (`__rustomp_printf_buffer`), read by the AMDGPU plugin.
#[repr(C)]
pub struct PrintfBuffer {
    /// Bytes of `data` in use.
    pub cursor: core::sync::atomic::AtomicU32,
    /// Calls whose text was cut short or dropped since the last drain.
    pub truncated: core::sync::atomic::AtomicU32,
    pub data: [core::cell::UnsafeCell<u8>; BUFFER_BYTES],
}

// SAFETY: each writer reserves a disjoint range of `data` with an atomic add on `cursor`.
unsafe impl Sync for PrintfBuffer {}

impl PrintfBuffer {
    pub const fn new() -> Self {
        Self {
            cursor: core::sync::atomic::AtomicU32::new(0),
            truncated: core::sync::atomic::AtomicU32::new(0),
            data: [const { core::cell::UnsafeCell::new(0) }; BUFFER_BYTES],
        }
    }

    /// Appends one call's text as a unit (what fits of it).
    pub fn append(&self, text: &[u8], cut: bool) {
        use core::sync::atomic::Ordering::Relaxed;
        let start = self.cursor.fetch_add(text.len() as u32, Relaxed) as usize;
        let room = BUFFER_BYTES.saturating_sub(start).min(text.len());
        if cut || room < text.len() {
            self.truncated.fetch_add(1, Relaxed);
        }
        for (i, &b) in text[..room].iter().enumerate() {
            // SAFETY: `start..start + room` was reserved for this call alone and lies in `data`.
            unsafe { *self.data[start + i].get() = b };
        }
    }
}

impl Default for PrintfBuffer {
    fn default() -> Self {
        Self::new()
    }
}

/// Appends raw text to the device output (amdgcn: the buffer the plugin drains).
#[cfg(target_arch = "amdgpu")]
pub fn print_bytes(text: &[u8]) {
    device::__rustomp_printf_buffer.append(text, false);
}

/// nvptx: `printf` called as a function (clang turns direct calls into `vprintf` itself). The
/// variadic area of an NVPTX call is exactly the argument buffer `vprintf` takes.
#[cfg(target_arch = "nvptx64")]
mod device {
    unsafe extern "C" {
        fn vprintf(format: *const u8, args: *const u8) -> i32;
    }

    /// # Safety
    /// As C's `printf`: the arguments match the format.
    #[unsafe(no_mangle)]
    #[linkage = "weak"]
    pub unsafe extern "C" fn printf(format: *const u8, args: ...) -> i32 {
        // SAFETY: on NVPTX a `va_list` is the pointer to the packed argument buffer.
        let buffer: *const u8 = unsafe { core::mem::transmute(args) };
        // SAFETY: forwarded from the caller.
        unsafe { vprintf(format, buffer) }
    }
}

#[cfg(target_arch = "amdgpu")]
mod device {
    use super::*;

    #[unsafe(no_mangle)]
    pub static __rustomp_printf_buffer: PrintfBuffer = PrintfBuffer::new();

    struct VaArgs<'a, 'f>(&'a mut core::ffi::VaList<'f>);
    impl Args for VaArgs<'_, '_> {
        fn int(&mut self) -> i32 {
            // SAFETY: the format says an int comes next (the program's contract with printf).
            unsafe { self.0.arg::<i32>() }
        }
        fn long(&mut self) -> i64 {
            // SAFETY: as above.
            unsafe { self.0.arg::<i64>() }
        }
        fn double(&mut self) -> f64 {
            // SAFETY: as above.
            unsafe { self.0.arg::<f64>() }
        }
        fn pointer(&mut self) -> usize {
            // SAFETY: as above.
            unsafe { self.0.arg::<usize>() }
        }
    }

    /// `vprintf` with a `va_list` (what CUDA's device printf is built on; LLVM's AMDGPU runtime
    /// only has a stub returning -1).
    ///
    /// # Safety
    /// As C's `vprintf`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn vprintf(format: *const u8, mut args: core::ffi::VaList<'_>) -> i32 {
        let mut line = Line::<LINE_BYTES>::new();
        // SAFETY: forwarded from the caller.
        unsafe { super::format(format, &mut VaArgs(&mut args), &mut line) };
        __rustomp_printf_buffer.append(line.as_bytes(), line.wanted() > LINE_BYTES);
        line.wanted() as i32
    }

    /// # Safety
    /// As C's `printf`: the arguments match the format.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn printf(format: *const u8, mut args: ...) -> i32 {
        let mut line = Line::<LINE_BYTES>::new();
        // SAFETY: forwarded from the caller.
        unsafe { super::format(format, &mut VaArgs(&mut args), &mut line) };
        __rustomp_printf_buffer.append(line.as_bytes(), line.wanted() > LINE_BYTES);
        line.wanted() as i32
    }
}
