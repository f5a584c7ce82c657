//! `cargo xtask`: rustomp's build tool (see `cargo xtask help`).

mod bench;
mod cc;
mod clippy;
mod corrupt;
mod demo;
mod devicecode;
mod deviceir;
mod devicertl;
mod fc;
mod fuzz;
mod host;
mod host_devicertl;
mod install;
mod modules;
mod pass;
mod paths;
mod sanitize;
mod setup;
mod test;
mod util;
mod vgpu;
mod vgpu_build;

use util::Result;

const HELP: &str = "\
cargo xtask <command> [options]

Commands:
  setup               install what the build needs (Debian LLVM 22 packages, CUDA ptxas/nvlink
                      in target/tools, rustup components, the nightly toolchain for fuzz); only
                      what is missing
  devicertl [--force] build the device runtime bitcode (nvptx64, amdgcn) into dist/lib
  host                build the host library and install dist/lib/libomptarget.so.22.1, and the
                      x86_64 device runtime of flang's host-offload images
                      (dist/lib/x86_64-pc-linux-gnu/libompdevice.a)
                      LLVM pass plugin dist/lib/rustomp-indirect-calls.so (compiler/)
  cc [clang args]     clang-22 with the rustomp runtime wired in (also: c++ for clang++-22);
                      --runtime=llvm builds against LLVM's libomptarget instead
  fc [flang args]     flang-22 likewise (Fortran; x86_64 host offload through host-devicertl);
                      names the device symbols a failed device link could not resolve
  demo [--no-setup]   setup, build, compile examples/saxpy.c and run it offloaded
  clippy              clippy -D warnings: the host workspace (all targets) and devicertl for
                      nvptx64 and amdgcn as the device build compiles it, and cargo fmt --check;
                      prints each run's time
  modules [--graph]   each crate's module dependencies: fails on a cycle (two modules that use
                      each other); --graph prints every module's uses
  test [--quick]      clippy, cargo test, runtime builds, device-symbol check of the ABI probes, and the
                      program corpus (tests/programs) against rustomp and LLVM; --quick skips the corpus
  test --corpus       only the runtime builds and the program corpus on the CPU plugin
  test --remote       only the host build and the remote-offload tests (Open MPI, mpirun on localhost)
  test --probes       only the runtime builds and the ABI probes (device symbols, sm_90/gfx90a links,
                      gfx90a registers)
  test --fortran      only the runtime builds and Fortran's runtime calls in device code (print and
                      write on the virtual GPU against the host's, sm_90/gfx90a links, refusals)
  test --gpu          the corpus on a GPU (RUSTOMP_GPU_ARCH, default sm_90; gfx* for AMD); skipped without its driver
  test --sanitize     ThreadSanitizer over the emulation, plugin and host-library tests, Miri over
                      the pure-Rust ones (nightly toolchain)
  bench [--quick] [filter]
                      benchmarks (bench/, BENCHMARKS.md): our libomptarget against LLVM's, median
                      of alternating runs; filter: a group (overhead, mapping, threads, nowait,
                      indirect, gpu) or text in a measurement's name; --quick: fewer, shorter runs;
                      `bench remote`: remote offload over MPI against plain MPI (2 ranks, ratios)
  corrupt [--variants N] [--seed S] [--llvm]
                      the corrupted-image experiment: N variants (default 1000) of a host-offload
                      program with 1-4 bytes of its device image's headers changed, run with our
                      library (and LLVM's); fails on a crash or hang of ours
  fuzz [TARGET...] [--time S] [--runs N]
                      the libFuzzer targets of fuzz/ (container, image, registration, mapping, remote_wire), each
                      for S seconds (default 60) from the seeds in fuzz/corpus; fails on a crash;
                      --remake-corpus rebuilds the seeds from compiled programs (fuzz/README.md)
  install [--prefix P] [--deb]
                      build and install the runtime for plain clang-22 into P (default
                      ~/.local/rustomp): the host library, device runtime, CUDA tools, rustomp-info,
                      a clang configuration and P/env.sh to source; --deb: the same layout in
                      /opt/rustomp (or P) as target/deb/rustomp_<version>_amd64.deb instead
  uninstall [--prefix P]
                      remove what `install` wrote into P (its manifest), and nothing else
  help                this text

Environment: RUSTOMP_VERBOSE=1 prints every command run.";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match dispatch(&args) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {}", e.to_string().replace('\n', " "));
            std::process::exit(1);
        }
    }
}

/// Checks that `args` holds only flags from `known`; returns which were given.
fn flags(cmd: &str, args: &[String], known: &[&str]) -> Result<Vec<bool>> {
    for a in args {
        if !known.contains(&a.as_str()) {
            let accepted = if known.is_empty() {
                "no options".to_string()
            } else {
                known.join(", ")
            };
            bail!("`cargo xtask {cmd}` does not take `{a}` (accepted: {accepted})");
        }
    }
    Ok(known.iter().map(|k| args.iter().any(|a| a == k)).collect())
}

