//! MPI through `librustomp-mpi.so` (`shim/rustomp_mpi.c`), loaded at run time.
//!
//! Nothing here links libmpi: a process loads the shim (and with it the MPI library) only when
//! the remote plugin or the proxy starts in a process an MPI launcher made. The shim's C ABI
//! hides MPI's handle types, so the same Rust works over any MPI the shim was compiled with.
//!
//! **Threads.** MPI is initialized on a thread of its own (`rustomp-mpi`), asking for
//! `MPI_THREAD_MULTIPLE`. With it, any thread calls MPI directly: each waits for its own
//! requests, several in flight at once (`nowait` regions on libomp's helper threads). With
//! less (`MPI_THREAD_FUNNELED` or `SERIALIZED`, or `RUSTOMP_REMOTE_THREADS=funneled` to test
//! the path) every call is handed to that thread, which then is the only one in MPI, and the
//! others wait for its answer: slower, equally correct. The same thread finalizes MPI (the
//! standard wants the initializing thread to).
//!
//! **Waiting.** Requests are only ever tested (`MPI_Test`), never waited on inside MPI, so a
//! wait has a deadline: spin briefly, then yield, then sleep in growing steps (a proxy idle for
//! hours costs nothing), and return at the deadline for the caller to decide (see `link`).

mod shim;
pub use shim::{shim_candidates, SHIM_NAME};
use shim::{Shim, HANDLE_BYTES};

use rustomp_plugin::{ErrorKind, OffloadError};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// An MPI request or matched-message handle, as the shim stores it.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct Handle([u8; HANDLE_BYTES]);

impl Handle {
    fn empty() -> Self {
        Handle([0; HANDLE_BYTES])
    }
}

impl Shim {
    fn check(&self, rc: c_int, what: &str) -> Result<(), MpiError> {
        if rc == 0 {
            Ok(())
        } else {
            Err(MpiError(format!("{what}: {}", self.error_text(rc))))
        }
    }
}

/// An MPI call that failed, in MPI's words.
#[derive(Debug, Clone)]
pub struct MpiError(pub String);

impl std::fmt::Display for MpiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<MpiError> for OffloadError {
    fn from(e: MpiError) -> Self {
        OffloadError::new(ErrorKind::TransferFailed, e.0)
    }
}

/// How a completed receive or probe was matched.
#[derive(Debug, Clone, Copy, Default)]
pub struct Status {
    pub source: i32,
    pub tag: i32,
    pub bytes: i32,
    pub cancelled: bool,
}

/// A request in flight and, once it completed, how.
pub struct Pending {
    handle: Handle,
    pub done: bool,
    pub status: Status,
}

/// MPI's thread support as granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// `MPI_THREAD_MULTIPLE`: every thread calls MPI.
    Multiple,
    /// Anything less: calls go through the `rustomp-mpi` thread.
    Funneled,
}

