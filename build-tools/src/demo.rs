//! `cargo xtask demo`: installs what is needed, builds the runtime, compiles examples/saxpy.c for
//! host offload (the CPU plugin, present everywhere) and runs it with offloading mandatory.

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
    println!("demo: OK");
    Ok(())
}
