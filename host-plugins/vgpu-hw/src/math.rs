//! The NVVM math intrinsics libdevice is made of (`llvm.nvvm.fma.rn.d` is
//! `__vgpu_nvvm_fma_rn_d`), as PTX defines them: `.rn/.rz/.rm/.rp` round to nearest even,
//! toward zero, down, up; `.ftz` flushes single-precision subnormal inputs and results to a
//! zero of the same sign; float-to-integer conversions saturate and give 0 for NaN (as Rust's
//! `as`). The `.approx` forms give the exact result, which is within their bounds.

use core::hint::black_box;

#[link(name = "m")]
unsafe extern "C" {
    fn fesetround(mode: i32) -> i32;
}

/// `<fenv.h>` on x86_64.
const NEAREST: i32 = 0;
const DOWN: i32 = 0x400;
const UP: i32 = 0x800;
const ZERO: i32 = 0xc00;

/// `op` computed with the host's rounding mode set to `mode` (the operands and the result pass
/// through `black_box`, so the operation is neither folded nor moved out of the window).
#[inline(never)]
fn rounded<T: Copy>(mode: i32, op: impl FnOnce() -> T) -> T {
    if mode == NEAREST {
        return op();
    }
    // SAFETY: sets the calling thread's rounding mode, restored below.
    unsafe { fesetround(mode) };
    let result = black_box(op());
    // SAFETY: as above.
    unsafe { fesetround(NEAREST) };
    result
}

fn ftz(x: f32) -> f32 {
    if x.is_subnormal() {
        0.0f32.copysign(x)
    } else {
        x
    }
}

/// Binary and ternary operations in each rounding mode, double and single (with and without
/// `.ftz`).
macro_rules! rounded_ops {
    ($($rn:ident $rz:ident $rm:ident $rp:ident: ($($x:ident),*) -> $t:ty, $flush:expr, $op:expr;)*) => {$(
        rounded_ops!(@one $rn, NEAREST, ($($x),*) -> $t, $flush, $op);
        rounded_ops!(@one $rz, ZERO, ($($x),*) -> $t, $flush, $op);
        rounded_ops!(@one $rm, DOWN, ($($x),*) -> $t, $flush, $op);
        rounded_ops!(@one $rp, UP, ($($x),*) -> $t, $flush, $op);
    )*};
    (@one $name:ident, $mode:ident, ($($x:ident),*) -> $t:ty, $flush:expr, $op:expr) => {
        #[unsafe(no_mangle)]
        pub extern "C" fn $name($($x: $t),*) -> $t {
            let flush: fn($t) -> $t = $flush;
            $(let $x = black_box(flush($x));)*
            flush(rounded($mode, || $op($($x),*)))
        }
    };
}

fn same_f64(x: f64) -> f64 {
    x
}
fn same_f32(x: f32) -> f32 {
    x
}

