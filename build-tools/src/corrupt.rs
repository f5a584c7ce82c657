//! `cargo xtask corrupt [--variants N] [--seed S] [--llvm]`: the corrupted-header experiment.
//!
//! Builds one ordinary host-offload program, then writes variants of it with a few bytes
//! changed in the headers of its device image: the `OffloadBinary` header and entry, the
//! embedded ELF's header and program headers. Each variant runs under
//! `OMP_TARGET_OFFLOAD=mandatory` with our library (and with LLVM's, `--llvm`), and the way each
//! run ended is counted. A run may pass (the change did not matter) or stop with the runtime's
//! message; it must never die of a signal the runtime did not raise itself, nor hang.
//! `cargo xtask test` runs a short version and fails on any crash or hang of ours.

use crate::cc::{self, Runtime};
use crate::paths::LLVM_LIB;
use crate::util::{self, Context, Result};
use object::{Object, ObjectSection};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

pub struct Options {
    pub variants: usize,
    pub seed: u64,
    pub llvm: bool,
}

const PROGRAM: &str = "tests/programs/01_basic_target.c";
const TIMEOUT: Duration = Duration::from_secs(10);

/// How one run ended.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Ending {
    Passed,
    /// Stopped with the runtime's message (exit status or the SIGABRT of a fatal error); the
    /// first message line, digits masked, groups them.
    Refused(String),
    /// Failed without any runtime message (the program's own check, or a silent failure).
    FailedSilently(String),
    /// A signal the runtime did not announce.
    Crashed(String),
    Hung,
}

impl Ending {
    fn is_bad(&self) -> bool {
        matches!(self, Ending::Crashed(_) | Ending::Hung)
    }
}

/// Counts per ending for one runtime.
#[derive(Default)]
pub struct Tally {
    endings: BTreeMap<Ending, usize>,
}

impl Tally {
    pub fn bad(&self) -> usize {
        self.endings
            .iter()
            .filter(|(e, _)| e.is_bad())
            .map(|(_, n)| n)
            .sum()
    }
    fn count(&self, f: impl Fn(&Ending) -> bool) -> usize {
        self.endings
            .iter()
            .filter(|(e, _)| f(e))
            .map(|(_, n)| n)
            .sum()
    }
    fn print(&self, runtime: &str, total: usize) {
        println!(
            "{runtime}: {total} variants: {} passed, {} stopped with a message, {} failed without one, {} crashed, {} hung",
            self.count(|e| *e == Ending::Passed),
            self.count(|e| matches!(e, Ending::Refused(_))),
            self.count(|e| matches!(e, Ending::FailedSilently(_))),
            self.count(|e| matches!(e, Ending::Crashed(_))),
            self.count(|e| *e == Ending::Hung),
        );
        let mut rows: Vec<_> = self
            .endings
            .iter()
            .filter(|(e, _)| **e != Ending::Passed)
            .collect();
        rows.sort_by(|a, b| b.1.cmp(a.1));
        for (ending, n) in rows {
            let text = match ending {
                Ending::Refused(m) => format!("message: {m}"),
                Ending::FailedSilently(m) => format!("no runtime message: {m}"),
                Ending::Crashed(m) => format!("CRASH: {m}"),
                Ending::Hung => "HANG".into(),
                Ending::Passed => unreachable!(),
            };
            println!("  {n:>6}  {text}");
        }
    }
}

/// xorshift64*: reproducible variants from a seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The file ranges of the image headers inside the program: the container's header and entry,
/// the ELF header, the program headers.
fn header_ranges(program: &[u8]) -> Result<Vec<(usize, usize)>> {
    let file = object::File::parse(program).context(|| "cannot read the program")?;
    let section = file
        .section_by_name(".llvm.offloading")
        .context(|| "the program has no .llvm.offloading section")?;
    let (start, _) = section
        .file_range()
        .context(|| ".llvm.offloading has no file data")?;
    let start = start as usize;
    let u64_at = |at: usize| -> Result<usize> {
        let bytes: [u8; 8] = program
            .get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .context(|| "offload section truncated")?;
        Ok(u64::from_le_bytes(bytes) as usize)
    };
    let entry = start + u64_at(start + 16)?;
    let elf = start + u64_at(entry + 24)?;
    let phoff = u64_at(elf + 32)?;
    let phnum = usize::from(u16::from_le_bytes([program[elf + 56], program[elf + 57]]));
    Ok(vec![
        (start, 32),
        (entry, 40),
        (elf, 64),
        (elf + phoff, phnum * 56),
    ])
}

/// `count` bytes of the header ranges, each flipped in one bit or replaced by a random byte.
fn mutate(program: &mut [u8], ranges: &[(usize, usize)], rng: &mut Rng) -> Vec<String> {
    let total: usize = ranges.iter().map(|r| r.1).sum();
    let count = 1 + rng.below(4);
    let mut changes = Vec::new();
    for _ in 0..count {
        let mut pick = rng.below(total);
        let &(start, _) = ranges
            .iter()
            .find(|r| {
                let inside = pick < r.1;
                if !inside {
                    pick -= r.1;
                }
                inside
            })
            .expect("pick lies in a range");
        let at = start + pick;
        let old = program[at];
        program[at] = if rng.next() & 1 == 0 {
            old ^ (1 << rng.below(8))
        } else {
            rng.next() as u8
        };
        changes.push(format!("{at:#x}: {old:#04x} -> {:#04x}", program[at]));
    }
    changes
}

