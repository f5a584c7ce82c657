//! The process's one connection to its proxies: MPI started, every proxy greeted, the remote
//! devices listed. Made on the first question about devices, in a process `launcher` accepts;
//! shared by every plugin object; ended at exit (an `atexit` handler: the proxies are told to
//! stop, MPI is finalized).

use crate::launcher::{self, Launch};
use crate::link::Link;
use crate::mpi::Mpi;
use std::sync::OnceLock;

/// The proxies of this process and their devices, once connected.
pub struct Connection {
    pub link: Link,
    /// The remote devices in the plugin's numbering: (index of the rank in `link.ranks`, the
    /// rank's own device number).
    pub devices: Vec<(usize, u32)>,
}

static CONNECTION: OnceLock<std::result::Result<Connection, String>> = OnceLock::new();

pub fn environment(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The process's connection to its proxies, made on first use; `Err` says why there is none.
pub fn connection() -> std::result::Result<&'static Connection, String> {
    if let Launch::Without(why) = launcher::detect(environment) {
        return Err(why);
    }
    CONNECTION
        .get_or_init(connect)
        .as_ref()
        .map_err(Clone::clone)
}

fn connect() -> std::result::Result<Connection, String> {
    let mpi = Mpi::get()?;
    let link = Link::connect(mpi, crate::link::timeout_from_env());
    let devices = link
        .ranks
        .iter()
        .enumerate()
        .flat_map(|(i, rank)| (0..rank.hello.devices.len() as u32).map(move |d| (i, d)))
        .collect();
    // SAFETY: registers a plain extern "C" function with no arguments.
    unsafe { libc::atexit(shut_down) };
    Ok(Connection { link, devices })
}

/// At exit: stop the proxies and finalize MPI (never unwinds into libc).
extern "C" fn shut_down() {
    let _ = std::panic::catch_unwind(|| {
        if let Some(Ok(connection)) = CONNECTION.get() {
            connection.link.shutdown();
        }
    });
}

impl Connection {
    /// Why there are no remote devices although MPI started.
    pub fn why_none(&self) -> String {
        let mut why = Vec::new();
        if self.link.ranks.is_empty() && self.link.missing.is_empty() {
            why.push(format!(
                "this process is the only rank of the job ({})",
                self.link.mpi.library
            ));
        }
        for (rank, reason) in &self.link.missing {
            why.push(format!("rank {rank}: {reason}"));
        }
        for rank in &self.link.ranks {
            let reasons = if rank.hello.reasons.is_empty() {
                "no plugin found a device".to_string()
            } else {
                rank.hello.reasons.join("; ")
            };
            why.push(format!(
                "rank {} ({}) has no devices: {reasons}",
                rank.rank, rank.hello.hostname
            ));
        }
        why.join("; ")
    }
}
