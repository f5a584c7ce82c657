//! `cargo xtask test [--quick] [--gpu] [--sanitize]`:
//!
//! 1. `cargo xtask clippy` (clippy `-D warnings`, host workspace and both device targets);
//! 2. `cargo test --workspace` (unit tests and host emulation tests);
//! 3. the runtime builds (`devicertl`, `host`), then the external target RTL check
//!    (`tests/plugins`, see `test/external.rs`);
//! 4. the device-symbol check: every function and external global that clang-22's device code for
//!    the ABI probes (`shared/abi-probes`) needs must be defined by our nvptx bitcode; then each
//!    probe is linked in full for sm_90 and gfx90a; then the device link checks
//!    (`test/device_link.rs`: several translation units, one runtime state per image),
//!    Fortran's runtime calls in target regions (`test/fortran.rs`), and the indirect-call pass
//!    on the device IR it emits (`test/indirect.rs`);
//! 5. the program corpus (`tests/programs`), offloaded to the host plugin, against our library and
//!    LLVM's. The last line is `N passed, N failed` for ours.
//!
//! Before 5 (unless `--quick`): a smoke run of each fuzz target (`cargo xtask fuzz`,
//! `fuzz::SMOKE_SECONDS` each), the corrupted-image experiment (`cargo xtask corrupt`, 200
//! variants: no crash, no hang) and the sanitizers (`cargo xtask test --sanitize`:
//! ThreadSanitizer and Miri).
//!
//! After 4, the remote-offload tests (`test/remote.rs`: Open MPI on localhost, programs on
//! `rustomp-proxy` ranks' CPU devices, a proxy stopped and killed mid-run); `--remote` runs
//! only them (after the host build).
//!
//! `--vgpu` runs only the GPU suite on the virtual GPU (after the runtime builds); `--probes`
//! only step 4's ABI probe checks.
//! `--quick` stops after 4; `RUSTOMP_CORPUS_FILTER=text` limits 5 to the programs whose file
//! name contains `text`. `--gpu` compiles the corpus for a GPU (`RUSTOMP_GPU_ARCH`, default sm_90) into a directory
//! that runs anywhere a driver is (`target/gpu-suite/run.sh`), and runs it here when this machine
//! has a driver (see `test/gpu.rs`); without one it prints a skip line and succeeds.

use crate::devicertl;
use crate::host;
use crate::util::{self, Cmd, Result};

pub struct Options {
    pub gpu: bool,
    pub quick: bool,
    /// Only the runtime builds and the program corpus on the CPU plugin.
    pub corpus_only: bool,
    /// Only the host runtime build and the remote-offload tests (Open MPI, 2 and 4 ranks).
    pub remote_only: bool,
    /// Only the runtime builds and the GPU suite on the virtual GPU.
    pub vgpu_only: bool,
    /// Only the runtime builds and the ABI probe checks.
    pub probes_only: bool,
    /// Only the runtime builds and Fortran's runtime calls in device code.
    pub fortran_only: bool,
}

mod corpus;
mod device_api;
mod device_link;
mod external;
mod fortran;
mod gpu;
mod indirect;
mod probes;
mod programs;
mod remote;

/// One step of the suite alone, after the runtime builds: its exit code, its failure printed
/// under `label`.
fn builds_then(title: &str, label: &str, step: impl FnOnce() -> Result<()>) -> Result<i32> {
    util::step(title);
    devicertl::run(false)?;
    host::run()?;
    Ok(match step() {
        Ok(()) => 0,
        Err(e) => {
            println!("{label}: {e}");
            1
        }
    })
}

