//! Time and small queries with no better home.

use crate::arch;

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_wtime() -> f64 {
    arch::clock_ns() as f64 * 1.0e-9
}
#[unsafe(no_mangle)]
pub extern "C" fn omp_get_wtick() -> f64 {
    arch::CLOCK_TICK_SECONDS
}
/// Trap with a message the host sees as a failed launch (used by `assert` in device code).
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_abort() -> ! {
    arch::trap()
}
