fn main() {
    // Retargeted images name this library as a dependency (DT_NEEDED librustomp_vgpu.so); the
    // plugin loads it first by its full path, and the loader matches the two by this name.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,librustomp_vgpu.so");
}
