//! What a proxy does for its application: each request decoded (and refused if malformed),
//! checked against what this proxy handed out (device numbers, image and kernel ids, device
//! memory ranges), carried out on the node's ordinary plugins, and answered.

mod requests;

use crate::memory::Ranges;
use crate::transfer::{self, Peer};
use rustomp_abi::FptrMapEntry;
use rustomp_plugin::layout::IndirectTable;
use rustomp_plugin::{
    AllocKind, Device, ErrorKind, ImageInfo, KernelHandle, LoadedImage, OffloadError, Plugin,
};
use rustomp_remote_plugin::mpi::{Backoff, Handle, Mpi, Status};
use rustomp_remote_plugin::wire::{
    self, DeviceInfo, Failure, Header, Hello, ImageHash, Kind, Reply, Request,
};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The largest image a proxy stores (a request for more is refused before allocating).
const MAX_IMAGE: u64 = 8 << 30;

/// A device of this node, opened for the application.
struct Opened {
    device: Box<dyn Device>,
    /// The allocations and globals the application may copy to and from.
    memory: Mutex<Ranges>,
    /// MPI may read and write the device's memory itself (no staging).
    direct: bool,
    /// "device 4 (host plugin device 0)", for messages.
    name: String,
}

struct StoredImage {
    bytes: Vec<u8>,
    triple: String,
    arch: String,
}

impl StoredImage {
    fn info(&self) -> ImageInfo<'_> {
        ImageInfo {
            bytes: &self.bytes,
            triple: self.triple.clone(),
            arch: self.arch.clone(),
        }
    }
}

struct LoadedOn {
    device: u32,
    image: Box<dyn LoadedImage>,
}

/// A request as it arrived: its bytes.
pub struct Incoming {
    bytes: Vec<u8>,
}

