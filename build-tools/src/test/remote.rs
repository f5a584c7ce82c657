//! `cargo xtask test`'s remote-offload step (issue 26): Open MPI on localhost, the application
//! as the last rank and `rustomp-proxy` ranks lending it their CPU devices
//! (`mpirun --oversubscribe -np N rustomp-proxy : -np 1 ./app`).
//!
//! 1. corpus programs that use one device run on a remote CPU device alone (the application's
//!    own CPU devices hidden with `RUSTOMP_HOST_DEVICES=0`), 2 ranks;
//! 2. the multi-device ones run on two devices of one proxy, on a local and a remote device
//!    (also with every MPI call funneled through one thread, `RUSTOMP_REMOTE_THREADS`), and
//!    (4 ranks) on three proxies' devices (copies from rank to rank);
//! 3. `tests/remote/same_results.c`: one kernel on a local and a remote device, bit-identical;
//!    and OMPT device tracing (corpus 235) on a remote device whose rank's clock runs 5 s ahead
//!    (`RUSTOMP_PROXY_CLOCK_SKEW_NS`): the rank times each copy and kernel, and the records'
//!    translated times must fall inside their constructs' host times;
//! 4. `rustomp-info` under mpirun lists the remote devices as (rank, local device); a program
//!    started by mpirun without proxies runs on its own devices;
//! 5. `tests/remote/proxy_failure.c`: the proxy stopped (SIGSTOP) or killed (SIGKILL, under
//!    `--enable-recovery`, without which mpirun ends the whole job itself) mid-run: the next
//!    construct fails with a message naming the rank and the operation, `mandatory` ends the
//!    program, the default policy falls back to the host; nothing hangs.
//!
//! Every run has a time limit; a failed one's output is in `target/remote/<name>.<config>.log`.

use super::programs::{compile_source, Outcome, JOBS};
use crate::bail;
use crate::cc::Runtime;
use crate::paths::{dist_bin, dist_lib, INFO, MPI_SHIM, PROXY};
use crate::util::{self, at, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Corpus programs for one remote device: mapping, updates, the device memory API, async
/// constructs (several requests in flight), reductions, globals, mappers.
const SINGLE: &[&str] = &[
    "01_basic_target",
    "02_teams_distribute_parallel_for",
    "05_if_false",
    "07_device_api_queries",
    "09_map_to",
    "10_map_from",
    "12_map_alloc",
    "13_map_release_delete",
    "17_struct_members",
    "18_struct_ptr_attach",
    "20_2d_array_section",
    "23_declare_mapper",
    "26_enter_exit_data",
    "28_update_strided",
    "30_use_device_ptr",
    "32_is_device_ptr",
    "34_declare_target_global",
    "36_declare_target_link",
    "40_target_alloc_memcpy",
    "41_memcpy_rect_2d",
    "43_memcpy_async",
    "45_memset",
    "52_teams_reduction",
    "54_nowait_depend_chain",
    "56_many_nowait",
    "82_large_transfer",
    "104_nowait_pipelines",
];

/// Corpus programs that use every device or two of them.
const MULTI: &[&str] = &[
    "06_device_clause",
    "08_device_num_in_target",
    "97_globals_per_device",
    "110_cross_device_mapped_copies",
];

/// The OMPT device-tracing program, run on a remote device whose rank's clock is
/// [`CLOCK_SKEW_NS`] ahead: its records must come back translated into the application's time.
const TRACED: &str = "235_ompt_device_tracing";
/// How far the traced proxy's clock is set ahead (`RUSTOMP_PROXY_CLOCK_SKEW_NS`): five seconds,
/// far outside the slack the program allows.
const CLOCK_SKEW_NS: &str = "5000000000";

/// The remote timeout the failure tests run with (`RUSTOMP_REMOTE_TIMEOUT`, seconds).
const FAULT_TIMEOUT_S: u64 = 2;
/// Per-run limit: ample for any of these programs; reaching it is a hang.
const RUN_LIMIT: Duration = Duration::from_secs(60);

/// A job: the proxies' CPU device counts (one rank each) and the application's.
struct Job<'a> {
    /// Log name suffix.
    config: &'a str,
    proxies: &'a [u32],
    app_devices: u32,
    env: &'a [(&'a str, &'a str)],
    /// Variables for every rank (the proxies and the application).
    all_ranks: &'a [(&'a str, &'a str)],
    /// `--enable-recovery`: a rank that dies does not end the job.
    recovery: bool,
}