rounded_ops! {
    __vgpu_nvvm_add_rn_d __vgpu_nvvm_add_rz_d __vgpu_nvvm_add_rm_d __vgpu_nvvm_add_rp_d: (a, b) -> f64, same_f64, |a: f64, b: f64| a + b;
    __vgpu_nvvm_mul_rn_d __vgpu_nvvm_mul_rz_d __vgpu_nvvm_mul_rm_d __vgpu_nvvm_mul_rp_d: (a, b) -> f64, same_f64, |a: f64, b: f64| a * b;
    __vgpu_nvvm_div_rn_d __vgpu_nvvm_div_rz_d __vgpu_nvvm_div_rm_d __vgpu_nvvm_div_rp_d: (a, b) -> f64, same_f64, |a: f64, b: f64| a / b;
    __vgpu_nvvm_fma_rn_d __vgpu_nvvm_fma_rz_d __vgpu_nvvm_fma_rm_d __vgpu_nvvm_fma_rp_d: (a, b, c) -> f64, same_f64, |a: f64, b: f64, c: f64| a.mul_add(b, c);
    __vgpu_nvvm_rcp_rn_d __vgpu_nvvm_rcp_rz_d __vgpu_nvvm_rcp_rm_d __vgpu_nvvm_rcp_rp_d: (a) -> f64, same_f64, |a: f64| 1.0 / a;
    __vgpu_nvvm_sqrt_rn_d __vgpu_nvvm_sqrt_rz_d __vgpu_nvvm_sqrt_rm_d __vgpu_nvvm_sqrt_rp_d: (a) -> f64, same_f64, |a: f64| a.sqrt();
    __vgpu_nvvm_add_rn_f __vgpu_nvvm_add_rz_f __vgpu_nvvm_add_rm_f __vgpu_nvvm_add_rp_f: (a, b) -> f32, same_f32, |a: f32, b: f32| a + b;
    __vgpu_nvvm_mul_rn_f __vgpu_nvvm_mul_rz_f __vgpu_nvvm_mul_rm_f __vgpu_nvvm_mul_rp_f: (a, b) -> f32, same_f32, |a: f32, b: f32| a * b;
    __vgpu_nvvm_div_rn_f __vgpu_nvvm_div_rz_f __vgpu_nvvm_div_rm_f __vgpu_nvvm_div_rp_f: (a, b) -> f32, same_f32, |a: f32, b: f32| a / b;
    __vgpu_nvvm_fma_rn_f __vgpu_nvvm_fma_rz_f __vgpu_nvvm_fma_rm_f __vgpu_nvvm_fma_rp_f: (a, b, c) -> f32, same_f32, |a: f32, b: f32, c: f32| a.mul_add(b, c);
    __vgpu_nvvm_rcp_rn_f __vgpu_nvvm_rcp_rz_f __vgpu_nvvm_rcp_rm_f __vgpu_nvvm_rcp_rp_f: (a) -> f32, same_f32, |a: f32| 1.0 / a;
    __vgpu_nvvm_sqrt_rn_f __vgpu_nvvm_sqrt_rz_f __vgpu_nvvm_sqrt_rm_f __vgpu_nvvm_sqrt_rp_f: (a) -> f32, same_f32, |a: f32| a.sqrt();
    __vgpu_nvvm_add_rn_ftz_f __vgpu_nvvm_add_rz_ftz_f __vgpu_nvvm_add_rm_ftz_f __vgpu_nvvm_add_rp_ftz_f: (a, b) -> f32, ftz, |a: f32, b: f32| a + b;
    __vgpu_nvvm_mul_rn_ftz_f __vgpu_nvvm_mul_rz_ftz_f __vgpu_nvvm_mul_rm_ftz_f __vgpu_nvvm_mul_rp_ftz_f: (a, b) -> f32, ftz, |a: f32, b: f32| a * b;
    __vgpu_nvvm_div_rn_ftz_f __vgpu_nvvm_div_rz_ftz_f __vgpu_nvvm_div_rm_ftz_f __vgpu_nvvm_div_rp_ftz_f: (a, b) -> f32, ftz, |a: f32, b: f32| a / b;
    __vgpu_nvvm_fma_rn_ftz_f __vgpu_nvvm_fma_rz_ftz_f __vgpu_nvvm_fma_rm_ftz_f __vgpu_nvvm_fma_rp_ftz_f: (a, b, c) -> f32, ftz, |a: f32, b: f32, c: f32| a.mul_add(b, c);
    __vgpu_nvvm_rcp_rn_ftz_f __vgpu_nvvm_rcp_rz_ftz_f __vgpu_nvvm_rcp_rm_ftz_f __vgpu_nvvm_rcp_rp_ftz_f: (a) -> f32, ftz, |a: f32| 1.0 / a;
    __vgpu_nvvm_sqrt_rn_ftz_f __vgpu_nvvm_sqrt_rz_ftz_f __vgpu_nvvm_sqrt_rm_ftz_f __vgpu_nvvm_sqrt_rp_ftz_f: (a) -> f32, ftz, |a: f32| a.sqrt();
}

/// Operations with no rounding-mode choice.
macro_rules! plain {
    ($($name:ident: ($($x:ident: $t:ty),*) -> $r:ty = $body:expr;)*) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $name($($x: $t),*) -> $r {
            $body
        }
    )*};
}

