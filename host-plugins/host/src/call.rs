//! Calls a function with any number of 64-bit integer arguments (SysV x86_64): the first six
//! in registers, the rest on the stack. This replaces libffi for the one signature shape clang
//! gives host-offload kernels (every parameter is a pointer or a 64-bit literal).

use core::ffi::c_void;

core::arch::global_asm!(
    ".globl rustomp_call_u64_args",
    ".type rustomp_call_u64_args,@function",
    "rustomp_call_u64_args:",
    // rdi = function, rsi = values (at least 6 readable), rdx = count
    "push rbp",
    "mov rbp, rsp",
    "push r12",
    "push r13",
    "mov r11, rdi",
    "mov r12, rsi",
    "mov r13, rdx",
    "mov rcx, r13",
    "sub rcx, 6",
    "jle 2f",
    // Keep rsp 16-byte aligned at the call: pad when an odd number of values goes on the stack.
    "test rcx, 1",
    "jz 3f",
    "sub rsp, 8",
    "3:",
    "mov rax, [r12 + rcx*8 + 40]",
    "push rax",
    "dec rcx",
    "jnz 3b",
    "2:",
    "mov rdi, [r12]",
    "mov rsi, [r12 + 8]",
    "mov rdx, [r12 + 16]",
    "mov rcx, [r12 + 24]",
    "mov r8, [r12 + 32]",
    "mov r9, [r12 + 40]",
    "xor eax, eax",
    "call r11",
    "lea rsp, [rbp - 16]",
    "pop r13",
    "pop r12",
    "pop rbp",
    "ret",
    ".size rustomp_call_u64_args, . - rustomp_call_u64_args",
);

unsafe extern "C" {
    fn rustomp_call_u64_args(function: *const c_void, values: *const u64, count: usize);
}

/// The values the trampoline reads at least: one per argument register.
pub const REGISTER_VALUES: usize = 6;

/// Calls `function` with the first `count` values of `buffer`, which holds at least
/// [`REGISTER_VALUES`] (what lies past `count` is read into registers the function ignores),
/// so that a caller fills its own buffer and nothing is copied again.
///
/// # Safety
/// `function` takes exactly `count` 64-bit integer or pointer parameters and returns nothing;
/// the values are valid for it.
pub unsafe fn call_with_u64_args(function: *const c_void, buffer: &[u64], count: usize) {
    assert!(buffer.len() >= count.max(REGISTER_VALUES));
    // SAFETY: `buffer` holds at least six values and `count` meaningful ones; the caller
    // guarantees the signature.
    unsafe { rustomp_call_u64_args(function, buffer.as_ptr(), count) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    static SUM: AtomicU64 = AtomicU64::new(0);

    extern "C" fn take3(a: u64, b: u64, c: u64) {
        SUM.store(a * 100 + b * 10 + c, Ordering::SeqCst);
    }

    #[allow(
        clippy::too_many_arguments,
        reason = "the test calls a nine-argument C function"
    )]
    extern "C" fn take9(a: u64, b: u64, c: u64, d: u64, e: u64, f: u64, g: u64, h: u64, i: u64) {
        SUM.store(
            a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h + 9 * i,
            Ordering::SeqCst,
        );
    }

    #[test]
    fn register_and_stack_arguments_arrive_in_order() {
        // SAFETY: the signatures match the value counts.
        unsafe { call_with_u64_args(take3 as *const c_void, &[1, 2, 3, 7, 7, 7], 3) };
        assert_eq!(SUM.load(Ordering::SeqCst), 123);
        let values = [1, 1, 1, 1, 1, 1, 1, 1, 10];
        // SAFETY: as above.
        unsafe { call_with_u64_args(take9 as *const c_void, &values, values.len()) };
        assert_eq!(
            SUM.load(Ordering::SeqCst),
            1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 90
        );
    }

    #[test]
    #[should_panic]
    fn a_buffer_shorter_than_the_argument_registers_is_refused() {
        // SAFETY: not called: the buffer is refused first.
        unsafe { call_with_u64_args(take3 as *const c_void, &[1, 2, 3], 3) };
    }
}
