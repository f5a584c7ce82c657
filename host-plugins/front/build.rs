//! Gives the cdylib LLVM's soname and puts the exported ABI under version node VERS1.0.
use std::fmt::Write;

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let exports = std::fs::read_to_string(format!("{dir}/exports.txt")).expect("exports.txt");
    let mut script = String::from("VERS1.0 {\n  global:\n");
    for name in exports.lines().map(str::trim).filter(|l| !l.is_empty()) {
        writeln!(script, "    {name};").unwrap();
    }
    script.push_str("  local:\n    *;\n};\n");
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let path = format!("{out}/exports.map");
    std::fs::write(&path, script).expect("write version script");
    println!("cargo:rerun-if-changed=exports.txt");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libomptarget.so.22.1");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={path}");
}
