//! Errors, paths, and running commands so that every failure names the command and what to do.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::time::SystemTime;

/// A one-line reason, printed as `error: <reason>` by `main`.
#[derive(Debug)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<E: std::error::Error> From<E> for Error {
    fn from(e: E) -> Self {
        Error(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// `bail!("...")`: return an `Error` built with `format!`.
#[macro_export]
macro_rules! bail {
    ($($arg:tt)*) => { return Err($crate::util::Error(format!($($arg)*))) };
}

/// Adds what we were doing to an error: `fs::read(p).context(|| format!("reading {}", p.display()))`.
pub trait Context<T> {
    fn context<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T>;
}

impl<T, E: fmt::Display> Context<T> for std::result::Result<T, E> {
    fn context<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T> {
        self.map_err(|e| Error(format!("{}: {e}", what().into())))
    }
}

impl<T> Context<T> for Option<T> {
    fn context<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T> {
        self.ok_or_else(|| Error(what().into()))
    }
}

/// The workspace root: the parent of this crate's directory.
pub fn root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// `root()/rel`.
pub fn at(rel: &str) -> PathBuf {
    root().join(rel)
}

/// Path shown relative to the workspace root when it lies inside it.
pub fn show(p: &Path) -> String {
    let root = root();
    match p.strip_prefix(&root) {
        Ok(rel) => rel.display().to_string(),
        Err(_) => p.display().to_string(),
    }
}

/// Looks a program up in PATH.
pub fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// The cargo that started us (`$CARGO`), else `cargo` from PATH.
pub fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A command plus what to tell the user when it fails.
pub struct Cmd {
    cmd: Command,
    shown: Vec<String>,
    hint: String,
}

impl Cmd {
    pub fn new(program: impl AsRef<OsStr>) -> Cmd {
        let program = program.as_ref();
        // Runs in the caller's directory (so `cargo xtask cc` sees relative paths as typed);
        // commands that care set `current_dir` themselves.
        let cmd = Command::new(program);
        let name = Path::new(program)
            .file_name()
            .unwrap_or(program)
            .to_string_lossy()
            .into_owned();
        Cmd {
            cmd,
            shown: vec![quote(&name)],
            hint: String::new(),
        }
    }

    pub fn arg(&mut self, a: impl AsRef<OsStr>) -> &mut Cmd {
        self.shown.push(quote(&a.as_ref().to_string_lossy()));
        self.cmd.arg(a);
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(&mut self, args: I) -> &mut Cmd {
        for a in args {
            self.arg(a);
        }
        self
    }

    /// Sets a variable for this child only (shown in front of the command).
    /// Runs in the workspace root.
    pub fn in_root(&mut self) -> &mut Cmd {
        self.cmd.current_dir(root());
        self
    }

    pub fn env(&mut self, k: &str, v: impl AsRef<OsStr>) -> &mut Cmd {
        let v = v.as_ref();
        self.shown
            .insert(0, format!("{k}={}", quote(&v.to_string_lossy())));
        self.cmd.env(k, v);
        self
    }

    pub fn env_remove(&mut self, k: &str) -> &mut Cmd {
        self.cmd.env_remove(k);
        self
    }

    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Cmd {
        self.cmd.current_dir(dir);
        self
    }

    /// What the user should do when this command fails (appended to the error).
    pub fn hint(&mut self, h: impl Into<String>) -> &mut Cmd {
        self.hint = h.into();
        self
    }

    /// The command line as a shell would read it.
    pub fn display(&self) -> String {
        self.shown.join(" ")
    }

    fn spawn_error(&self, e: std::io::Error) -> Error {
        let what = if e.kind() == std::io::ErrorKind::NotFound {
            "not found".to_string()
        } else {
            e.to_string()
        };
        let hint = if self.hint.is_empty() {
            "is it installed? try `cargo xtask setup`"
        } else {
            &self.hint
        };
        Error(format!(
            "could not start `{}` ({what}); {hint}",
            self.shown
                .iter()
                .find(|s| !s.contains('='))
                .cloned()
                .unwrap_or_default()
        ))
    }

    fn failed(&self, status: ExitStatus) -> Error {
        let hint = if self.hint.is_empty() {
            "see its output above".to_string()
        } else {
            self.hint.clone()
        };
        Error(format!(
            "`{}` failed ({}); {hint}",
            self.display(),
            describe(status)
        ))
    }

    /// Runs with inherited stdio; fails unless it exits 0.
    pub fn run(&mut self) -> Result<()> {
        let status = self.status()?;
        if status.success() {
            Ok(())
        } else {
            Err(self.failed(status))
        }
    }

    /// Runs with inherited stdio and returns its status; fails only if it cannot start.
    pub fn status(&mut self) -> Result<ExitStatus> {
        if verbose() {
            eprintln!("+ {}", self.display());
        }
        self.cmd.status().map_err(|e| self.spawn_error(e))
    }

    /// Runs capturing stdout and stderr; fails only if it cannot start.
    pub fn output_raw(&mut self) -> Result<Output> {
        if verbose() {
            eprintln!("+ {}", self.display());
        }
        self.cmd.stdin(Stdio::null());
        self.cmd.output().map_err(|e| self.spawn_error(e))
    }

    /// Runs capturing stdout (returned) and stderr (echoed on failure); fails unless it exits 0.
    pub fn output(&mut self) -> Result<String> {
        let out = self.output_raw()?;
        if !out.status.success() {
            eprint!("{}", String::from_utf8_lossy(&out.stderr));
            return Err(self.failed(out.status));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// "exit status 2" / "killed by signal 11".
pub fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => "unknown status".to_string(),
    }
}

/// A process exit code for a status (128 + signal when killed).
pub fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

/// `RUSTOMP_VERBOSE=1`: print every command before running it.
pub fn verbose() -> bool {
    std::env::var("RUSTOMP_VERBOSE").is_ok_and(|v| !v.is_empty() && v != "0")
}

pub fn mkdirs(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).context(|| format!("cannot create directory {}", dir.display()))
}

pub fn read(p: &Path) -> Result<String> {
    fs::read_to_string(p).context(|| format!("cannot read {}", p.display()))
}

pub fn write(p: &Path, data: impl AsRef<[u8]>) -> Result<()> {
    if let Some(dir) = p.parent() {
        mkdirs(dir)?;
    }
    fs::write(p, data).context(|| format!("cannot write {}", p.display()))
}

/// Copies through a temporary file and a rename, so a library in use is replaced, not overwritten.
pub fn install(from: &Path, to: &Path) -> Result<()> {
    if let Some(dir) = to.parent() {
        mkdirs(dir)?;
    }
    let tmp = to.with_extension("tmp-install");
    fs::copy(from, &tmp)
        .context(|| format!("cannot copy {} to {}", from.display(), tmp.display()))?;
    fs::rename(&tmp, to).context(|| format!("cannot rename {} to {}", tmp.display(), to.display()))
}

/// Makes `link` a symlink to `target`, replacing whatever `link` was.
pub fn symlink(target: &Path, link: &Path) -> Result<()> {
    if let Some(dir) = link.parent() {
        mkdirs(dir)?;
    }
    if fs::symlink_metadata(link).is_ok() {
        if fs::read_link(link).ok().as_deref() == Some(target) {
            return Ok(());
        }
        let removed = if link.is_dir() && !link.is_symlink() {
            fs::remove_dir_all(link)
        } else {
            fs::remove_file(link)
        };
        removed.context(|| format!("cannot replace {}", link.display()))?;
    }
    std::os::unix::fs::symlink(target, link)
        .context(|| format!("cannot link {} -> {}", link.display(), target.display()))
}

pub fn mtime(p: &Path) -> Option<SystemTime> {
    fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// The newest modification time of any file under `dir` (recursively).
pub fn newest_under(dir: &Path) -> Option<SystemTime> {
    let mut newest = None;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                stack.push(p);
            } else if let Some(t) = mtime(&p) {
                newest = newest.max(Some(t));
            }
        }
    }
    newest
}

/// Files in `dir` whose name starts with `prefix` and ends with `suffix`, sorted by name.
pub fn files_matching(dir: &Path, prefix: &str, suffix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with(prefix)
                    && n.ends_with(suffix)
                    && n.len() >= prefix.len() + suffix.len()
            })
        })
        .collect();
    out.sort();
    out
}