fn classify(status: Option<std::process::ExitStatus>, stderr: &str) -> Ending {
    use std::os::unix::process::ExitStatusExt;
    let message = stderr
        .lines()
        .find(|l| l.starts_with("omptarget") || l.contains("rustomp"))
        .map(mask_digits);
    let Some(status) = status else {
        return Ending::Hung;
    };
    match (status.code(), status.signal(), message) {
        (Some(0), _, _) => Ending::Passed,
        (Some(_), _, Some(m)) | (None, Some(SIGABRT), Some(m)) => Ending::Refused(m),
        (Some(code), _, None) => Ending::FailedSilently(format!(
            "exit {code}: {}",
            stderr.lines().next().map(mask_digits).unwrap_or_default()
        )),
        (_, Some(signal), _) => {
            Ending::Crashed(format!("signal {signal} ({})", signal_name(signal)))
        }
        _ => Ending::Crashed("unknown status".into()),
    }
}

const SIGABRT: i32 = 6;

fn signal_name(signal: i32) -> &'static str {
    match signal {
        4 => "SIGILL",
        6 => "SIGABRT without a runtime message",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        _ => "other",
    }
}

/// "image 0 at 0x55d0… offset 1234" -> "image N at 0xN… offset N": messages group by shape.
fn mask_digits(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '0' && chars.peek() == Some(&'x') {
            chars.next();
            while chars.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                chars.next();
            }
            out.push_str("0xN");
        } else if c.is_ascii_digit() {
            while chars.peek().is_some_and(|c| c.is_ascii_digit()) {
                chars.next();
            }
            out.push('N');
        } else {
            out.push(c);
        }
    }
    out.chars().take(200).collect()
}

fn run_variant(exe: &Path, llvm: bool) -> Ending {
    let dir = exe.parent().unwrap_or(Path::new("."));
    let mut cmd = Command::new(exe);
    cmd.env("OMP_TARGET_OFFLOAD", "mandatory")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .current_dir(dir);
    if llvm {
        cmd.env("LD_LIBRARY_PATH", LLVM_LIB);
    } else {
        cmd.env_remove("LD_LIBRARY_PATH");
    }
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
    // The other worker may be forking while this variant's file is still open for writing
    // (ETXTBSY): try again.
    let mut tries = 0;
    let mut child = loop {
        match cmd.spawn() {
            Ok(child) => break child,
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Ending::Crashed(format!("cannot start: {e}")),
        }
    };
    let mut stderr = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    let status = util::wait_or_kill_group(&mut child, TIMEOUT).ok().flatten();
    let text = reader.join().unwrap_or_default();
    classify(status, &text)
}

/// Runs the experiment; returns our tally (and prints both).
pub fn run(o: &Options) -> Result<Tally> {
    let dir = util::at("target/corrupt");
    util::mkdirs(&dir)?;
    let exe = dir.join("program");
    cc::command(false, Runtime::Ours, &[])
        .in_root()
        .args(["-O2", "-fopenmp-targets=x86_64-pc-linux-gnu", PROGRAM, "-o"])
        .arg(&exe)
        .run()?;
    let program = std::fs::read(&exe).context(|| exe.display().to_string())?;
    let ranges = header_ranges(&program)?;
    let header_bytes: usize = ranges.iter().map(|r| r.1).sum();
    println!(
        "corrupt: {} variants of {PROGRAM} (seed {}), 1-4 bytes changed among the {header_bytes} header bytes of its device image",
        o.variants, o.seed
    );
    let mut rng = Rng(o.seed.max(1));
    let variants: Vec<(usize, Vec<u8>, Vec<String>)> = (0..o.variants)
        .map(|i| {
            let mut bytes = program.clone();
            let changes = mutate(&mut bytes, &ranges, &mut rng);
            (i, bytes, changes)
        })
        .collect();
    let runtimes: &[bool] = if o.llvm { &[false, true] } else { &[false] };
    let results = util::parallel(&variants, 2, |(i, bytes, _)| -> Vec<Ending> {
        let path: PathBuf = dir.join(format!("variant-{i}"));
        if std::fs::write(&path, bytes).is_err() {
            return vec![Ending::Crashed("cannot write the variant".into()); runtimes.len()];
        }
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755));
        let endings = runtimes
            .iter()
            .map(|&llvm| run_variant(&path, llvm))
            .collect();
        let _ = std::fs::remove_file(&path);
        endings
    });
    let mut tallies: Vec<Tally> = runtimes.iter().map(|_| Tally::default()).collect();
    for ((i, _, changes), endings) in variants.iter().zip(&results) {
        for (r, ending) in endings.iter().enumerate() {
            *tallies[r].endings.entry(ending.clone()).or_default() += 1;
            if ending.is_bad() && r == 0 {
                println!("variant {i} ({}): {ending:?}", changes.join(", "));
            }
        }
    }
    for (r, tally) in tallies.iter().enumerate() {
        tally.print(
            if runtimes[r] {
                "LLVM's libomptarget"
            } else {
                "rustomp"
            },
            o.variants,
        );
    }
    Ok(tallies.swap_remove(0))
}