plain! {
    __vgpu_nvvm_fabs_f64: (a: f64) -> f64 = a.abs();
    __vgpu_nvvm_fabs_d: (a: f64) -> f64 = a.abs();
    __vgpu_nvvm_fabs_f32: (a: f32) -> f32 = a.abs();
    __vgpu_nvvm_fabs_f: (a: f32) -> f32 = a.abs();
    __vgpu_nvvm_fabs_ftz_f32: (a: f32) -> f32 = ftz(a).abs();
    __vgpu_nvvm_fabs_ftz_f: (a: f32) -> f32 = ftz(a).abs();
    __vgpu_nvvm_floor_d: (a: f64) -> f64 = a.floor();
    __vgpu_nvvm_ceil_d: (a: f64) -> f64 = a.ceil();
    __vgpu_nvvm_trunc_d: (a: f64) -> f64 = a.trunc();
    __vgpu_nvvm_round_d: (a: f64) -> f64 = a.round_ties_even();
    __vgpu_nvvm_floor_f: (a: f32) -> f32 = a.floor();
    __vgpu_nvvm_ceil_f: (a: f32) -> f32 = a.ceil();
    __vgpu_nvvm_trunc_f: (a: f32) -> f32 = a.trunc();
    __vgpu_nvvm_round_f: (a: f32) -> f32 = a.round_ties_even();
    __vgpu_nvvm_floor_ftz_f: (a: f32) -> f32 = ftz(ftz(a).floor());
    __vgpu_nvvm_ceil_ftz_f: (a: f32) -> f32 = ftz(ftz(a).ceil());
    __vgpu_nvvm_trunc_ftz_f: (a: f32) -> f32 = ftz(ftz(a).trunc());
    __vgpu_nvvm_round_ftz_f: (a: f32) -> f32 = ftz(ftz(a).round_ties_even());
    __vgpu_nvvm_fmin_d: (a: f64, b: f64) -> f64 = a.min(b);
    __vgpu_nvvm_fmax_d: (a: f64, b: f64) -> f64 = a.max(b);
    __vgpu_nvvm_fmin_f: (a: f32, b: f32) -> f32 = a.min(b);
    __vgpu_nvvm_fmax_f: (a: f32, b: f32) -> f32 = a.max(b);
    __vgpu_nvvm_fmin_ftz_f: (a: f32, b: f32) -> f32 = ftz(ftz(a).min(ftz(b)));
    __vgpu_nvvm_fmax_ftz_f: (a: f32, b: f32) -> f32 = ftz(ftz(a).max(ftz(b)));
    __vgpu_nvvm_saturate_f: (a: f32) -> f32 = if a.is_nan() { 0.0 } else { a.clamp(0.0, 1.0) };
    __vgpu_nvvm_saturate_ftz_f: (a: f32) -> f32 = if a.is_nan() { 0.0 } else { ftz(a).clamp(0.0, 1.0) };
    __vgpu_nvvm_saturate_d: (a: f64) -> f64 = if a.is_nan() { 0.0 } else { a.clamp(0.0, 1.0) };
    __vgpu_nvvm_rcp_approx_ftz_d: (a: f64) -> f64 = 1.0 / a;
    __vgpu_nvvm_rsqrt_approx_d: (a: f64) -> f64 = 1.0 / a.sqrt();
    __vgpu_nvvm_rsqrt_approx_f: (a: f32) -> f32 = 1.0 / a.sqrt();
    __vgpu_nvvm_rsqrt_approx_ftz_f: (a: f32) -> f32 = ftz(1.0 / ftz(a).sqrt());
    __vgpu_nvvm_rsqrt_approx_ftz_d: (a: f64) -> f64 = 1.0 / a.sqrt();
    __vgpu_nvvm_sqrt_f: (a: f32) -> f32 = a.sqrt();
    __vgpu_nvvm_sqrt_approx_f: (a: f32) -> f32 = a.sqrt();
    __vgpu_nvvm_sqrt_approx_ftz_f: (a: f32) -> f32 = ftz(ftz(a).sqrt());
    __vgpu_nvvm_div_approx_f: (a: f32, b: f32) -> f32 = a / b;
    __vgpu_nvvm_div_approx_ftz_f: (a: f32, b: f32) -> f32 = ftz(ftz(a) / ftz(b));
    __vgpu_nvvm_div_full: (a: f32, b: f32) -> f32 = a / b;
    __vgpu_nvvm_div_full_ftz: (a: f32, b: f32) -> f32 = ftz(ftz(a) / ftz(b));
    __vgpu_nvvm_sin_approx_f: (a: f32) -> f32 = a.sin();
    __vgpu_nvvm_sin_approx_ftz_f: (a: f32) -> f32 = ftz(ftz(a).sin());
    __vgpu_nvvm_cos_approx_f: (a: f32) -> f32 = a.cos();
    __vgpu_nvvm_cos_approx_ftz_f: (a: f32) -> f32 = ftz(ftz(a).cos());
    __vgpu_nvvm_lg2_approx_f: (a: f32) -> f32 = a.log2();
    __vgpu_nvvm_lg2_approx_ftz_f: (a: f32) -> f32 = ftz(ftz(a).log2());
    __vgpu_nvvm_lg2_approx_d: (a: f64) -> f64 = a.log2();
    __vgpu_nvvm_ex2_approx_f32: (a: f32) -> f32 = a.exp2();
    __vgpu_nvvm_ex2_approx_f: (a: f32) -> f32 = a.exp2();
    __vgpu_nvvm_ex2_approx_ftz_f32: (a: f32) -> f32 = ftz(ftz(a).exp2());
    __vgpu_nvvm_ex2_approx_ftz_f: (a: f32) -> f32 = ftz(ftz(a).exp2());
    __vgpu_nvvm_ex2_approx_d: (a: f64) -> f64 = a.exp2();
    __vgpu_nvvm_d2i_hi: (a: f64) -> i32 = (a.to_bits() >> 32) as i32;
    __vgpu_nvvm_d2i_lo: (a: f64) -> i32 = a.to_bits() as i32;
    __vgpu_nvvm_lohi_i2d: (lo: i32, hi: i32) -> f64 = f64::from_bits((hi as u32 as u64) << 32 | lo as u32 as u64);
    __vgpu_nvvm_i2d_rn: (a: i32) -> f64 = a as f64;
    __vgpu_nvvm_ui2d_rn: (a: u32) -> f64 = a as f64;
    __vgpu_nvvm_mulhi_i: (a: i32, b: i32) -> i32 = ((a as i64 * b as i64) >> 32) as i32;
    __vgpu_nvvm_mulhi_ui: (a: u32, b: u32) -> u32 = ((a as u64 * b as u64) >> 32) as u32;
    __vgpu_nvvm_mulhi_ll: (a: i64, b: i64) -> i64 = ((a as i128 * b as i128) >> 64) as i64;
    __vgpu_nvvm_mulhi_ull: (a: u64, b: u64) -> u64 = ((a as u128 * b as u128) >> 64) as u64;
    __vgpu_nvvm_mulhi_s: (a: i16, b: i16) -> i16 = ((a as i32 * b as i32) >> 16) as i16;
    __vgpu_nvvm_mulhi_us: (a: u16, b: u16) -> u16 = ((a as u32 * b as u32) >> 16) as u16;
    __vgpu_nvvm_sad_i: (a: i32, b: i32, c: i32) -> i32 = (a as i64 - b as i64).unsigned_abs() as i32 + c;
    __vgpu_nvvm_sad_ui: (a: u32, b: u32, c: u32) -> u32 = a.abs_diff(b).wrapping_add(c);
    __vgpu_nvvm_prmt: (a: u32, b: u32, selector: u32) -> u32 = permute(a, b, selector);
}