struct Tools {
    mpirun: PathBuf,
    proxy: PathBuf,
}

pub fn run() -> Result<()> {
    let tools = tools()?;
    let out = at("target/remote");
    util::mkdirs(&out)?;
    let corpus = at("tests/programs");
    let mut sources: Vec<PathBuf> = SINGLE
        .iter()
        .chain(MULTI)
        .chain([&TRACED])
        .map(|name| corpus.join(format!("{name}.c")))
        .collect();
    sources.extend(
        ["same_results", "proxy_failure"].map(|n| at("tests/remote").join(format!("{n}.c"))),
    );
    println!("remote: compiling {} programs", sources.len());
    let compiled = util::parallel(&sources, JOBS, |src| {
        let exe = out.join(super::programs::stem(src));
        let _ = std::fs::remove_file(&exe);
        let args = vec![
            "-O2".to_string(),
            "-fopenmp-targets=x86_64-pc-linux-gnu".to_string(),
            src.display().to_string(),
            "-o".to_string(),
            exe.display().to_string(),
            "-lm".to_string(),
        ];
        compile_source(
            src,
            Runtime::Ours,
            &args,
            &exe.with_extension("compile.log"),
        )
    });
    let mut failures = Vec::new();
    for (src, result) in sources.iter().zip(&compiled) {
        if let Err(e) = result {
            failures.push(format!("{}: {e}", util::show(src)));
        }
    }
    let exe = |name: &str| out.join(name);
    let mut passed = 0;
    let mut check = |name: &str, verdict: std::result::Result<(), String>| match verdict {
        Ok(()) => passed += 1,
        Err(why) => {
            println!("remote: FAIL {name}: {why}");
            failures.push(format!("{name}: {why}"));
        }
    };

    // 1. One remote device, 2 ranks.
    let alone = Job {
        config: "remote",
        proxies: &[1],
        app_devices: 0,
        env: &[],
        all_ranks: &[],
        recovery: false,
    };
    for name in SINGLE {
        check(name, exits_zero(&tools, &alone, &exe(name)));
    }
    // 2. Several devices.
    let configs = [
        Job {
            config: "two-remote",
            proxies: &[2],
            app_devices: 0,
            env: &[],
            all_ranks: &[],
            recovery: false,
        },
        Job {
            config: "local-and-remote",
            proxies: &[1],
            app_devices: 1,
            env: &[],
            all_ranks: &[],
            recovery: false,
        },
        Job {
            config: "funneled",
            proxies: &[1],
            app_devices: 1,
            env: &[],
            all_ranks: &[("RUSTOMP_REMOTE_THREADS", "funneled")],
            recovery: false,
        },
        Job {
            config: "4-ranks",
            proxies: &[1, 1, 1],
            app_devices: 0,
            env: &[],
            all_ranks: &[],
            recovery: false,
        },
    ];
    for name in MULTI {
        for job in &configs {
            check(
                &format!("{name} ({})", job.config),
                exits_zero(&tools, job, &exe(name)),
            );
        }
    }
    // 2b. Device tracing of a remote device: its rank's times, translated.
    let skewed = Job {
        config: "skewed-clock",
        proxies: &[1],
        app_devices: 0,
        env: &[],
        all_ranks: &[("RUSTOMP_PROXY_CLOCK_SKEW_NS", CLOCK_SKEW_NS)],
        recovery: false,
    };
    check(
        &format!("{TRACED} ({})", skewed.config),
        exits_zero(&tools, &skewed, &exe(TRACED))
            .and_then(|()| expect_in(&log_of(&exe(TRACED), skewed.config), &["device tracing: "])),
    );
    // 3. The same results on a local and a remote device.
    check(
        "same_results (local-and-remote)",
        exits_zero(&tools, &configs[1], &exe("same_results")).and_then(|()| {
            expect_in(
                &log_of(&exe("same_results"), configs[1].config),
                &["same results"],
            )
        }),
    );
    // 4. The listing, and a program under mpirun without proxies.
    check(
        "rustomp-info under mpirun",
        info_lists_remote_devices(&tools),
    );
    check(
        "mpirun without proxies",
        without_proxies(&tools, &exe("01_basic_target")),
    );
    // 5. Faults.
    for (signal, recovery) in [(SIGSTOP, false), (SIGKILL, true)] {
        let what = if signal == SIGSTOP {
            "stopped"
        } else {
            "killed"
        };
        check(
            &format!("proxy {what}, mandatory"),
            proxy_failure(&tools, &exe("proxy_failure"), signal, recovery, true),
        );
    }
    check(
        "proxy stopped, default policy falls back",
        proxy_failure(&tools, &exe("proxy_failure"), SIGSTOP, false, false),
    );

    println!("remote: {passed} passed, {} failed", failures.len());
    if !failures.is_empty() {
        bail!(
            "{} remote test(s) failed (logs in target/remote/): {}",
            failures.len(),
            failures.join("; ")
        );
    }
    Ok(())
}

