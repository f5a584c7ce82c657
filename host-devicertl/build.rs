//! The unit tests call libomp (parallel regions, thread queries) as the images do: link them
//! against LLVM 22's libomp.so.5 (`cargo xtask setup` installs libomp-22-dev) and find it at run
//! time. The staticlib itself links nothing: the device link adds `-lomp`.

fn main() {
    const LLVM_LIB: &str = "/usr/lib/llvm-22/lib";
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-link-search=native={LLVM_LIB}");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{LLVM_LIB}");
}
