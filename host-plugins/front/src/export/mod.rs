//! The one shape of a C entry point. Every `extern "C"` export of this library is defined with
//! [`exports!`], which runs its body under [`guard`]: a panic (a bug of ours, or of a plugin)
//! does not unwind into the C caller, where Rust would abort the process with "cannot unwind"
//! and no word on why. It is reported on stderr, naming the entry point and the panic's message,
//!
//! ```text
//! omptarget error: internal error in omp_target_alloc: <the panic's message>
//! ```
//!
//! (after the panic hook's own `thread '...' panicked at <file:line>` lines), and the call
//! returns the entry point's failure value, the one LLVM returns when that call fails: null for
//! an allocation or a pointer query, `OFFLOAD_FAIL` (-1) for a copy or a target construct, 0
//! ("no") for a predicate, nothing for a `void` function. A target construct (`__tgt_target*`)
//! that panics under `OMP_TARGET_OFFLOAD=mandatory` ends the program with LLVM's fatal error 1
//! instead: returning would let clang's code run the region on the host.

use std::any::Any;
#[cfg(test)]
use std::cell::Cell;

/// Runs `f`; a panic is reported as `omptarget error: internal error in WHAT: MESSAGE` and the
/// call returns `on_panic` instead.
pub(crate) fn guard<T>(what: &str, on_panic: T, f: impl FnOnce() -> T) -> T {
    let body = || {
        #[cfg(test)]
        panic_if_injected(what);
        f()
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(payload) => {
            crate::diag::error(&internal_error(what, &*payload));
            if what.starts_with("__tgt_target") && offloading_is_mandatory() {
                // The construct failed: under `mandatory` that ends the program, as any other
                // failure of a target construct (clang's code would run the host version).
                crate::diag::fatal(
                    1,
                    "failure of target construct while offloading is mandatory",
                );
            }
            on_panic
        }
    }
}

/// `OMP_TARGET_OFFLOAD=mandatory`, read without the runtime (whose start may be what panicked).
fn offloading_is_mandatory() -> bool {
    std::env::var("OMP_TARGET_OFFLOAD").is_ok_and(|v| v.eq_ignore_ascii_case("mandatory"))
}

/// The report of a panic in `what`: its message when it has one (`panic!` with a literal or a
/// format string), else a stand-in.
fn internal_error(what: &str, payload: &(dyn Any + Send)) -> String {
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message");
    format!("internal error in {what}: {message}")
}

/// Defines `#[unsafe(no_mangle)] pub [unsafe] extern "C"` functions whose bodies run under
/// [`guard`], under the function's own name. Each body begins with `on_panic: VALUE;`, what
/// the call returns when the rest of the body panics (`()` for a `void` function):
///
/// ```text
/// exports! {
///     /// Documentation and attributes as on any function.
///     pub extern "C" fn omp_target_alloc(size: usize, device_num: i32) -> *mut c_void {
///         on_panic: std::ptr::null_mut();
///         alloc(size, device_num, AllocKind::Device)
///     }
/// }
/// ```
///
/// The body is a closure's: `return` leaves the export, as it would without the macro.
macro_rules! exports {
    () => {};
    (@one [$($unsafety:tt)*] [$(#[$attr:meta])*]
        $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? {
            on_panic: $on_panic:expr;
            $($body:tt)*
        }
        $($rest:tt)*
    ) => {
        $(#[$attr])*
        #[unsafe(no_mangle)]
        pub $($unsafety)* extern "C" fn $name($($arg: $ty),*) $(-> $ret)? {
            $crate::export::guard(stringify!($name), $on_panic, || { $($body)* })
        }
        $crate::export::exports! { $($rest)* }
    };
    ($(#[$attr:meta])* pub unsafe extern "C" fn $($rest:tt)*) => {
        $crate::export::exports! { @one [unsafe] [$(#[$attr])*] $($rest)* }
    };
    ($(#[$attr:meta])* pub extern "C" fn $($rest:tt)*) => {
        $crate::export::exports! { @one [] [$(#[$attr])*] $($rest)* }
    };
}
pub(crate) use exports;

// A test hook of the guard: the tests make a chosen export panic inside it.
#[cfg(test)]
thread_local! {
    /// The guarded entry point whose next call panics on this thread (see `inject_panic`).
    static INJECTED: Cell<Option<&'static str>> = const { Cell::new(None) };
}

/// Makes the next call of export `name` on this thread panic inside its guard, before its
/// body runs: a test can then call any export, with any arguments, and see what its caller
/// would get back.
#[cfg(test)]
pub(crate) fn inject_panic(name: &'static str) {
    INJECTED.with(|i| i.set(Some(name)));
}

#[cfg(test)]
fn panic_if_injected(what: &str) {
    if INJECTED.with(|i| i.get()) == Some(what) {
        INJECTED.with(|i| i.set(None));
        panic!("injected panic in {what}");
    }
}

/// Whether the injected panic is still pending (the export did not go through its guard).
#[cfg(test)]
pub(crate) fn still_injected() -> bool {
    INJECTED.with(|i| i.get()).is_some()
}

#[cfg(test)]
mod tests;
