//! The arithmetic of loop schedules every part of the runtime shares: the `kmp_sched_t` values
//! clang-22 passes and the trip count of an inclusive loop. A leaf over nothing.

/// `kmp_sched_t` values clang-22 passes.
pub mod sched {
    pub const STATIC_CHUNKED: i32 = 33;
    pub const STATIC: i32 = 34;
    pub const DYNAMIC_CHUNKED: i32 = 35;
    pub const GUIDED_CHUNKED: i32 = 36;
    pub const RUNTIME: i32 = 37;
    pub const AUTO: i32 = 38;
    pub const STATIC_BALANCED_CHUNKED: i32 = 45;
    pub const ORDERED_OFFSET: i32 = 32;
    pub const DISTRIBUTE_STATIC_CHUNKED: i32 = 91;
    pub const DISTRIBUTE_STATIC: i32 = 92;
    /// monotonic / nonmonotonic modifier bits.
    pub const MODIFIERS: i32 = (1 << 29) | (1 << 30);

    /// The base schedule without modifiers or `ordered`.
    pub fn base(kind: i32) -> i32 {
        let kind = kind & !MODIFIERS;
        if (65..=74).contains(&kind) {
            kind - ORDERED_OFFSET
        } else {
            kind
        }
    }
}

/// Iterations of `lb..=ub` by `incr` (0 when empty).
pub fn trip_count(lb: i128, ub: i128, incr: i128) -> i128 {
    match incr {
        i if i > 0 && ub >= lb => (ub - lb) / i + 1,
        i if i < 0 && lb >= ub => (lb - ub) / -i + 1,
        _ => 0,
    }
}