fn dispatch(args: &[String]) -> Result<i32> {
    let Some((cmd, rest)) = args.split_first() else {
        println!("{HELP}");
        return Ok(0);
    };
    match cmd.as_str() {
        "setup" => {
            flags(cmd, rest, &[])?;
            setup::run()?;
        }
        "devicertl" => {
            let f = flags(cmd, rest, &["--force"])?;
            devicertl::run(f[0])?;
        }
        "host" => {
            flags(cmd, rest, &[])?;
            host::run()?;
        }
        "clippy" => {
            flags(cmd, rest, &[])?;
            clippy::run()?;
        }
        "modules" => {
            flags(cmd, rest, &["--graph"])?;
            return modules::run(rest);
        }
        "cc" => return vgpu_build::run_cc(false, rest),
        "c++" | "cxx" => return vgpu_build::run_cc(true, rest),
        "fc" | "fortran" => return vgpu_build::run_fc(rest),
        "demo" => {
            let f = flags(cmd, rest, &["--no-setup"])?;
            demo::run(!f[0])?;
        }
        "test" => {
            let f = flags(
                cmd,
                rest,
                &[
                    "--gpu",
                    "--quick",
                    "--sanitize",
                    "--corpus",
                    "--remote",
                    "--vgpu",
                    "--probes",
                    "--fortran",
                ],
            )?;
            if f[2] {
                return sanitize::run();
            }
            return test::run(test::Options {
                gpu: f[0],
                quick: f[1],
                corpus_only: f[3],
                remote_only: f[4],
                vgpu_only: f[5],
                probes_only: f[6],
                fortran_only: f[7],
            });
        }
        "bench" => {
            let mut quick = false;
            let mut filter = None;
            for a in rest {
                match a.as_str() {
                    "--quick" => quick = true,
                    f if f.starts_with('-') => {
                        bail!("`cargo xtask bench` does not take `{f}` (accepted: --quick, and one filter)")
                    }
                    f if filter.is_none() => filter = Some(f.to_string()),
                    f => bail!("`cargo xtask bench` takes one filter; got a second one, `{f}`"),
                }
            }
            return bench::run(bench::Options { quick, filter });
        }
        "corrupt" => {
            let mut o = corrupt::Options {
                variants: 1000,
                seed: 0x5eed,
                llvm: false,
            };
            let mut rest = rest.iter();
            while let Some(a) = rest.next() {
                let mut number = |what: &str| -> Result<u64> {
                    let Some(v) = rest.next() else {
                        bail!("`{a}` needs {what}")
                    };
                    match v.parse() {
                        Ok(n) => Ok(n),
                        Err(_) => bail!("`{a}` needs {what}, got `{v}`"),
                    }
                };
                match a.as_str() {
                    "--variants" => o.variants = number("a count")? as usize,
                    "--seed" => o.seed = number("a number")?,
                    "--llvm" => o.llvm = true,
                    other => bail!("`cargo xtask corrupt` does not take `{other}` (accepted: --variants N, --seed S, --llvm)"),
                }
            }
            return Ok(i32::from(corrupt::run(&o)?.bad() > 0));
        }
        "fuzz" => {
            let mut o = fuzz::Options {
                targets: Vec::new(),
                seconds: None,
                runs: None,
                remake_corpus: false,
            };
            let mut rest = rest.iter();
            while let Some(a) = rest.next() {
                let mut number = || -> Result<u64> {
                    match rest.next().map(|v| v.parse()) {
                        Some(Ok(n)) => Ok(n),
                        _ => bail!("`{a}` needs a number"),
                    }
                };
                match a.as_str() {
                    "--time" => o.seconds = Some(number()?),
                    "--runs" => o.runs = Some(number()?),
                    "--remake-corpus" => o.remake_corpus = true,
                    f if f.starts_with('-') => bail!("`cargo xtask fuzz` does not take `{f}` (accepted: target names, --time S, --runs N, --remake-corpus)"),
                    target => o.targets.push(target.to_string()),
                }
            }
            return fuzz::run(&o);
        }
        "install" | "uninstall" => {
            let mut prefix = None;
            let mut deb = false;
            let mut rest = rest.iter();
            while let Some(a) = rest.next() {
                match a.as_str() {
                    "--prefix" => match rest.next() {
                        Some(p) => prefix = Some(std::path::PathBuf::from(p)),
                        None => bail!("`--prefix` needs a directory"),
                    },
                    "--deb" if cmd == "install" => deb = true,
                    other => {
                        if let Some(p) = other.strip_prefix("--prefix=") {
                            prefix = Some(p.into());
                            continue;
                        }
                        let accepted = if cmd == "install" {
                            "--prefix P, --deb"
                        } else {
                            "--prefix P"
                        };
                        bail!("`cargo xtask {cmd}` does not take `{other}` (accepted: {accepted})")
                    }
                }
            }
            if cmd == "install" {
                install::install(&install::Options { prefix, deb })?;
            } else {
                install::uninstall(prefix.as_deref())?;
            }
        }
        "help" | "-h" | "--help" => println!("{HELP}"),
        other => bail!("unknown command `{other}`; `cargo xtask help` lists the commands"),
    }
    Ok(0)
}