/// `prmt.b32` in its default mode: byte i of the result is byte `selector[4i+2:4i]` of
/// `{b, a}`, or that byte's sign replicated when bit `4i+3` is set.
fn permute(a: u32, b: u32, selector: u32) -> u32 {
    let bytes = ((b as u64) << 32 | a as u64).to_le_bytes();
    (0..4).fold(0u32, |out, i| {
        let nibble = (selector >> (4 * i)) & 0xf;
        let byte = bytes[(nibble & 7) as usize];
        let byte = if nibble & 8 != 0 {
            if byte & 0x80 != 0 {
                0xff
            } else {
                0
            }
        } else {
            byte
        };
        out | (byte as u32) << (8 * i)
    })
}

/// Conversions in each rounding mode: float to integer (saturating) and integer or double to
/// float.
macro_rules! conversions {
    ($($rn:ident $rz:ident $rm:ident $rp:ident: ($x:ident: $from:ty) -> $to:ty = $convert:expr;)*) => {$(
        conversions!(@one $rn, NEAREST, $x: $from, $to, $convert);
        conversions!(@one $rz, ZERO, $x: $from, $to, $convert);
        conversions!(@one $rm, DOWN, $x: $from, $to, $convert);
        conversions!(@one $rp, UP, $x: $from, $to, $convert);
    )*};
    (@one $name:ident, $mode:ident, $x:ident: $from:ty, $to:ty, $convert:expr) => {
        #[unsafe(no_mangle)]
        pub extern "C" fn $name($x: $from) -> $to {
            let convert: fn(i32, $from) -> $to = $convert;
            convert($mode, black_box($x))
        }
    };
}

