//! `cfg(rustomp_tsan)` when the crate is built with `-Zsanitizer=thread` (`cargo xtask test
//! --sanitize`): the host emulation then shows ThreadSanitizer the synchronization of its
//! fences (`arch::host::fence`). Stable Rust cannot test `cfg(sanitize)` in the source itself.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(rustomp_tsan)");
    println!("cargo::rerun-if-changed=build.rs");
    let sanitizers = std::env::var("CARGO_CFG_SANITIZE").unwrap_or_default();
    if sanitizers.split(',').any(|s| s == "thread") {
        println!("cargo::rustc-cfg=rustomp_tsan");
    }
}
