//! Compiling the benchmark programs and building the Rust example, each into target/bench/
//! with its log; a failure is one line naming the log.

use crate::cc::{self, Runtime};
use crate::util::{self, at, Cmd};
use std::path::{Path, PathBuf};

/// Compiles `bench/<src>` (plus `extra` objects) unless the executable is newer than every
/// file under bench/. Returns the executable or why it did not build.
pub(super) fn compile_c(
    src: &str,
    out_dir: &Path,
    offload: &[&str],
    extra: Option<&Path>,
) -> std::result::Result<PathBuf, String> {
    let dir = at("bench");
    let exe = out_dir.join(src.trim_end_matches(".c"));
    let log = out_dir.join("logs").join(format!("{src}.compile.log"));
    if let (Some(built), Some(newest)) = (util::mtime(&exe), util::newest_under(&dir)) {
        if built > newest {
            return Ok(exe);
        }
    }
    let _ = std::fs::remove_file(&exe);
    let mut args: Vec<String> = vec!["-O2".into(), "-fopenmp".into()];
    args.extend(offload.iter().map(|s| s.to_string()));
    args.push(dir.join(src).display().to_string());
    if let Some(obj) = extra {
        args.push(obj.display().to_string());
        args.push("-ldl".into());
    }
    args.extend(["-o".into(), exe.display().to_string()]);
    let mut cmd = cc::command(false, Runtime::Ours, &args);
    run_logged(&mut cmd, &log)?;
    println!("bench: compiled {}", util::show(&exe));
    Ok(exe)
}

/// Runs a build command, its output to `log`; Err(one line) on failure.
pub(super) fn run_logged(cmd: &mut Cmd, log: &Path) -> std::result::Result<(), String> {
    let line = cmd.display();
    let out = cmd.output_raw().map_err(|e| e.to_string())?;
    let text = format!(
        "$ {line}\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = util::write(log, &text);
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "compile failed ({}), see {}",
            first_error(&text),
            util::show(log)
        ))
    }
}

/// The first line of a build log that says `error`, shortened.
pub(super) fn first_error(log: &str) -> String {
    let line = log
        .lines()
        .skip(1)
        .find(|l| l.contains("error"))
        .unwrap_or("no error line")
        .trim();
    let mut s: String = line.chars().take(140).collect();
    if s.len() < line.len() {
        s.push_str("...");
    }
    s
}

pub(super) fn build_example(name: &str) -> std::result::Result<PathBuf, String> {
    let log = at("target/bench/logs").join(format!("{name}.build.log"));
    let mut cmd = Cmd::new(util::cargo());
    cmd.in_root()
        .args(["build", "--release", "-p", "devicertl", "--example", name]);
    run_logged(&mut cmd, &log)?;
    Ok(at("target/release/examples").join(name))
}