/// The integer a float rounds to in `mode` (then saturated by `as`).
fn round_in(mode: i32, x: f64) -> f64 {
    match mode {
        NEAREST => x.round_ties_even(),
        ZERO => x.trunc(),
        DOWN => x.floor(),
        _ => x.ceil(),
    }
}

conversions! {
    __vgpu_nvvm_d2i_rn __vgpu_nvvm_d2i_rz __vgpu_nvvm_d2i_rm __vgpu_nvvm_d2i_rp: (a: f64) -> i32 = |m, a| round_in(m, a) as i32;
    __vgpu_nvvm_d2ui_rn __vgpu_nvvm_d2ui_rz __vgpu_nvvm_d2ui_rm __vgpu_nvvm_d2ui_rp: (a: f64) -> u32 = |m, a| round_in(m, a) as u32;
    __vgpu_nvvm_d2ll_rn __vgpu_nvvm_d2ll_rz __vgpu_nvvm_d2ll_rm __vgpu_nvvm_d2ll_rp: (a: f64) -> i64 = |m, a| round_in(m, a) as i64;
    __vgpu_nvvm_d2ull_rn __vgpu_nvvm_d2ull_rz __vgpu_nvvm_d2ull_rm __vgpu_nvvm_d2ull_rp: (a: f64) -> u64 = |m, a| round_in(m, a) as u64;
    __vgpu_nvvm_f2i_rn __vgpu_nvvm_f2i_rz __vgpu_nvvm_f2i_rm __vgpu_nvvm_f2i_rp: (a: f32) -> i32 = |m, a| round_in(m, a as f64) as i32;
    __vgpu_nvvm_f2ui_rn __vgpu_nvvm_f2ui_rz __vgpu_nvvm_f2ui_rm __vgpu_nvvm_f2ui_rp: (a: f32) -> u32 = |m, a| round_in(m, a as f64) as u32;
    __vgpu_nvvm_f2ll_rn __vgpu_nvvm_f2ll_rz __vgpu_nvvm_f2ll_rm __vgpu_nvvm_f2ll_rp: (a: f32) -> i64 = |m, a| round_in(m, a as f64) as i64;
    __vgpu_nvvm_f2ull_rn __vgpu_nvvm_f2ull_rz __vgpu_nvvm_f2ull_rm __vgpu_nvvm_f2ull_rp: (a: f32) -> u64 = |m, a| round_in(m, a as f64) as u64;
    __vgpu_nvvm_f2i_rn_ftz __vgpu_nvvm_f2i_rz_ftz __vgpu_nvvm_f2i_rm_ftz __vgpu_nvvm_f2i_rp_ftz: (a: f32) -> i32 = |m, a| round_in(m, ftz(a) as f64) as i32;
    __vgpu_nvvm_f2ui_rn_ftz __vgpu_nvvm_f2ui_rz_ftz __vgpu_nvvm_f2ui_rm_ftz __vgpu_nvvm_f2ui_rp_ftz: (a: f32) -> u32 = |m, a| round_in(m, ftz(a) as f64) as u32;
    __vgpu_nvvm_f2ll_rn_ftz __vgpu_nvvm_f2ll_rz_ftz __vgpu_nvvm_f2ll_rm_ftz __vgpu_nvvm_f2ll_rp_ftz: (a: f32) -> i64 = |m, a| round_in(m, ftz(a) as f64) as i64;
    __vgpu_nvvm_f2ull_rn_ftz __vgpu_nvvm_f2ull_rz_ftz __vgpu_nvvm_f2ull_rm_ftz __vgpu_nvvm_f2ull_rp_ftz: (a: f32) -> u64 = |m, a| round_in(m, ftz(a) as f64) as u64;
    __vgpu_nvvm_ll2d_rn __vgpu_nvvm_ll2d_rz __vgpu_nvvm_ll2d_rm __vgpu_nvvm_ll2d_rp: (a: i64) -> f64 = |m, a| rounded(m, || black_box(a) as f64);
    __vgpu_nvvm_ull2d_rn __vgpu_nvvm_ull2d_rz __vgpu_nvvm_ull2d_rm __vgpu_nvvm_ull2d_rp: (a: u64) -> f64 = |m, a| rounded(m, || black_box(a) as f64);
    __vgpu_nvvm_i2f_rn __vgpu_nvvm_i2f_rz __vgpu_nvvm_i2f_rm __vgpu_nvvm_i2f_rp: (a: i32) -> f32 = |m, a| rounded(m, || black_box(a) as f32);
    __vgpu_nvvm_ui2f_rn __vgpu_nvvm_ui2f_rz __vgpu_nvvm_ui2f_rm __vgpu_nvvm_ui2f_rp: (a: u32) -> f32 = |m, a| rounded(m, || black_box(a) as f32);
    __vgpu_nvvm_ll2f_rn __vgpu_nvvm_ll2f_rz __vgpu_nvvm_ll2f_rm __vgpu_nvvm_ll2f_rp: (a: i64) -> f32 = |m, a| rounded(m, || black_box(a) as f32);
    __vgpu_nvvm_ull2f_rn __vgpu_nvvm_ull2f_rz __vgpu_nvvm_ull2f_rm __vgpu_nvvm_ull2f_rp: (a: u64) -> f32 = |m, a| rounded(m, || black_box(a) as f32);
    __vgpu_nvvm_d2f_rn __vgpu_nvvm_d2f_rz __vgpu_nvvm_d2f_rm __vgpu_nvvm_d2f_rp: (a: f64) -> f32 = |m, a| rounded(m, || black_box(a) as f32);
    __vgpu_nvvm_d2f_rn_ftz __vgpu_nvvm_d2f_rz_ftz __vgpu_nvvm_d2f_rm_ftz __vgpu_nvvm_d2f_rp_ftz: (a: f64) -> f32 = |m, a| ftz(rounded(m, || black_box(a) as f32));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_modes_round_the_way_ptx_names_them() {
        let third_down = __vgpu_nvvm_div_rm_d(1.0, 3.0);
        let third_up = __vgpu_nvvm_div_rp_d(1.0, 3.0);
        assert!(third_down < third_up);
        assert_eq!(__vgpu_nvvm_div_rn_d(1.0, 3.0), 1.0 / 3.0);
        assert_eq!(__vgpu_nvvm_div_rz_d(1.0, 3.0), third_down);
        assert_eq!(__vgpu_nvvm_div_rz_d(-1.0, 3.0), -third_down);
        // The mode is restored afterwards.
        assert_eq!(black_box(1.0f64) / black_box(3.0), 1.0 / 3.0);
    }

    #[test]
    fn conversions_saturate_and_round() {
        assert_eq!(__vgpu_nvvm_d2i_rn(2.5), 2);
        assert_eq!(__vgpu_nvvm_d2i_rn(3.5), 4);
        assert_eq!(__vgpu_nvvm_d2i_rm(-0.5), -1);
        assert_eq!(__vgpu_nvvm_d2i_rp(0.25), 1);
        assert_eq!(__vgpu_nvvm_d2i_rz(1e20), i32::MAX);
        assert_eq!(__vgpu_nvvm_d2i_rn(f64::NAN), 0);
        assert_eq!(__vgpu_nvvm_d2i_hi(1.0), 0x3ff0_0000);
        assert_eq!(__vgpu_nvvm_lohi_i2d(0, 0x3ff0_0000), 1.0);
    }

    #[test]
    fn ftz_flushes_subnormals() {
        let tiny = f32::from_bits(1);
        assert_eq!(__vgpu_nvvm_add_rn_ftz_f(tiny, 0.0), 0.0);
        assert_eq!(__vgpu_nvvm_add_rn_f(tiny, 0.0), tiny);
    }

    #[test]
    fn prmt_selects_and_replicates_signs() {
        assert_eq!(permute(0x4433_2211, 0x8877_6655, 0x3210), 0x4433_2211);
        assert_eq!(permute(0x4433_2211, 0x8877_6655, 0x7654), 0x8877_6655);
        assert_eq!(permute(0x4433_2211, 0x8877_6655, 0x000f), 0x1111_11ff);
    }
}
