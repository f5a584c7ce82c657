//! The inline PTX blocks the retargeting knows, as functions: libdevice's 128-bit integer
//! helpers (its trigonometric argument reduction). `build-tools/src/vgpu/retarget.rs` names each
//! block by its instructions; a 128-bit value travels as (low, high) 64-bit halves, as the
//! blocks' `mov.b64 {lo, hi}` operands do.

/// Two 64-bit halves, returned in two registers as the replaced `{ i64, i64 }` asm result.
#[repr(C)]
pub struct Wide {
    pub low: u64,
    pub high: u64,
}

fn wide(value: u128) -> Wide {
    Wide {
        low: value as u64,
        high: (value >> 64) as u64,
    }
}

fn join(low: u64, high: u64) -> u128 {
    (high as u128) << 64 | low as u128
}

/// `add.cc.u32` ... `addc.u32` over four words: (a_lo, a_hi) + (b_lo, b_hi), modulo 2^128.
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_ptx_add_u128(a_low: u64, a_high: u64, b_low: u64, b_high: u64) -> Wide {
    wide(join(a_low, a_high).wrapping_add(join(b_low, b_high)))
}

/// `sub.cc.u32` ... `subc.u32` over four words.
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_ptx_sub_u128(a_low: u64, a_high: u64, b_low: u64, b_high: u64) -> Wide {
    wide(join(a_low, a_high).wrapping_sub(join(b_low, b_high)))
}

/// `mul.lo.u32` / `mad.*.u32` chain: the full 128-bit product of two 64-bit values.
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_ptx_mul_wide_u64(a: u64, b: u64) -> Wide {
    wide(a as u128 * b as u128)
}

/// `mad.lo.cc.u32 r0, alo, blo, clo` chain: a * b + c in 128 bits.
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_ptx_mad_wide_u64(a: u64, b: u64, c: u64) -> Wide {
    wide((a as u128 * b as u128).wrapping_add(c as u128))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carries_cross_the_halves() {
        let r = __vgpu_ptx_add_u128(u64::MAX, 0, 1, 0);
        assert_eq!((r.low, r.high), (0, 1));
        let r = __vgpu_ptx_sub_u128(0, 1, 1, 0);
        assert_eq!((r.low, r.high), (u64::MAX, 0));
        let r = __vgpu_ptx_mul_wide_u64(u64::MAX, u64::MAX);
        assert_eq!((r.low, r.high), (1, u64::MAX - 1));
        let r = __vgpu_ptx_mad_wide_u64(u64::MAX, 2, 3);
        assert_eq!((r.low, r.high), (1, 2));
    }
}

macro_rules! subtractions {
    ($($name:ident($t:ty) = $add:path;)*) => {$(
        /// `sub.<mode>`: the add of the same mode with the second operand negated (exact).
        #[unsafe(no_mangle)]
        pub extern "C" fn $name(a: $t, b: $t) -> $t {
            $add(a, -b)
        }
    )*};
}

use crate::math::*;

subtractions! {
    __vgpu_ptx_sub_rn_f32(f32) = __vgpu_nvvm_add_rn_f;
    __vgpu_ptx_sub_rz_f32(f32) = __vgpu_nvvm_add_rz_f;
    __vgpu_ptx_sub_rm_f32(f32) = __vgpu_nvvm_add_rm_f;
    __vgpu_ptx_sub_rp_f32(f32) = __vgpu_nvvm_add_rp_f;
    __vgpu_ptx_sub_rn_ftz_f32(f32) = __vgpu_nvvm_add_rn_ftz_f;
    __vgpu_ptx_sub_rz_ftz_f32(f32) = __vgpu_nvvm_add_rz_ftz_f;
    __vgpu_ptx_sub_rm_ftz_f32(f32) = __vgpu_nvvm_add_rm_ftz_f;
    __vgpu_ptx_sub_rp_ftz_f32(f32) = __vgpu_nvvm_add_rp_ftz_f;
    __vgpu_ptx_sub_rn_f64(f64) = __vgpu_nvvm_add_rn_d;
    __vgpu_ptx_sub_rz_f64(f64) = __vgpu_nvvm_add_rz_d;
    __vgpu_ptx_sub_rm_f64(f64) = __vgpu_nvvm_add_rm_d;
    __vgpu_ptx_sub_rp_f64(f64) = __vgpu_nvvm_add_rp_d;
}

#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_ptx_rcp_approx_ftz_f32(a: f32) -> f32 {
    __vgpu_nvvm_rcp_rn_ftz_f(a)
}
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_ptx_rsqrt_approx_ftz_f64(a: f64) -> f64 {
    1.0 / a.sqrt()
}
/// `bfind.shiftamt.u32`: the left shift that brings the highest set bit to bit 31; all ones
/// for 0.
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_ptx_bfind_shiftamt_u32(a: u32) -> u32 {
    if a == 0 {
        u32::MAX
    } else {
        a.leading_zeros()
    }
}
/// `setp.equ.f64 p, a, b; selp.f64 d, x, y, p`: x when a == b or either is NaN, else y.
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_ptx_select_equal_or_unordered_f64(a: f64, b: f64, x: f64, y: f64) -> f64 {
    if a == b || a.is_nan() || b.is_nan() {
        x
    } else {
        y
    }
}