/// mpirun, and the proxy and MPI shim `cargo xtask host` installed.
fn tools() -> Result<Tools> {
    let Some(mpirun) = util::which("mpirun") else {
        bail!("no mpirun on PATH: `cargo xtask setup` installs Open MPI (openmpi-bin, libopenmpi-dev)");
    };
    let proxy = dist_bin().join(PROXY);
    let shim = dist_lib().join(MPI_SHIM);
    for built in [&proxy, &shim] {
        if !built.is_file() {
            bail!(
                "{} is missing: `cargo xtask host` builds it (the shim needs Open MPI's mpicc: `cargo xtask setup`)",
                util::show(built)
            );
        }
    }
    Ok(Tools { mpirun, proxy })
}

fn log_of(exe: &Path, config: &str) -> PathBuf {
    exe.with_extension(format!("{config}.log"))
}

/// The mpirun command of `job` running `app` (with `app_args`).
fn command(tools: &Tools, job: &Job, app: &Path, log: &Path) -> Result<Command> {
    let mut cmd = Command::new(&tools.mpirun);
    cmd.arg("--oversubscribe");
    if job.recovery {
        cmd.arg("--enable-recovery");
    }
    for devices in job.proxies {
        cmd.args(["-np", "1", "env"])
            .arg(format!("RUSTOMP_HOST_DEVICES={devices}"))
            .arg(&tools.proxy)
            .arg(":");
    }
    cmd.args(["-np", "1", "env"])
        .arg(format!("RUSTOMP_HOST_DEVICES={}", job.app_devices));
    if !job.env.iter().any(|(k, _)| *k == "OMP_TARGET_OFFLOAD") {
        cmd.arg("OMP_TARGET_OFFLOAD=mandatory");
    }
    for (k, v) in job.env {
        cmd.arg(format!("{k}={v}"));
    }
    cmd.arg(app);
    mpi_environment(&mut cmd);
    // mpirun's environment reaches every rank it starts on this machine.
    cmd.envs(job.all_ranks.iter().copied());
    let file = std::fs::File::create(log)?;
    cmd.stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file);
    Ok(cmd)
}