/// Prints a step header.
pub fn step(title: &str) {
    println!("==> {title}");
}

/// Waits for `child` (spawned with `process_group(0)`) at most `limit`; past it, ends its whole
/// group and answers `None`.
pub fn wait_or_kill_group(
    child: &mut std::process::Child,
    limit: std::time::Duration,
) -> std::io::Result<Option<ExitStatus>> {
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if start.elapsed() > limit {
            kill_process_group(child);
            return Ok(None);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Ends `child` and every process in its group (it was spawned with `process_group(0)`, so it
/// leads a group of its own), then reaps it.
///
/// Calls kill(2) directly: procps-ng 4.0.2's `kill -KILL -PGID` (Debian bookworm) signals every
/// process the caller may signal, which took down a whole CI run.
pub fn kill_process_group(child: &mut std::process::Child) {
    unsafe extern "C" {
        fn kill(pid: i32, sig: i32) -> i32;
    }
    const SIGKILL: i32 = 9;
    match i32::try_from(child.id()) {
        // A pid of 0 or 1 would make -pid mean "my group" or "everyone": never send that.
        Ok(pid) if pid > 1 => {
            // SAFETY: kill(2) takes plain integers; -pid names exactly the child's own group.
            unsafe { kill(-pid, SIGKILL) };
        }
        _ => {}
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Whether this process runs as root (`id -u` prints 0).
pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Runs `f` over `items` on at most `jobs` threads; results come back in the items' order.
pub fn parallel<T: Sync, R: Send>(items: &[T], jobs: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1).min(items.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every item was processed"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn kill_process_group_ends_the_group_and_only_it() {
        // The group's leader starts a grandchild and records its pid; both must end.
        let dir = std::env::temp_dir().join(format!("xtask-kill-{}", std::process::id()));
        mkdirs(&dir).unwrap();
        let pid_file = dir.join("grandchild.pid");
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("sleep 60 & echo $! > {}; wait", pid_file.display()))
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let grandchild = (0..500)
            .find_map(|_| {
                std::thread::sleep(std::time::Duration::from_millis(10));
                fs::read_to_string(&pid_file)
                    .ok()
                    .filter(|s| s.ends_with('\n'))
            })
            .expect("grandchild started");
        kill_process_group(&mut child);
        let proc_dir = Path::new("/proc").join(grandchild.trim());
        let gone = (0..500).any(|_| {
            let state = fs::read_to_string(proc_dir.join("stat")).unwrap_or_default();
            // Gone, or a zombie waiting for init to reap it.
            let dead = state.is_empty() || state.contains(") Z ");
            if !dead {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            dead
        });
        let _ = fs::remove_dir_all(&dir);
        assert!(gone, "grandchild {} survived", grandchild.trim());
        // This test process (outside the group) is evidently still alive to say so.
    }
}