pub struct Server {
    mpi: &'static Mpi,
    /// The application's rank: the last.
    app: i32,
    timeout: Duration,
    plugins: Vec<Box<dyn Plugin>>,
    /// This node's devices: (plugin, index within it), in the plugins' order.
    devices: Vec<(usize, usize)>,
    hello: Hello,
    opened: Mutex<HashMap<u32, Arc<Opened>>>,
    images: Mutex<HashMap<ImageHash, Arc<StoredImage>>>,
    loaded: Mutex<HashMap<u64, Arc<LoadedOn>>>,
    /// Kernel id → (image id, handle).
    kernels: Mutex<HashMap<u64, (u64, KernelHandle)>>,
    next_id: AtomicU64,
    greeted: AtomicBool,
    stopping: AtomicBool,
    started: Instant,
    /// How long to wait for the application's hello before giving up.
    startup: Duration,
    /// Set when the proxy stops for a reason other than the application's `Stop`.
    pub trouble: Mutex<Option<String>>,
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `len` bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) };
    if rc != 0 {
        return "unknown host".into();
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

impl Server {
    pub fn new(
        mpi: &'static Mpi,
        plugins: Vec<Box<dyn Plugin>>,
        timeout: Duration,
        startup: Duration,
    ) -> Server {
        let mut devices = Vec::new();
        let mut infos = Vec::new();
        let mut reasons = Vec::new();
        for (p, plugin) in plugins.iter().enumerate() {
            let count = plugin.number_of_devices();
            if count == 0 {
                let why = plugin
                    .unavailable_reason()
                    .unwrap_or_else(|| "no devices".into());
                reasons.push(format!("{}: {why}", plugin.name()));
            }
            for index in 0..count {
                let local = devices.len();
                devices.push((p, index));
                // Opened here only to be described; the application opens it with its number.
                let (description, properties) = match plugin.open_device(index, local, count) {
                    Ok(device) => (
                        device.describe(),
                        device
                            .properties()
                            .into_iter()
                            .map(|(k, v)| (k.to_string(), v))
                            .collect(),
                    ),
                    Err(e) => (format!("cannot be opened: {e}"), Vec::new()),
                };
                infos.push(DeviceInfo {
                    plugin: plugin.name().to_string(),
                    index: index as u32,
                    description,
                    properties,
                });
            }
        }
        let hello = Hello {
            version: wire::VERSION as u32,
            hostname: hostname(),
            pid: std::process::id(),
            gpu_aware: mpi.gpu_aware,
            devices: infos,
            reasons,
        };
        Server {
            mpi,
            app: mpi.size - 1,
            timeout,
            plugins,
            devices,
            hello,
            opened: Mutex::new(HashMap::new()),
            images: Mutex::new(HashMap::new()),
            loaded: Mutex::new(HashMap::new()),
            kernels: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            greeted: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            started: Instant::now(),
            startup,
            trouble: Mutex::new(None),
        }
    }

    fn stop_for(&self, why: String) {
        self.trouble
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(why);
        self.stopping.store(true, Ordering::Release);
    }

    /// Waits for the application's next request; `None` once the proxy stops. Pings are
    /// answered here, at once, by whichever thread leads.
    pub fn next_request(&self) -> Option<Incoming> {
        let mut backoff = Backoff::new();
        loop {
            if self.stopping.load(Ordering::Acquire) {
                return None;
            }
            match self.mpi.improbe(self.app, wire::REQUEST_TAG) {
                Ok(Some((status, message))) => {
                    if let Some(incoming) = self.receive(status, message) {
                        if self.is_ping(&incoming) {
                            self.handle(incoming);
                            backoff = Backoff::new();
                            continue;
                        }
                        return Some(incoming);
                    }
                    backoff = Backoff::new();
                }
                Ok(None) => {
                    if !self.greeted.load(Ordering::Acquire)
                        && self.started.elapsed() > self.startup
                    {
                        self.stop_for(format!(
                            "no application contacted this proxy within {} s (start it as the last rank: `mpirun -np N rustomp-proxy : -np 1 ./app`; RUSTOMP_REMOTE_STARTUP sets the wait)",
                            self.startup.as_secs_f64()
                        ));
                        return None;
                    }
                    backoff.pause(Instant::now() + Duration::from_millis(1));
                }
                Err(e) => {
                    self.stop_for(format!("waiting for requests: {e}"));
                    return None;
                }
            }
        }
    }

    fn is_ping(&self, incoming: &Incoming) -> bool {
        Header::decode(&incoming.bytes).is_ok_and(|h| h.kind == Kind::Ping as u16)
    }

    /// Receives a matched message, refusing one larger than a control message may be (it
    /// is received into nothing, so it leaves MPI's queue, and never allocated for).
    fn receive(&self, status: Status, message: Handle) -> Option<Incoming> {
        let size = usize::try_from(status.bytes).ok();
        match size {
            Some(size) if size <= wire::MAX_CONTROL => {
                let mut bytes = vec![0u8; size];
                // SAFETY: `bytes` holds the message's size; the message was matched once.
                match unsafe { self.mpi.mrecv(bytes.as_mut_ptr(), size, message) } {
                    Ok(()) => Some(Incoming { bytes }),
                    Err(e) => {
                        eprintln!("rustomp-proxy (rank {}): {e}", self.mpi.rank);
                        None
                    }
                }
            }
            _ => {
                let mut nothing = [0u8; 1];
                // SAFETY: a one-byte buffer; the receive fails with a truncation, which is
                // what takes the message off the queue.
                let _ = unsafe { self.mpi.mrecv(nothing.as_mut_ptr(), 0, message) };
                eprintln!(
                    "rustomp-proxy (rank {}): refused a message of {} bytes from rank {} (at most {} bytes)",
                    self.mpi.rank,
                    status.bytes,
                    status.source,
                    wire::MAX_CONTROL
                );
                None
            }
        }
    }

    /// Handles one request and sends its reply.
    pub fn handle(&self, incoming: Incoming) {
        let (header, request) = match Request::decode(&incoming.bytes) {
            Ok(decoded) => decoded,
            Err(e) => {
                let why = format!("rank {} refused a request: {e}", self.mpi.rank);
                // Answer when the header says whom to answer; otherwise there is no one.
                match Header::decode(&incoming.bytes)
                    .ok()
                    .and_then(|h| Some((h.id, Kind::from_u16(h.kind)?)))
                {
                    Some((id, kind)) => {
                        self.reply(kind, id, &Err((ErrorKind::InvalidArgument, why)))
                    }
                    None => eprintln!("rustomp-proxy: {why}"),
                }
                return;
            }
        };
        let kind = request.kind();
        let result = self.carry_out(header.id, request);
        self.reply(kind, header.id, &result);
    }

    fn reply(&self, kind: Kind, id: u64, result: &Result<Reply, Failure>) {
        let message = Reply::encode(kind, id, result);
        let tag = wire::reply_tag(id, self.mpi.tag_slots);
        // SAFETY: `message` lives until the send completed or was abandoned below.
        let sent = unsafe {
            self.mpi
                .isend(message.as_ptr(), message.len(), self.app, tag)
        };
        let mut pending = match sent {
            Ok(p) => [p],
            Err(e) => {
                eprintln!("rustomp-proxy (rank {}): replying: {e}", self.mpi.rank);
                return;
            }
        };
        match self
            .mpi
            .wait_all(&mut pending, Instant::now() + self.timeout)
        {
            Ok(true) => {}
            _ => {
                self.mpi.abandon(&mut pending);
                // The buffer may still be read: keep it.
                std::mem::forget(message);
                eprintln!(
                    "rustomp-proxy (rank {}): the application did not take the reply to a {} within {} s",
                    self.mpi.rank,
                    kind.describe(),
                    self.timeout.as_secs_f64()
                );
            }
        }
    }

    fn opened(&self, device: u32) -> Result<Arc<Opened>, Failure> {
        self.opened
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&device)
            .cloned()
            .ok_or_else(|| {
                (
                    ErrorKind::InvalidArgument,
                    format!(
                        "rank {} has no open device {device} ({} devices)",
                        self.mpi.rank,
                        self.devices.len()
                    ),
                )
            })
    }

    fn stored(&self, hash: &ImageHash) -> Result<Arc<StoredImage>, Failure> {
        self.images
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(hash)
            .cloned()
            .ok_or_else(|| {
                (
                    ErrorKind::InvalidImage,
                    format!("rank {} holds no image with that hash", self.mpi.rank),
                )
            })
    }

    fn loaded(&self, image: u64) -> Result<Arc<LoadedOn>, Failure> {
        self.loaded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&image)
            .cloned()
            .ok_or_else(|| {
                (
                    ErrorKind::InvalidArgument,
                    format!("rank {} has no loaded image {image}", self.mpi.rank),
                )
            })
    }

    /// Refuses a range outside the device's allocations and globals.
    fn check(&self, opened: &Opened, address: u64, bytes: u64) -> Result<(), Failure> {
        if opened
            .memory
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(address, bytes)
        {
            Ok(())
        } else {
            Err((
                ErrorKind::InvalidArgument,
                format!(
                    "{}: {bytes} bytes at {address:#x} are not inside memory the application allocated on it (nor a global of its images)",
                    opened.name
                ),
            ))
        }
    }

    /// The other side of a bulk transfer: the application or, for copies between ranks,
    /// another proxy (checked: a rank of the job other than this one and the application).
    fn peer(&self, rank: i32, tag: i32, bytes: u64) -> Result<Peer, Failure> {
        let slots = self.mpi.tag_slots;
        let is_data_tag = tag >= wire::data_tag(0, slots)
            && tag <= wire::data_tag(slots - 1, slots)
            && (tag - wire::data_tag(0, slots)) % 2 == 0;
        if rank < 0 || rank >= self.mpi.size || rank == self.mpi.rank || !is_data_tag {
            return Err((
                ErrorKind::InvalidArgument,
                format!(
                    "rank {}: no transfer with rank {rank} on tag {tag}",
                    self.mpi.rank
                ),
            ));
        }
        Ok(Peer {
            rank,
            tag,
            limit: self.timeout + Duration::from_secs_f64(bytes as f64 / 100e6),
        })
    }
}