/// What every mpirun here runs with: CI containers run as root, which Open MPI refuses unless
/// told, and often without ptrace rights, which its shared-memory transport's single-copy mode
/// (CMA) needs (the tests measure nothing, so plain copies do); its own process group, so that
/// a run past its limit ends with all its ranks.
fn mpi_environment(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .env("RUSTOMP_REMOTE_TIMEOUT", "10")
        .process_group(0);
}

fn wait(child: &mut std::process::Child) -> Outcome {
    use std::os::unix::process::ExitStatusExt;
    match util::wait_or_kill_group(child, RUN_LIMIT) {
        Ok(Some(status)) => match (status.code(), status.signal()) {
            (Some(c), _) => Outcome::Exit(c),
            (None, Some(s)) => Outcome::Signal(s),
            _ => Outcome::NotRun("unknown exit status".into()),
        },
        Ok(None) => Outcome::Timeout,
        Err(e) => Outcome::NotRun(e.to_string()),
    }
}

fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Exit(c) => format!("exit {c}"),
        Outcome::Signal(s) => format!("signal {s}"),
        Outcome::Timeout => format!("no end within {} s (hang)", RUN_LIMIT.as_secs()),
        Outcome::NotRun(why) => format!("not run: {why}"),
        Outcome::CompileFailed => "not compiled".to_string(),
    }
}

fn exits_zero(tools: &Tools, job: &Job, app: &Path) -> std::result::Result<(), String> {
    if !app.is_file() {
        return Err("not compiled".into());
    }
    let log = log_of(app, job.config);
    let mut child = command(tools, job, app, &log)
        .and_then(|mut c| Ok(c.spawn()?))
        .map_err(|e| format!("cannot start mpirun: {e}"))?;
    match wait(&mut child) {
        Outcome::Exit(0) => Ok(()),
        other => Err(format!("{}, see {}", describe(&other), util::show(&log))),
    }
}

fn expect_in(log: &Path, texts: &[&str]) -> std::result::Result<(), String> {
    let output = std::fs::read_to_string(log).unwrap_or_default();
    match texts.iter().find(|t| !output.contains(*t)) {
        Some(missing) => Err(format!("output lacks {missing:?}, see {}", util::show(log))),
        None => Ok(()),
    }
}

fn info_lists_remote_devices(tools: &Tools) -> std::result::Result<(), String> {
    let info = dist_bin().join(INFO);
    let job = Job {
        config: "info",
        proxies: &[2, 1],
        app_devices: 1,
        env: &[],
        all_ranks: &[],
        recovery: false,
    };
    let log = at("target/remote/rustomp-info.log");
    let mut child = command(tools, &job, &info, &log)
        .and_then(|mut c| Ok(c.spawn()?))
        .map_err(|e| format!("cannot start mpirun: {e}"))?;
    match wait(&mut child) {
        Outcome::Exit(0) => expect_in(
            &log,
            &[
                "Plugin host: 1 device",
                "Plugin remote: 3 devices",
                "Device 0 (rank 0, device 0)",
                "Device 1 (rank 0, device 1)",
                "Device 2 (rank 1, device 0)",
            ],
        ),
        other => Err(format!("{}, see {}", describe(&other), util::show(&log))),
    }
}

