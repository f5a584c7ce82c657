//! Running the programs: each job `runs` times per column, alternating the order, collecting
//! the `RESULT` lines into rows.

use super::plan::{Failure, Group, Row, Variant, TIMEOUT};
use crate::util::{self, Result};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Makes sure each variant really loads the library it names (ld.so's trace mode).
pub(super) fn check_libraries(exe: &Path, variants: &[Variant]) -> Result<()> {
    for v in variants {
        let mut cmd = Command::new(exe);
        cmd.env("LD_TRACE_LOADED_OBJECTS", "1")
            .envs(v.env.iter().map(|(k, val)| (k, val)));
        let out = cmd
            .output()
            .map_err(|e| util::Error(format!("cannot run {}: {e}", util::show(exe))))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.contains("libomptarget.so"))
            .unwrap_or("(not loaded)")
            .trim();
        let want = v
            .env
            .iter()
            .find(|(k, _)| k == "LD_LIBRARY_PATH")
            .map_or("", |(_, d)| d.as_str());
        if !line.contains(want) {
            crate::bail!(
                "{} with {} resolves `{line}`, not a library in {want}: the comparison would be meaningless",
                util::show(exe),
                v.label
            );
        }
        let path = line
            .split("=>")
            .nth(1)
            .unwrap_or(line)
            .split(" (")
            .next()
            .unwrap_or(line);
        println!("bench: {:4} -> {}", v.label, path.trim());
    }
    Ok(())
}

/// An executable and the extra environment of one of its runs.
pub(super) type Job = (PathBuf, Option<(&'static str, &'static str)>);

/// Every executable as is, then once per `also_with` setting of its group.
pub(super) fn with_env(exes: &[PathBuf], group: &Group) -> Vec<Job> {
    let mut jobs: Vec<Job> = exes.iter().map(|e| (e.clone(), None)).collect();
    for &setting in group.also_with {
        jobs.extend(exes.iter().map(|e| (e.clone(), Some(setting))));
    }
    jobs
}

/// Runs every job `runs` times per variant, alternating the order, and collects the rows.
pub(super) fn measure(
    jobs: &[Job],
    variants: &[Variant],
    runs: usize,
    mode: &str,
    filter: Option<&str>,
    out_dir: &Path,
) -> (Vec<Row>, Vec<Failure>) {
    let mut rows: Vec<Row> = Vec::new();
    let mut failures = Vec::new();
    for (exe, extra) in jobs {
        let mut name = exe
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if let Some((k, v)) = extra {
            name = format!("{name}.{k}={v}");
        }
        for r in 0..runs {
            let mut order: Vec<usize> = (0..variants.len()).collect();
            if r % 2 == 1 {
                order.reverse();
            }
            for column in order {
                let v = &variants[column];
                let log = out_dir
                    .join("logs")
                    .join(format!("{name}.{}.{r}.log", v.label));
                match run_once(exe, v, *extra, mode, filter, &log) {
                    Ok(stdout) => {
                        for (row, value, unit) in parse_results(&stdout) {
                            let at = match rows.iter().position(|x| x.name == row) {
                                Some(i) => i,
                                None => {
                                    rows.push(Row {
                                        name: row,
                                        unit,
                                        ..Row::default()
                                    });
                                    rows.len() - 1
                                }
                            };
                            rows[at].values[column].push(value);
                            rows[at].rounds[column].push(r);
                        }
                    }
                    Err(why) => failures.push(Failure {
                        column,
                        program: name.clone(),
                        why,
                    }),
                }
            }
        }
    }
    (rows, failures)
}

/// Runs one program to completion; its stdout, or why it failed.
pub(super) fn run_once(
    exe: &Path,
    v: &Variant,
    extra: Option<(&str, &str)>,
    mode: &str,
    filter: Option<&str>,
    log: &Path,
) -> std::result::Result<String, String> {
    use std::os::unix::process::CommandExt;
    let stdout_path = log.with_extension("out");
    let out = File::create(&stdout_path).map_err(|e| e.to_string())?;
    let err = File::create(log).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(exe);
    cmd.args(&v.args)
        .arg(mode)
        .env("OMP_TARGET_OFFLOAD", "mandatory")
        .env_remove("LIBOMPTARGET_INFO")
        .env_remove("LIBOMPTARGET_DEBUG")
        .env_remove("BENCH_FILTER")
        .envs(v.env.iter().map(|(k, val)| (k, val)))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    if let Some(f) = filter {
        cmd.env("BENCH_FILTER", f);
    }
    if let Some((k, val)) = extra {
        cmd.env(k, val);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let status = match util::wait_or_kill_group(&mut child, TIMEOUT) {
        Ok(Some(status)) => status,
        Ok(None) => return Err(format!("timed out after {} s", TIMEOUT.as_secs())),
        Err(e) => return Err(e.to_string()),
    };
    let stdout = std::fs::read_to_string(&stdout_path).unwrap_or_default();
    if status.success() {
        Ok(stdout)
    } else {
        let stderr = std::fs::read_to_string(log).unwrap_or_default();
        let first = stderr
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        Err(format!(
            "{}: {first} (see {})",
            util::describe(status),
            util::show(log)
        ))
    }
}

/// `RESULT <name> <value> <unit>` lines; anything else is ignored.
pub(super) fn parse_results(stdout: &str) -> Vec<(String, f64, String)> {
    stdout
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            if it.next()? != "RESULT" {
                return None;
            }
            let name = it.next()?.to_string();
            let value: f64 = it.next()?.parse().ok()?;
            let unit = it.next().unwrap_or("").to_string();
            value.is_finite().then_some((name, value, unit))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_lines() {
        let out = "noise\nRESULT empty_region 423.5 ns/region\nRESULT bad x y\nRESULT rate 1.5e+06 regions/s\n";
        let got = parse_results(out);
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0],
            ("empty_region".to_string(), 423.5, "ns/region".to_string())
        );
        assert_eq!(got[1].1, 1.5e6);
    }
}