pub fn run(o: Options) -> Result<i32> {
    if o.gpu {
        return gpu::run();
    }
    if o.vgpu_only {
        util::step(
            "test --vgpu: runtime builds (devicertl, host), then the GPU suite on the virtual GPU",
        );
        devicertl::run(false)?;
        host::run()?;
        let nvptx_ok = gpu::on_virtual_gpu()?;
        util::step("test --vgpu: gfx90a programs on the virtual GPU (wavefronts of 64)");
        let amdgcn_ok = gpu::amdgcn_on_virtual_gpu()?;
        return Ok(i32::from(!(nvptx_ok && amdgcn_ok)));
    }
    if o.probes_only {
        return builds_then(
            "test --probes: runtime builds (devicertl, host), then the ABI probes",
            "probes",
            probes::run,
        );
    }
    if o.fortran_only {
        return builds_then(
            "test --fortran: runtime builds (devicertl, host), then Fortran's runtime calls in device code",
            "fortran",
            fortran::run,
        );
    }
    if o.corpus_only {
        util::step("test --corpus: runtime builds (devicertl, host), then the program corpus");
        devicertl::run(false)?;
        host::run()?;
        let summary = corpus::run(&corpus::Suite::host())?;
        println!(
            "{} passed, {} failed, {} skipped",
            summary.passed, summary.failed, summary.skipped
        );
        return Ok(i32::from(summary.failed > 0));
    }
    if o.remote_only {
        util::step("test --remote: host runtime build, then remote offload over MPI");
        host::run()?;
        return Ok(match remote::run() {
            Ok(()) => 0,
            Err(e) => {
                println!("remote: {e}");
                1
            }
        });
    }
    let mut failed_steps = Vec::new();

    util::step("test 1/5: clippy -D warnings (host workspace; devicertl for nvptx64, amdgcn)");
    if let Err(e) = crate::clippy::run() {
        println!("clippy: {e}");
        failed_steps.push("clippy".to_string());
    }

    util::step("test: module graphs (cargo xtask modules: no module uses one that uses it back)");
    match crate::modules::run(&[]) {
        Ok(0) => {}
        Ok(_) => failed_steps.push("module cycles".to_string()),
        Err(e) => {
            println!("modules: {e}");
            failed_steps.push("module cycles".to_string());
        }
    }

    util::step("test 2/5: cargo test --workspace");
    let status = Cmd::new(util::cargo())
        .in_root()
        .args(["test", "--workspace"])
        .status()?;
    if !status.success() {
        failed_steps.push("cargo test --workspace".to_string());
    }

    util::step("test 3/5: runtime builds (devicertl, host)");
    devicertl::run(false)?;
    host::run()?;
    // Target RTLs found by naming convention (tests/plugins), against the library just built.
    if let Err(e) = external::run() {
        println!("external RTLs: {e}");
        failed_steps.push("external RTL discovery".to_string());
    }

    util::step("test 4/5: device symbols of the ABI probes");
    // Every device symbol clang-22 references for the probes must come from our bitcode, and
    // every probe must link for sm_90 (ptxas + nvlink) and gfx90a.
    if let Err(e) = probes::run() {
        println!("probes: {e}");
        failed_steps.push("ABI probe check".to_string());
    }
    // Every function of LLVM's device runtime, in both bitcodes.
    if let Err(e) = device_api::run() {
        println!("device API: {e}");
        failed_steps.push("device API check".to_string());
    }
    // Multi-unit programs and one runtime state per image (GPU-only faults, seen in the links).
    if let Err(e) = devicertl::team_shared_bytes().and_then(device_link::run) {
        println!("device links: {e}");
        failed_steps.push("device link checks".to_string());
    }
    // Fortran: flang's runtime calls in a target region run on the CPU plugin; on GPUs output
    // statements run (the virtual GPU's output equals the host's) and the rest is refused by
    // name.
    if let Err(e) = fortran::run() {
        println!("fortran: {e}");
        failed_steps.push("Fortran device-runtime checks".to_string());
    }
    // Calls through host function pointers in device code (the pass plugin, issue 25).
    if let Err(e) = indirect::run() {
        println!("indirect calls: {e}");
        failed_steps.push("indirect-call checks".to_string());
    }
    // Remote offload over MPI (issue 26): proxies on localhost, `test/remote.rs`.
    util::step("test: remote offload over MPI (Open MPI on localhost, 2 and 4 ranks)");
    if let Err(e) = remote::run() {
        println!("remote: {e}");
        failed_steps.push("remote offload".to_string());
    }

    let mut code = 0;
    if !o.quick {
        util::step("test: fuzz smoke run (fuzz/, each target for a few seconds)");
        if let Err(e) = crate::fuzz::smoke() {
            println!("fuzz: {e}");
            failed_steps.push("fuzz smoke run".to_string());
        }
        util::step("test: corrupted device images (cargo xtask corrupt, 200 variants)");
        match crate::corrupt::run(&crate::corrupt::Options {
            variants: 200,
            seed: 0x5eed,
            llvm: false,
        }) {
            Ok(tally) if tally.bad() == 0 => {}
            Ok(tally) => {
                failed_steps.push(format!("corrupted images: {} crashed or hung", tally.bad()))
            }
            Err(e) => {
                println!("corrupt: {e}");
                failed_steps.push("corrupted images".to_string());
            }
        }
        util::step("test: sanitizers (cargo xtask test --sanitize: ThreadSanitizer, Miri)");
        match crate::sanitize::run() {
            Ok(0) => {}
            Ok(_) => failed_steps.push("sanitizers".to_string()),
            Err(e) => {
                println!("sanitizers: {e}");
                failed_steps.push("sanitizers".to_string());
            }
        }
        util::step("test: GPU suite without a GPU (sm_90 binaries against the stand-in CUDA driver, tests/fake-cuda)");
        match gpu::without_gpu() {
            Ok(true) => {}
            Ok(false) => {
                failed_steps.push("GPU suite against the stand-in CUDA driver".to_string())
            }
            Err(e) => {
                println!("gpu suite: {e}");
                failed_steps.push("GPU suite against the stand-in CUDA driver".to_string());
            }
        }
        util::step(
            "test: gfx90a programs on the virtual GPU (amdgcn device code, wavefronts of 64)",
        );
        match gpu::amdgcn_on_virtual_gpu() {
            Ok(true) => {}
            Ok(false) => failed_steps.push("gfx90a programs on the virtual GPU".to_string()),
            Err(e) => {
                println!("virtual GPU (gfx90a): {e}");
                failed_steps.push("gfx90a programs on the virtual GPU".to_string());
            }
        }
        util::step("test 5/5: program corpus (host offload, x86_64-pc-linux-gnu)");
        let summary = corpus::run(&corpus::Suite::host())?;
        report_failed_steps(&failed_steps);
        println!(
            "{} passed, {} failed, {} skipped",
            summary.passed, summary.failed, summary.skipped
        );
        if summary.failed > 0 {
            code = 1;
        }
    } else {
        report_failed_steps(&failed_steps);
    }
    if !failed_steps.is_empty() {
        code = 1;
    }
    Ok(code)
}

fn report_failed_steps(steps: &[String]) {
    if !steps.is_empty() {
        println!("FAILED steps: {} (see above)", steps.join(", "));
    }
}

// ---------------------------------------------------------------------------------------------
// 4. ABI probes

// ---------------------------------------------------------------------------------------------
// 5. Program corpus