/// `mpirun -np 1 ./app`: an MPI launch without proxies leaves the program on its own devices.
fn without_proxies(tools: &Tools, app: &Path) -> std::result::Result<(), String> {
    let log = log_of(app, "no-proxies");
    let file = std::fs::File::create(&log).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(&tools.mpirun);
    cmd.args([
        "--oversubscribe",
        "-np",
        "1",
        "env",
        "RUSTOMP_HOST_DEVICES=1",
    ])
    .arg("OMP_TARGET_OFFLOAD=mandatory")
    .arg(app)
    .stdin(Stdio::null())
    .stdout(file.try_clone().map_err(|e| e.to_string())?)
    .stderr(file);
    mpi_environment(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start mpirun: {e}"))?;
    // Mandatory offload with only a local device: exit 0 is a run on it.
    match wait(&mut child) {
        Outcome::Exit(0) => Ok(()),
        other => Err(format!("{}, see {}", describe(&other), util::show(&log))),
    }
}

const SIGKILL: i32 = 9;
const SIGSTOP: i32 = 19;

fn signal(pid: i32, sig: i32) {
    unsafe extern "C" {
        fn kill(pid: i32, sig: i32) -> i32;
    }
    if pid > 1 {
        // SAFETY: kill(2) takes plain integers; `pid` is a proxy this step started (> 1).
        unsafe { kill(pid, sig) };
    }
}

/// The `rustomp-proxy` processes whose parent is `parent` (mpirun).
fn proxies_of(parent: u32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces, so split after its closing ')'.
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let comm = head.split_once('(').map_or("", |(_, c)| c);
        let ppid = rest
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok());
        if comm == PROXY && ppid == Some(parent) {
            out.push(pid);
        }
    }
    out
}

/// Starts `proxy_failure` on one remote device, stops or kills the proxy once the program
/// says "ready", and checks the end: a bounded failure naming the rank and the operation
/// (`mandatory`), or the host fallback (default policy).
fn proxy_failure(
    tools: &Tools,
    app: &Path,
    sig: i32,
    recovery: bool,
    mandatory: bool,
) -> std::result::Result<(), String> {
    if !app.is_file() {
        return Err("not compiled".into());
    }
    let timeout = FAULT_TIMEOUT_S.to_string();
    let env = [
        ("RUSTOMP_REMOTE_TIMEOUT", timeout.as_str()),
        (
            "OMP_TARGET_OFFLOAD",
            if mandatory { "mandatory" } else { "default" },
        ),
    ];
    let config = format!(
        "{}-{}",
        if sig == SIGSTOP { "stopped" } else { "killed" },
        if mandatory { "mandatory" } else { "default" }
    );
    let job = Job {
        config: &config,
        proxies: &[1],
        app_devices: 0,
        env: &env,
        all_ranks: &[],
        recovery,
    };
    let log = log_of(app, &config);
    let mut cmd = command(tools, &job, app, &log).map_err(|e| e.to_string())?;
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start mpirun: {e}"))?;
    let start = Instant::now();
    let mut proxies = Vec::new();
    while start.elapsed() < RUN_LIMIT {
        let ready = std::fs::read_to_string(&log).is_ok_and(|t| t.contains("ready"));
        if ready {
            proxies = proxies_of(child.id());
            break;
        }
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if proxies.len() != 1 {
        util::kill_process_group(&mut child);
        return Err(format!(
            "found {} rustomp-proxy processes of mpirun after the program's first region, not 1; see {}",
            proxies.len(),
            util::show(&log)
        ));
    }
    signal(proxies[0], sig);
    let signalled = Instant::now();
    let outcome = wait(&mut child);
    let took = signalled.elapsed();
    // A stopped proxy that mpirun could not end: end it (it is ours).
    signal(proxies[0], SIGKILL);
    if matches!(outcome, Outcome::Timeout) {
        return Err(format!(
            "hung: no end within {} s of the proxy's failure, see {}",
            RUN_LIMIT.as_secs(),
            util::show(&log)
        ));
    }
    println!(
        "remote: proxy {}: the job ended {:.1} s after (timeout {FAULT_TIMEOUT_S} s), {}",
        if sig == SIGSTOP { "stopped" } else { "killed" },
        took.as_secs_f64(),
        describe(&outcome)
    );
    if mandatory {
        // mpirun's own status is not the program's under --enable-recovery: read its words.
        expect_in(
            &log,
            &[
                "rank 0",
                "no answer to",
                &format!("within {FAULT_TIMEOUT_S} s"),
                "offloading is mandatory",
            ],
        )
    } else {
        expect_in(&log, &["rank 0", "fell back to the host"])
    }
}