/// This process's memory as a "device", for bulk data that lands in the proxy itself (images).
struct HostSink;

impl Device for HostSink {
    fn alloc(&self, _bytes: usize, _kind: AllocKind) -> rustomp_plugin::Result<*mut c_void> {
        Err(OffloadError::new(ErrorKind::Unsupported, "not a device"))
    }
    unsafe fn free(&self, _ptr: *mut c_void, _kind: AllocKind) -> rustomp_plugin::Result<()> {
        Ok(())
    }
    unsafe fn copy_to_device(
        &self,
        device: *mut c_void,
        host: *const c_void,
        bytes: usize,
    ) -> rustomp_plugin::Result<()> {
        // SAFETY: both in this process, as the caller guarantees.
        unsafe { std::ptr::copy(host as *const u8, device as *mut u8, bytes) };
        Ok(())
    }
    unsafe fn copy_from_device(
        &self,
        host: *mut c_void,
        device: *const c_void,
        bytes: usize,
    ) -> rustomp_plugin::Result<()> {
        // SAFETY: as above.
        unsafe { std::ptr::copy(device as *const u8, host as *mut u8, bytes) };
        Ok(())
    }
    unsafe fn copy_within_device(
        &self,
        dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
    ) -> rustomp_plugin::Result<()> {
        // SAFETY: as above.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
        Ok(())
    }
    fn load_image(&self, _image: &ImageInfo<'_>) -> rustomp_plugin::Result<Box<dyn LoadedImage>> {
        Err(OffloadError::new(ErrorKind::Unsupported, "not a device"))
    }
    fn shares_host_memory(&self) -> bool {
        true
    }
    fn describe(&self) -> String {
        "the proxy's own memory".into()
    }
}