type Job = Box<dyn FnOnce(&'static Shim) + Send>;

/// MPI, initialized, with the plugin's own communicator (a duplicate of `MPI_COMM_WORLD` whose
/// errors are returned).
pub struct Mpi {
    shim: &'static Shim,
    pub rank: i32,
    pub size: i32,
    /// Tag pairs available for request ids (see `wire::tag_slots`).
    pub tag_slots: u64,
    pub threads: Threads,
    pub gpu_aware: bool,
    /// `MPI_Get_library_version`'s first line.
    pub library: String,
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    owner: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// The process's MPI, once: MPI can be initialized once per process.
static MPI: OnceLock<Result<&'static Mpi, String>> = OnceLock::new();

impl Mpi {
    /// Initializes MPI on its own thread (once per process; later calls get the same answer).
    pub fn get() -> Result<&'static Mpi, String> {
        MPI.get_or_init(|| Mpi::start().map(|m| &*Box::leak(Box::new(m))))
            .clone()
    }

    fn start() -> Result<Mpi, String> {
        let shim: &'static Shim = Box::leak(Box::new(Shim::load()?));
        let funneled_asked = std::env::var("RUSTOMP_REMOTE_THREADS")
            .is_ok_and(|v| v.eq_ignore_ascii_case("funneled"));
        let required = if funneled_asked { 1 } else { 3 };
        let (tx, rx) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::channel();
        let owner = std::thread::Builder::new()
            .name("rustomp-mpi".into())
            .spawn(move || {
                let (mut provided, mut rank, mut size, mut tag_ub) = (0, 0, 0, 0);
                let mut err = [0 as c_char; 512];
                // SAFETY: the shim writes the four ints and at most `err.len()` bytes.
                let rc = unsafe {
                    (shim.init)(
                        required,
                        &mut provided,
                        &mut rank,
                        &mut size,
                        &mut tag_ub,
                        err.as_mut_ptr(),
                        err.len() as c_int,
                    )
                };
                let result = if rc == 0 {
                    Ok((provided, rank, size, tag_ub))
                } else {
                    // SAFETY: NUL-terminated by the shim.
                    let text = unsafe { CStr::from_ptr(err.as_ptr()) }.to_string_lossy();
                    Err(format!(
                        "MPI initialization failed: {text} (MPI error {rc})"
                    ))
                };
                let ok = result.is_ok();
                let _ = ready_tx.send(result);
                if !ok {
                    return;
                }
                // Serve funneled calls, and the final one.
                while let Ok(job) = rx.recv() {
                    job(shim);
                }
            })
            .map_err(|e| format!("cannot start the MPI thread: {e}"))?;
        let (provided, rank, size, tag_ub) = ready_rx
            .recv()
            .map_err(|_| "the MPI thread ended during initialization".to_string())??;
        if provided < 1 {
            return Err(
                "the MPI library grants only MPI_THREAD_SINGLE; the remote plugin needs MPI_THREAD_FUNNELED at least".into(),
            );
        }
        let threads = if provided == 3 && !funneled_asked {
            Threads::Multiple
        } else {
            Threads::Funneled
        };
        let mut version = [0 as c_char; 256];
        // SAFETY: the shim writes at most `len` bytes, NUL-terminated.
        unsafe { (shim.library_version)(version.as_mut_ptr(), version.len() as c_int) };
        let mpi = Mpi {
            shim,
            rank,
            size,
            tag_slots: crate::wire::tag_slots(tag_ub),
            threads,
            gpu_aware: false,
            // SAFETY: NUL-terminated by the shim.
            library: unsafe { CStr::from_ptr(version.as_ptr()) }
                .to_string_lossy()
                .into_owned(),
            jobs: Mutex::new(Some(tx)),
            owner: Mutex::new(Some(owner)),
        };
        // SAFETY: takes nothing (MPI is initialized), returns an int.
        let gpu_aware = mpi.run(|s| unsafe { (s.gpu_aware)() } == 1);
        Ok(Mpi { gpu_aware, ..mpi })
    }

    /// Runs `f` where MPI may be called: here under MPI_THREAD_MULTIPLE, else on the MPI
    /// thread (waiting for it).
    fn run<R: Send + 'static>(&self, f: impl FnOnce(&'static Shim) -> R + Send + 'static) -> R {
        if self.threads == Threads::Multiple {
            return f(self.shim);
        }
        let (tx, rx) = mpsc::sync_channel(1);
        let sent = {
            let jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
            match jobs.as_ref() {
                Some(jobs) => jobs
                    .send(Box::new(move |s| {
                        let _ = tx.send(f(s));
                    }))
                    .is_ok(),
                None => false,
            }
        };
        // After finalization (or if the thread ended) there is no MPI left to call.
        assert!(sent, "MPI was used after it was finalized");
        rx.recv().expect("the MPI thread answers every call")
    }

    fn rank_arg(rank: i32) -> c_int {
        rank as c_int
    }

    /// Posts a send of `len` bytes at `buf`.
    ///
    /// # Safety
    /// `buf` stays readable for `len` bytes until the request completes or is cancelled.
    pub unsafe fn isend(
        &self,
        buf: *const u8,
        len: usize,
        dest: i32,
        tag: i32,
    ) -> Result<Pending, MpiError> {
        let (buf, len) = (buf as usize, checked_len(len)?);
        self.run(move |s| {
            let mut handle = Handle::empty();
            // SAFETY: the caller keeps the buffer; the handle slot is large enough (checked at
            // load).
            let rc = unsafe {
                (s.isend)(
                    buf as *const c_void,
                    len,
                    Self::rank_arg(dest),
                    tag,
                    handle.0.as_mut_ptr() as *mut c_void,
                )
            };
            s.check(rc, "MPI_Isend").map(|()| Pending::new(handle))
        })
    }

    /// Posts a receive of at most `len` bytes into `buf` (source or tag < 0: any).
    ///
    /// # Safety
    /// `buf` stays writable for `len` bytes until the request completes or is cancelled.
    pub unsafe fn irecv(
        &self,
        buf: *mut u8,
        len: usize,
        source: i32,
        tag: i32,
    ) -> Result<Pending, MpiError> {
        let (buf, len) = (buf as usize, checked_len(len)?);
        self.run(move |s| {
            let mut handle = Handle::empty();
            // SAFETY: as for isend.
            let rc = unsafe {
                (s.irecv)(
                    buf as *mut c_void,
                    len,
                    Self::rank_arg(source),
                    tag,
                    handle.0.as_mut_ptr() as *mut c_void,
                )
            };
            s.check(rc, "MPI_Irecv").map(|()| Pending::new(handle))
        })
    }

    /// A plain blocking `MPI_Send` (the benchmark's reference).
    ///
    /// # Safety
    /// `buf` is readable for `len` bytes.
    pub unsafe fn send(
        &self,
        buf: *const u8,
        len: usize,
        dest: i32,
        tag: i32,
    ) -> Result<(), MpiError> {
        let (buf, len) = (buf as usize, checked_len(len)?);
        self.run(move |s| {
            // SAFETY: the caller's buffer.
            let rc = unsafe { (s.send)(buf as *const c_void, len, dest, tag) };
            s.check(rc, "MPI_Send")
        })
    }

    /// A plain blocking `MPI_Recv`.
    ///
    /// # Safety
    /// `buf` is writable for `len` bytes.
    pub unsafe fn recv(
        &self,
        buf: *mut u8,
        len: usize,
        source: i32,
        tag: i32,
    ) -> Result<(), MpiError> {
        let (buf, len) = (buf as usize, checked_len(len)?);
        self.run(move |s| {
            // SAFETY: the caller's buffer.
            let rc = unsafe { (s.recv)(buf as *mut c_void, len, source, tag) };
            s.check(rc, "MPI_Recv")
        })
    }

    /// Tests each request not done yet; true when all are.
    pub fn test_all(&self, pending: &mut [Pending]) -> Result<bool, MpiError> {
        let open: Vec<(usize, Handle)> = pending
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.done)
            .map(|(i, p)| (i, p.handle))
            .collect();
        if open.is_empty() {
            return Ok(true);
        }
        let results = self.run(move |s| {
            let mut out = Vec::with_capacity(open.len());
            for (i, mut handle) in open {
                let (mut done, mut source, mut tag, mut bytes, mut cancelled) = (0, 0, 0, 0, 0);
                // SAFETY: a handle an isend/irecv filled, not completed yet.
                let rc = unsafe {
                    (s.test)(
                        handle.0.as_mut_ptr() as *mut c_void,
                        &mut done,
                        &mut source,
                        &mut tag,
                        &mut bytes,
                        &mut cancelled,
                    )
                };
                let result = s.check(rc, "MPI_Test").map(|()| {
                    (
                        done != 0,
                        Status {
                            source,
                            tag,
                            bytes,
                            cancelled: cancelled != 0,
                        },
                    )
                });
                let failed = result.is_err();
                out.push((i, handle, result));
                if failed {
                    break;
                }
            }
            out
        });
        let mut all = true;
        for (i, handle, result) in results {
            let (done, status) = result?;
            let p = &mut pending[i];
            p.handle = handle;
            p.done = done;
            p.status = status;
            all &= done;
        }
        Ok(all && pending.iter().all(|p| p.done))
    }

    /// Waits until every request completed (true) or `until` passed (false).
    pub fn wait_all(&self, pending: &mut [Pending], until: Instant) -> Result<bool, MpiError> {
        let mut backoff = Backoff::new();
        loop {
            if self.test_all(pending)? {
                return Ok(true);
            }
            if Instant::now() >= until {
                return Ok(false);
            }
            backoff.pause(until);
        }
    }

    /// Gives up on requests that did not complete: a receive is cancelled (so MPI never writes
    /// into its buffer later), a send released. Best effort: the peer is presumed gone.
    pub fn abandon(&self, pending: &mut [Pending]) {
        for p in pending.iter_mut().filter(|p| !p.done) {
            let mut handle = p.handle;
            let ok = self.run(move |s| {
                // SAFETY: an incomplete request of ours.
                let rc = unsafe { (s.cancel)(handle.0.as_mut_ptr() as *mut c_void) };
                rc == 0
            });
            p.handle = handle;
            if !ok {
                continue;
            }
            // A cancelled receive completes at once; give it a moment, then let MPI free it.
            let until = Instant::now() + Duration::from_millis(100);
            let mut one = [Pending::new(p.handle)];
            match self.wait_all(&mut one, until) {
                Ok(true) => p.done = true,
                _ => {
                    let mut handle = one[0].handle;
                    self.run(move |s| {
                        // SAFETY: an incomplete request of ours, freed once.
                        unsafe { (s.request_free)(handle.0.as_mut_ptr() as *mut c_void) }
                    });
                    p.done = true;
                }
            }
        }
    }

    /// A message waiting from `source` with `tag` (< 0: any), matched so no other probe takes it:
    /// its source, tag, size, and the handle `mrecv` receives it with.
    pub fn improbe(&self, source: i32, tag: i32) -> Result<Option<(Status, Handle)>, MpiError> {
        self.run(move |s| {
            let (mut found, mut src, mut t, mut bytes) = (0, 0, 0, 0);
            let mut handle = Handle::empty();
            // SAFETY: writes ints and the message handle slot (large enough, checked at load).
            let rc = unsafe {
                (s.improbe)(
                    source,
                    tag,
                    &mut found,
                    handle.0.as_mut_ptr() as *mut c_void,
                    &mut src,
                    &mut t,
                    &mut bytes,
                )
            };
            s.check(rc, "MPI_Improbe")?;
            Ok((found != 0).then_some((
                Status {
                    source: src,
                    tag: t,
                    bytes,
                    cancelled: false,
                },
                handle,
            )))
        })
    }

    /// Receives a matched message into `buf`.
    ///
    /// # Safety
    /// `buf` is writable for `len` bytes; `message` came from `improbe` and is received once.
    pub unsafe fn mrecv(&self, buf: *mut u8, len: usize, message: Handle) -> Result<(), MpiError> {
        let (buf, len) = (buf as usize, checked_len(len)?);
        self.run(move |s| {
            let mut message = message;
            // SAFETY: the caller's buffer and a matched message.
            let rc = unsafe {
                (s.mrecv)(
                    buf as *mut c_void,
                    len,
                    message.0.as_mut_ptr() as *mut c_void,
                )
            };
            s.check(rc, "MPI_Mrecv")
        })
    }

    /// Finalizes MPI on the thread that initialized it, and ends that thread. Waits at most
    /// `limit`: a finalization that does not return (a peer stuck in it) is left behind.
    pub fn finalize(&self, limit: Duration) -> Result<(), String> {
        let (tx, rx) = mpsc::channel();
        let job: Job = Box::new(move |s| {
            // SAFETY: MPI is initialized; this is the initializing thread.
            let rc = unsafe { (s.finalize)() };
            let _ = tx.send(s.check(rc, "MPI_Finalize"));
        });
        let sender = self.jobs.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(sender) = sender else {
            return Ok(());
        };
        if sender.send(job).is_err() {
            return Err("the MPI thread has ended".into());
        }
        // Closing the channel ends the thread after the job.
        drop(sender);
        match rx.recv_timeout(limit) {
            Ok(result) => {
                if let Some(owner) = self.owner.lock().unwrap_or_else(|e| e.into_inner()).take() {
                    let _ = owner.join();
                }
                result.map_err(|e| e.0)
            }
            Err(_) => Err(format!(
                "MPI_Finalize did not return within {} s",
                limit.as_secs_f64()
            )),
        }
    }

    /// `MPI_Abort` on the plugin's communicator: ends every process of the job.
    pub fn abort(&self, code: i32) {
        // Directly: the MPI thread may be the one that is stuck.
        // SAFETY: MPI is initialized; MPI_Abort may be called from any thread in practice and
        // does not return.
        unsafe { (self.shim.abort)(code) };
    }
}

impl Pending {
    fn new(handle: Handle) -> Self {
        Self {
            handle,
            done: false,
            status: Status::default(),
        }
    }
}

fn checked_len(len: usize) -> Result<c_int, MpiError> {
    c_int::try_from(len).map_err(|_| {
        MpiError(format!(
            "a message of {len} bytes is beyond MPI's int count (the caller splits larger transfers)"
        ))
    })
}

/// How a thread waits between tests: spin for 200 µs (a reply on the same node arrives in a
/// few, and a short launch's reply well within it), then yield the core, then sleep in steps that grow to a
/// millisecond, never past `until`.
pub struct Backoff {
    start: Instant,
}

impl Backoff {
    pub fn new() -> Self {
        Self {
            start: Instant::now(),
        }
    }

    pub fn pause(&mut self, until: Instant) {
        let waited = self.start.elapsed();
        if waited < Duration::from_micros(200) {
            std::hint::spin_loop();
        } else if waited < Duration::from_millis(2) {
            std::thread::yield_now();
        } else {
            let step = (waited / 16).min(Duration::from_millis(1));
            let left = until.saturating_duration_since(Instant::now());
            std::thread::sleep(step.min(left));
        }
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new()
    }
}
