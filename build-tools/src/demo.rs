//! `cargo xtask demo`: installs what is needed, builds the runtime, compiles examples/saxpy.c for
//! host offload (the CPU plugin, present everywhere) and runs it with offloading mandatory, then
//! again traced by the OMPT trace tool (`target/demo/saxpy-trace.{json,svg}`).

use crate::cc::{self, Runtime};
use crate::util::{self, at, Cmd, Result};
use crate::{devicertl, host, setup};

pub fn run(with_setup: bool) -> Result<()> {
    if with_setup {
        setup::run()?;
    }
    devicertl::run(false)?;
    host::run()?;

    util::step("demo: compile examples/saxpy.c");
    let src = at("examples/saxpy.c");
    let exe = at("target/demo/saxpy");
    util::mkdirs(exe.parent().unwrap_or(&util::root()))?;
    let args: Vec<String> = vec![
        "-O2".into(),
        "-fopenmp-targets=x86_64-pc-linux-gnu".into(),
        src.display().to_string(),
        "-o".into(),
        exe.display().to_string(),
    ];
    let mut compile = cc::command(false, Runtime::Ours, &args);
    println!("{}", compile.display());
    compile
        .hint("examples/saxpy.c did not compile; see clang's message above")
        .run()?;

    util::step("demo: run target/demo/saxpy (OMP_TARGET_OFFLOAD=mandatory)");
    Cmd::new(&exe)
        .env("OMP_TARGET_OFFLOAD", "mandatory")
        .hint("the offloaded saxpy failed; rerun it with LIBOMPTARGET_INFO=-1 or LIBOMPTARGET_DEBUG=1 for details")
        .run()?;
    // The same run traced by the OMPT trace tool: the device's kernel and transfers inside
    // the host's construct (README, "Profilers and other tools"; docs/saxpy-trace.svg).
    util::step("demo: trace it (RUSTOMP_OMPT_TRACE, the OMPT trace tool)");
    for trace in [
        "target/demo/saxpy-trace.json",
        "target/demo/saxpy-trace.svg",
    ] {
        Cmd::new(&exe)
            .env("OMP_TARGET_OFFLOAD", "mandatory")
            .env("RUSTOMP_OMPT_TRACE", at(trace))
            .hint("the traced run failed; the untraced one passed, so the trace tool is at fault")
            .run()?;
    }
    println!("demo: OK (traces in target/demo/: open saxpy-trace.json in ui.perfetto.dev)");
    Ok(())
}
