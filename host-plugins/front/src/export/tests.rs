//! Every export runs under its guard: a panic becomes LLVM's failure value, and no export
//! bypasses the guard.

use super::*;
use crate::target::OFFLOAD_FAIL;
use std::ffi::c_void;

#[test]
fn a_panic_in_a_guard_becomes_the_failure_value_and_a_message() {
    assert_eq!(guard("test_export", -1, || panic!("no device {}", 7)), -1);
    assert_eq!(guard("test_export", 5, || 3), 3);
    let null = guard("test_export", std::ptr::null_mut::<c_void>(), || {
        panic!("static text")
    });
    assert!(null.is_null());

    let message = |f: fn()| {
        let payload = std::panic::catch_unwind(f).unwrap_err();
        internal_error("omp_target_alloc", &*payload)
    };
    assert_eq!(
        message(|| panic!("image {} is bad", 3)),
        "internal error in omp_target_alloc: image 3 is bad"
    );
    assert_eq!(
        message(|| panic!("index out of bounds")),
        "internal error in omp_target_alloc: index out of bounds"
    );
    assert_eq!(
        message(|| std::panic::panic_any(42u32)),
        "internal error in omp_target_alloc: a panic without a message"
    );
}

/// Calls `export` with a panic injected into it and returns what the caller gets.
fn panicking<T>(name: &'static str, export: impl FnOnce() -> T) -> T {
    inject_panic(name);
    let value = export();
    assert!(
        !still_injected(),
        "{name} did not run its body under its guard"
    );
    value
}

#[test]
fn each_family_of_exports_returns_llvms_failure_value_on_a_panic() {
    use crate::api::{association::*, copies::*, devices::*, memory::*};
    use crate::*;
    let null = std::ptr::null_mut::<c_void>();
    let mut byte = 0u8;
    let host = &mut byte as *mut u8 as *mut c_void;
    // Device queries: no devices, the host is device 0, no such uid.
    assert_eq!(
        panicking("omp_get_num_devices", || omp_get_num_devices()),
        0
    );
    assert_eq!(
        panicking("omp_get_initial_device", || omp_get_initial_device()),
        0
    );
    assert!(panicking("omp_get_uid_from_device", || omp_get_uid_from_device(0)).is_null());
    // SAFETY: a NUL-terminated string.
    let device = panicking("omp_get_device_from_uid", || unsafe {
        omp_get_device_from_uid(c"x".as_ptr())
    });
    assert_eq!(device, -2);
    // Memory: null for an allocation, -1 for a copy, the pointer itself for a fill.
    assert!(panicking("omp_target_alloc", || omp_target_alloc(16, 0)).is_null());
    assert!(panicking("llvm_omp_target_alloc_shared", || {
        llvm_omp_target_alloc_shared(16, 0)
    })
    .is_null());
    // SAFETY: the body does not run (and null is always accepted).
    panicking("omp_target_free", || unsafe { omp_target_free(null, 0) });
    // SAFETY: the body does not run.
    let copied = panicking("omp_target_memcpy", || unsafe {
        omp_target_memcpy(host, host, 1, 0, 0, 0, 0)
    });
    assert_eq!(copied, OFFLOAD_FAIL);
    // SAFETY: the body does not run.
    let filled = panicking("omp_target_memset", || unsafe {
        omp_target_memset(host, 0, 1, 0)
    });
    assert_eq!(filled, host);
    // Predicates: no.
    assert_eq!(
        panicking("omp_target_is_present", || omp_target_is_present(host, 0)),
        0
    );
    assert!(panicking("omp_get_mapped_ptr", || omp_get_mapped_ptr(host, 0)).is_null());
    assert_eq!(
        panicking("omp_target_associate_ptr", || omp_target_associate_ptr(
            host, host, 1, 0, 0
        )),
        OFFLOAD_FAIL
    );
    // Target constructs and data regions: OFFLOAD_FAIL (clang's code falls back to the host).
    // SAFETY: the bodies do not run.
    unsafe {
        let kernel = panicking("__tgt_target_kernel", || {
            __tgt_target_kernel(null.cast(), 0, 1, 1, null, null.cast())
        });
        assert_eq!(kernel, OFFLOAD_FAIL);
        let data = panicking("__tgt_target_data_begin_mapper", || {
            __tgt_target_data_begin_mapper(
                null.cast(),
                0,
                0,
                null.cast(),
                null.cast(),
                null.cast(),
                null.cast(),
                null.cast(),
                null.cast(),
            )
        });
        assert_eq!(data, OFFLOAD_FAIL);
        panicking("__tgt_register_lib", || __tgt_register_lib(null.cast()));
    }
    assert_eq!(
        panicking("__tgt_mapper_num_components", || {
            __tgt_mapper_num_components(null)
        }),
        0
    );
}

/// A real export driven into a real panic: strides whose byte size overflows `usize` (a
/// panic where overflow checks are on, as in `cargo test`'s debug build).
#[cfg(debug_assertions)]
#[test]
fn omp_target_memcpy_rect_with_overflowing_strides_fails_instead_of_aborting() {
    let (mut dst, src) = ([0u8; 4], [0u8; 4]);
    let volume = [0usize, 1];
    let offsets = [0usize, 0];
    let dimensions = [1usize, usize::MAX];
    // SAFETY: every array holds `num_dims` (2) elements; the volume copies nothing.
    let rc = unsafe {
        crate::api::copies::omp_target_memcpy_rect(
            dst.as_mut_ptr().cast(),
            src.as_ptr().cast(),
            2,
            2,
            volume.as_ptr(),
            offsets.as_ptr(),
            offsets.as_ptr(),
            dimensions.as_ptr(),
            dimensions.as_ptr(),
            0,
            0,
        )
    };
    assert_eq!(rc, OFFLOAD_FAIL);
}

/// Every export is defined with `exports!`: no other file of this crate says `no_mangle`.
#[test]
fn no_export_bypasses_the_guard() {
    /// Reads the files under `dir` except those of the `export` module itself.
    fn check(dir: &std::path::Path, export: &std::path::Path, checked: &mut usize) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path == export {
                continue;
            }
            if path.is_dir() {
                check(&path, export, checked);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(
                    !text.contains("no_mangle"),
                    "{}: define exports with `exports!`",
                    path.display()
                );
                *checked += 1;
            }
        }
    }
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut checked = 0;
    check(&src, &src.join("export"), &mut checked);
    assert!(
        checked >= 20,
        "read {checked} files under {}",
        src.display()
    );
}
