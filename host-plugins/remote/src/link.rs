//! The application's side of the conversation with its proxies: request ids and tags, one
//! call (request, bulk data, reply) with bounded waits, the liveness of each rank, images
//! shipped once per rank, and the orderly end.
//!
//! **A call.** The reply's receive is posted first (into a per-thread buffer), then bulk data
//! coming back (straight into the caller's memory, in fragments), then the request and bulk
//! data going out (straight from the caller's memory). All are tested together until done. A
//! launch is thus one packed message and one reply; a copy adds only its data fragments.
//! Threads call concurrently, each with its own id and so its own tags.
//!
//! **Faults.** A wait that passes `RUSTOMP_REMOTE_TIMEOUT / 2` (default 10 s) without a word
//! from the rank (a reply to any call counts) pings it; a ping that gets no answer within the
//! other half fails the call: "rank R: no answer to launch of 'K' within 10 s". A busy proxy
//! answers pings (any idle thread of its pool does), so a kernel that runs for an hour does not
//! time out; a dead or stopped one does within the timeout. The rank is then marked failed and
//! every later call to it fails at once with the first reason; its pending requests are
//! cancelled. MPI errors (returned, not fatal, on the plugin's communicator) and malformed
//! replies fail the rank the same way.

use crate::mpi::{Backoff, Mpi, Pending};
use crate::wire::{self, Hello, ImageHash, Kind, Reply, Request};
use rustomp_plugin::{ErrorKind, OffloadError, Result};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// `RUSTOMP_REMOTE_TIMEOUT` in seconds (fractions allowed), default 10.
pub fn timeout_from_env() -> Duration {
    std::env::var("RUSTOMP_REMOTE_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(Duration::from_secs(10), Duration::from_secs_f64)
}

/// Data that travels with a request, in the caller's memory.
#[derive(Clone, Copy)]
pub enum Bulk {
    None,
    /// Sent after the request.
    Out(*const u8, u64),
    /// Received before the reply.
    In(*mut u8, u64),
}

/// One proxy rank as the application knows it.
pub struct Rank {
    pub rank: i32,
    /// Its answer to `Hello`.
    pub hello: Hello,
    /// Why the rank is no longer used, once something failed.
    failed: Mutex<Option<String>>,
    /// When a reply from it last arrived (nanoseconds since the link started).
    heard: AtomicU64,
    /// Images stored on it (shipped once, by content hash), and what its devices said of them.
    images: Mutex<HashMap<ImageHash, Vec<Option<String>>>>,
}

impl Rank {
    pub fn failure(&self) -> Option<String> {
        self.failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn fail(&self, why: &str) {
        let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        if failed.is_none() {
            *failed = Some(why.to_string());
        }
    }
}

pub struct Link {
    pub mpi: &'static Mpi,
    /// The proxies, in rank order.
    pub ranks: Vec<Rank>,
    /// Ranks that did not answer the `Hello` (rank, why), for the plugin's reason.
    pub missing: Vec<(i32, String)>,
    pub timeout: Duration,
    next_id: AtomicU64,
    start: Instant,
    closed: AtomicBool,
}

// Per-thread reply buffers, reused (a fresh megabyte per call would be an mmap each time).
thread_local! {
    static REPLY_BUFFERS: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

fn take_buffer() -> Vec<u8> {
    // At exit (the main thread's locals may be gone already) a fresh buffer does.
    REPLY_BUFFERS
        .try_with(|b| b.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_else(|| vec![0u8; wire::MAX_REPLY])
}

fn give_buffer(buffer: Vec<u8>) {
    let _ = REPLY_BUFFERS.try_with(|b| b.borrow_mut().push(buffer));
}

/// The time a transfer of `bytes` may take beyond the timeout before the rank is asked whether
/// it lives: at 100 MB/s, a slow network's pace.
fn transfer_allowance(bytes: u64) -> Duration {
    Duration::from_secs_f64(bytes as f64 / 100e6)
}

/// A request on its way: what was posted, what to wait for.
struct Call {
    rank: usize,
    kind: Kind,
    id: u64,
    /// The request message (kept alive until its send completed).
    message: Vec<u8>,
    reply: Vec<u8>,
    /// [reply receive, request send, bulk fragments...]
    pending: Vec<Pending>,
    bytes: u64,
}

impl Link {
    /// Says hello to every other rank of the job and keeps those that answer as proxies.
    pub fn connect(mpi: &'static Mpi, timeout: Duration) -> Link {
        let mut link = Link {
            mpi,
            ranks: Vec::new(),
            missing: Vec::new(),
            timeout,
            next_id: AtomicU64::new(1),
            start: Instant::now(),
            closed: AtomicBool::new(false),
        };
        let others: Vec<i32> = (0..mpi.size).filter(|r| *r != mpi.rank).collect();
        // Start every hello, then collect the answers: the ranks answer in parallel.
        let mut calls = Vec::new();
        for &rank in &others {
            let request = Request::Hello {
                version: wire::VERSION as u32,
            };
            match link.post_to(rank, usize::MAX, &request, Bulk::None) {
                Ok(call) => calls.push((rank, Some(call))),
                Err(e) => {
                    link.missing.push((rank, e.message));
                    calls.push((rank, None));
                }
            }
        }
        let until = Instant::now() + timeout;
        for (rank, call) in calls {
            let Some(mut call) = call else { continue };
            let answer = match mpi.wait_all(&mut call.pending, until) {
                Ok(true) => link.reply_of(&mut call).and_then(|r| r),
                Ok(false) => {
                    mpi.abandon(&mut call.pending);
                    Err(OffloadError::new(
                        ErrorKind::DeviceUnavailable,
                        format!(
                            "no answer to hello within {} s (is it a rustomp-proxy?)",
                            timeout.as_secs_f64()
                        ),
                    ))
                }
                Err(e) => Err(e.into()),
            };
            match answer {
                Ok(Reply::Hello(hello)) if hello.version == wire::VERSION as u32 => {
                    link.ranks.push(Rank {
                        rank,
                        hello,
                        failed: Mutex::new(None),
                        heard: AtomicU64::new(0),
                        images: Mutex::new(HashMap::new()),
                    })
                }
                Ok(Reply::Hello(hello)) => link.missing.push((
                    rank,
                    format!(
                        "it speaks protocol version {} (this library {})",
                        hello.version,
                        wire::VERSION
                    ),
                )),
                Ok(_) => link
                    .missing
                    .push((rank, "an answer that is no hello".into())),
                Err(e) => link.missing.push((rank, e.message)),
            }
        }
        link
    }

    fn now_nanos(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Posts `request` to `rank` (an MPI rank) with its bulk data; `index` is the rank's place
    /// in `ranks` (usize::MAX before it has one).
    fn post_to(&self, rank: i32, index: usize, request: &Request, bulk: Bulk) -> Result<Call> {
        let kind = request.kind();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let message = request.encode(id);
        if message.len() > wire::MAX_CONTROL {
            return Err(OffloadError::new(
                ErrorKind::Unsupported,
                format!(
                    "the {} request takes {} bytes, more than the {} a request may have",
                    kind.describe(),
                    message.len(),
                    wire::MAX_CONTROL
                ),
            ));
        }
        let slots = self.mpi.tag_slots;
        let mut call = Call {
            rank: index,
            kind,
            id,
            message,
            reply: take_buffer(),
            pending: Vec::new(),
            bytes: 0,
        };
        let posted = (|| -> std::result::Result<(), crate::mpi::MpiError> {
            // SAFETY: the reply buffer lives in `call` until the receive completed or was
            // cancelled (`finish`, `give_up`).
            call.pending.push(unsafe {
                self.mpi.irecv(
                    call.reply.as_mut_ptr(),
                    call.reply.len(),
                    rank,
                    wire::reply_tag(id, slots),
                )
            }?);
            if let Bulk::In(ptr, bytes) = bulk {
                call.bytes = bytes;
                for (offset, len) in wire::fragments(bytes) {
                    // SAFETY: the caller's buffer holds `bytes` and stays valid until the call
                    // returns, after these receives completed or were cancelled.
                    call.pending.push(unsafe {
                        self.mpi.irecv(
                            ptr.add(offset as usize),
                            len,
                            rank,
                            wire::data_tag(id, slots),
                        )
                    }?);
                }
            }
            // SAFETY: the message lives in `call` until the send completed.
            call.pending.push(unsafe {
                self.mpi.isend(
                    call.message.as_ptr(),
                    call.message.len(),
                    rank,
                    wire::REQUEST_TAG,
                )
            }?);
            if let Bulk::Out(ptr, bytes) = bulk {
                call.bytes = bytes;
                for (offset, len) in wire::fragments(bytes) {
                    // SAFETY: as above, readable.
                    call.pending.push(unsafe {
                        self.mpi.isend(
                            ptr.add(offset as usize),
                            len,
                            rank,
                            wire::data_tag(id, slots),
                        )
                    }?);
                }
            }
            Ok(())
        })();
        if let Err(e) = posted {
            self.mpi.abandon(&mut call.pending);
            return Err(e.into());
        }
        Ok(call)
    }

    /// The reply of a completed call, checked: `Err` when the reply cannot be trusted (the
    /// rank then counts as failed), `Ok(Err)` for a failure the proxy reported.
    fn reply_of(&self, call: &mut Call) -> Result<Result<Reply>> {
        if call.pending.iter().any(|p| p.status.cancelled) {
            return Err(OffloadError::new(
                ErrorKind::TransferFailed,
                format!("the {} was cancelled", call.kind.describe()),
            ));
        }
        let status = call.pending[0].status;
        let len = usize::try_from(status.bytes)
            .ok()
            .filter(|len| *len <= call.reply.len())
            .ok_or_else(|| {
                OffloadError::new(
                    ErrorKind::TransferFailed,
                    format!("a reply of unknown size ({})", status.bytes),
                )
            })?;
        let decoded = Reply::decode(&call.reply[..len], call.kind, call.id).map_err(|e| {
            OffloadError::new(
                ErrorKind::TransferFailed,
                format!("refused the reply to a {}: {e}", call.kind.describe()),
            )
        });
        give_buffer(std::mem::take(&mut call.reply));
        Ok(decoded?.map_err(|(kind, message)| OffloadError::new(kind, message)))
    }

    /// `request` to proxy `index` (of `ranks`), with `bulk`, and its reply. `what` names the
    /// operation in a timeout message ("launch of '__omp_offloading_...'").
    pub fn call(
        &self,
        index: usize,
        request: &Request,
        bulk: Bulk,
        what: &dyn Fn() -> String,
    ) -> Result<Reply> {
        let mut calls = [self.start_call(index, request, bulk)?];
        let mut replies = self.finish(&mut calls, what)?;
        Ok(replies.pop().expect("one reply per call"))
    }

    /// Several requests at once (a copy between ranks: the receiver's and the sender's), all
    /// posted before any is waited for; their replies in order.
    pub fn call_all(
        &self,
        requests: &[(usize, Request, Bulk)],
        what: &dyn Fn() -> String,
    ) -> Result<Vec<Reply>> {
        let mut calls = Vec::with_capacity(requests.len());
        for (index, request, bulk) in requests {
            match self.start_call(*index, request, *bulk) {
                Ok(call) => calls.push(call),
                Err(e) => {
                    for call in &mut calls {
                        self.give_up(call);
                    }
                    return Err(e);
                }
            }
        }
        self.finish(&mut calls, what)
    }

    /// A fresh id whose data tag two proxies can use between them.
    pub fn fresh_tag(&self) -> u32 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        wire::data_tag(id, self.mpi.tag_slots) as u32
    }

    fn start_call(&self, index: usize, request: &Request, bulk: Bulk) -> Result<Call> {
        if self.closed.load(Ordering::Acquire) {
            return Err(OffloadError::new(
                ErrorKind::DeviceUnavailable,
                "the remote plugin has shut down",
            ));
        }
        let rank = self.ranks.get(index).ok_or_else(|| {
            OffloadError::new(ErrorKind::InvalidArgument, format!("no proxy {index}"))
        })?;
        if let Some(why) = rank.failure() {
            return Err(OffloadError::new(
                ErrorKind::DeviceUnavailable,
                format!("rank {} failed earlier: {why}", rank.rank),
            ));
        }
        self.post_to(rank.rank, index, request, bulk)
            .map_err(|e| self.failed(index, e))
    }

    /// Marks proxy `index` failed with `e`'s message and returns `e` (the caller's context,
    /// the device's name, names the rank).
    fn failed(&self, index: usize, e: OffloadError) -> OffloadError {
        self.ranks[index].fail(&e.message);
        e
    }

    fn give_up(&self, call: &mut Call) {
        self.mpi.abandon(&mut call.pending);
        // A receive that could not be cancelled may still write its buffer: never reuse it.
        std::mem::forget(std::mem::take(&mut call.reply));
    }

    /// Waits for every call, with the liveness checks above, and decodes the replies.
    fn finish(&self, calls: &mut [Call], what: &dyn Fn() -> String) -> Result<Vec<Reply>> {
        let half = self.timeout / 2;
        let bytes: u64 = calls.iter().map(|c| c.bytes).sum();
        let mut quiet_until = Instant::now() + half + transfer_allowance(bytes);
        let mut backoff = Backoff::new();
        loop {
            let mut all = true;
            for i in 0..calls.len() {
                match self.mpi.test_all(&mut calls[i].pending) {
                    Ok(done) => all &= done,
                    Err(e) => {
                        let index = calls[i].rank;
                        for call in calls.iter_mut() {
                            self.give_up(call);
                        }
                        let e: OffloadError = e.into();
                        return Err(self.failed(index, e.context(what())));
                    }
                }
            }
            if all {
                break;
            }
            let now = Instant::now();
            if now < quiet_until {
                backoff.pause(quiet_until);
                continue;
            }
            // Nothing yet: is each rank still there?
            let mut dead = None;
            for (i, call) in calls.iter().enumerate() {
                if call.pending.iter().all(|p| p.done) {
                    continue;
                }
                let rank = &self.ranks[call.rank];
                let heard = rank.heard.load(Ordering::Relaxed);
                if self.now_nanos().saturating_sub(heard) < half.as_nanos() as u64 {
                    continue;
                }
                if self.ping(call.rank, half).is_err() {
                    dead = Some(i);
                    break;
                }
            }
            if let Some(i) = dead {
                let index = calls[i].rank;
                for call in calls.iter_mut() {
                    self.give_up(call);
                }
                let e = OffloadError::new(
                    kind_error(calls[i].kind),
                    format!(
                        "no answer to {} within {} s",
                        what(),
                        self.timeout.as_secs_f64()
                    ),
                );
                return Err(self.failed(index, e));
            }
            quiet_until = Instant::now() + half;
        }
        let mut replies = Vec::with_capacity(calls.len());
        let mut first_error = None;
        for call in calls.iter_mut() {
            let rank = &self.ranks[call.rank];
            rank.heard.store(self.now_nanos(), Ordering::Relaxed);
            match self.reply_of(call) {
                Ok(Ok(reply)) => replies.push(reply),
                // The proxy's own failure of the operation.
                Ok(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                // A reply that cannot be trusted: neither can the rest of the stream.
                Err(e) => {
                    let e = self.failed(call.rank, e.context(what()));
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(replies),
        }
    }

    /// Asks proxy `index` whether it lives, waiting at most `limit`.
    fn ping(&self, index: usize, limit: Duration) -> Result<()> {
        let rank = &self.ranks[index];
        let mut call = self.post_to(rank.rank, index, &Request::Ping, Bulk::None)?;
        match self.mpi.wait_all(&mut call.pending, Instant::now() + limit) {
            Ok(true) => {
                self.reply_of(&mut call)??;
                rank.heard.store(self.now_nanos(), Ordering::Relaxed);
                Ok(())
            }
            Ok(false) => {
                self.give_up(&mut call);
                Err(OffloadError::new(ErrorKind::DeviceUnavailable, "no answer"))
            }
            Err(e) => {
                self.give_up(&mut call);
                Err(e.into())
            }
        }
    }

    /// Stores `bytes` (an image) on proxy `index` under `hash` unless it is there, and returns
    /// what each of the rank's devices says about running it.
    pub fn image_on(
        &self,
        index: usize,
        hash: ImageHash,
        bytes: &[u8],
        triple: &str,
        arch: &str,
    ) -> Result<Vec<Option<String>>> {
        let rank = &self.ranks[index];
        // Held while shipping: two threads never send one image to one rank twice.
        let mut images = rank.images.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(verdicts) = images.get(&hash) {
            return Ok(verdicts.clone());
        }
        let what = || format!("transfer of a {triple} image ({} bytes)", bytes.len());
        self.call(
            index,
            &Request::StoreImage {
                hash,
                bytes: bytes.len() as u64,
                triple: triple.to_string(),
                arch: arch.to_string(),
            },
            Bulk::Out(bytes.as_ptr(), bytes.len() as u64),
            &what,
        )?;
        let verdicts =
            match self.call(index, &Request::Compatibility { hash }, Bulk::None, &what)? {
                Reply::Compatibility(v) => v,
                _ => return Err(unexpected(Kind::Compatibility)),
            };
        images.insert(hash, verdicts.clone());
        Ok(verdicts)
    }

    /// Plain MPI between this process and proxy `index`, for the benchmark's reference: the
    /// time of `iterations` rounds of `mode` (see `Request::Baseline`), measured here.
    pub fn baseline(
        &self,
        index: usize,
        mode: u32,
        bytes: u64,
        iterations: u32,
    ) -> Result<Duration> {
        let len = usize::try_from(bytes)
            .ok()
            .filter(|b| *b <= i32::MAX as usize)
            .ok_or_else(|| {
                OffloadError::new(ErrorKind::InvalidArgument, "baseline size beyond an int")
            })?;
        let mut call = self.start_call(
            index,
            &Request::Baseline {
                mode,
                bytes,
                iterations,
            },
            Bulk::None,
        )?;
        let rank = self.ranks[index].rank;
        let tag = wire::data_tag(call.id, self.mpi.tag_slots);
        let mut buffer = vec![0u8; len.max(1)];
        let started = Instant::now();
        let mut run = || -> std::result::Result<(), crate::mpi::MpiError> {
            // SAFETY: `buffer` holds `len` bytes (at least one) for every call.
            unsafe {
                match mode {
                    0 => {
                        for _ in 0..iterations {
                            self.mpi.send(buffer.as_ptr(), len, rank, tag)?;
                            self.mpi.recv(buffer.as_mut_ptr(), len, rank, tag)?;
                        }
                    }
                    1 => {
                        for _ in 0..iterations {
                            self.mpi.send(buffer.as_ptr(), len, rank, tag)?;
                        }
                        self.mpi.recv(buffer.as_mut_ptr(), 0, rank, tag)?;
                    }
                    _ => {
                        for _ in 0..iterations {
                            self.mpi.recv(buffer.as_mut_ptr(), len, rank, tag)?;
                        }
                        self.mpi.send(buffer.as_ptr(), 0, rank, tag)?;
                    }
                }
            }
            Ok(())
        };
        let result = run();
        let elapsed = started.elapsed();
        if let Err(e) = result {
            self.give_up(&mut call);
            return Err(e.into());
        }
        self.finish(std::slice::from_mut(&mut call), &|| {
            "baseline measurement".to_string()
        })?;
        Ok(elapsed)
    }

    /// Tells every proxy still answering to stop, then finalizes MPI, unless a rank failed:
    /// `MPI_Finalize` may then never return (it meets every rank), and the launcher ends the
    /// job anyway once this process exits. Nothing here waits longer than the timeout per
    /// rank.
    pub fn shutdown(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut calls = Vec::new();
        for (index, rank) in self.ranks.iter().enumerate() {
            if rank.failure().is_some() {
                continue;
            }
            match self.post_to(rank.rank, index, &Request::Stop, Bulk::None) {
                Ok(call) => calls.push(call),
                Err(e) => rank.fail(&e.message),
            }
        }
        let until = Instant::now() + self.timeout;
        for mut call in calls {
            match self.mpi.wait_all(&mut call.pending, until) {
                Ok(true) => {
                    if let Err(e) = self.reply_of(&mut call).and_then(|r| r) {
                        self.ranks[call.rank].fail(&e.message);
                    }
                }
                _ => {
                    self.ranks[call.rank].fail("no answer to stop");
                    self.give_up(&mut call);
                }
            }
        }
        let healthy = self.missing.is_empty() && self.ranks.iter().all(|r| r.failure().is_none());
        if healthy {
            if let Err(e) = self.mpi.finalize(self.timeout) {
                eprintln!("rustomp remote plugin: {e}");
            }
        }
    }
}

/// The error class of an operation that got no answer.
fn kind_error(kind: Kind) -> ErrorKind {
    match kind {
        Kind::Launch => ErrorKind::LaunchFailed,
        Kind::CopyTo
        | Kind::CopyFrom
        | Kind::CopyWithin
        | Kind::CopyLocal
        | Kind::PeerSend
        | Kind::PeerRecv => ErrorKind::TransferFailed,
        Kind::Alloc => ErrorKind::OutOfMemory,
        Kind::StoreImage | Kind::LoadImage => ErrorKind::InvalidImage,
        _ => ErrorKind::DeviceUnavailable,
    }
}

/// A reply of the wrong shape for its request (the decoder checks shapes by kind, so only a
/// bug of ours gets here).
pub fn unexpected(kind: Kind) -> OffloadError {
    OffloadError::new(
        ErrorKind::TransferFailed,
        format!("unexpected reply to a {}", kind.describe()),
    )
}
