//! What a proxy does for its application: each request decoded (and refused if malformed),
//! checked against what this proxy handed out (device numbers, image and kernel ids, device
//! memory ranges), carried out on the node's ordinary plugins, and answered.

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

    fn carry_out(&self, id: u64, request: Request) -> Result<Reply, Failure> {
        let offload = |e: OffloadError| (e.kind, e.message);
        let data_tag = wire::data_tag(id, self.mpi.tag_slots);
        match request {
            Request::Hello { version } => {
                self.greeted.store(true, Ordering::Release);
                if version != wire::VERSION as u32 {
                    return Err((
                        ErrorKind::Unsupported,
                        format!(
                            "rank {} speaks protocol version {}, the application {version}",
                            self.mpi.rank,
                            wire::VERSION
                        ),
                    ));
                }
                Ok(Reply::Hello(self.hello.clone()))
            }
            Request::Ping => Ok(Reply::Done),
            Request::Stop => {
                self.stopping.store(true, Ordering::Release);
                Ok(Reply::Done)
            }
            Request::StoreImage {
                hash,
                bytes,
                triple,
                arch,
            } => {
                let peer = self.peer(self.app, data_tag, bytes)?;
                if bytes > MAX_IMAGE {
                    return Err((
                        ErrorKind::InvalidImage,
                        format!("an image of {bytes} bytes (at most {MAX_IMAGE})"),
                    ));
                }
                let mut data = Vec::new();
                data.try_reserve_exact(bytes as usize).map_err(|_| {
                    (
                        ErrorKind::OutOfMemory,
                        format!(
                            "rank {}: no memory for an image of {bytes} bytes",
                            self.mpi.rank
                        ),
                    )
                })?;
                data.resize(bytes as usize, 0);
                let sink = HostSink;
                // SAFETY: `data` holds `bytes` bytes of this process's memory.
                unsafe {
                    transfer::receive(
                        self.mpi,
                        &sink,
                        true,
                        data.as_mut_ptr() as u64,
                        bytes,
                        &peer,
                    )
                }?;
                if rustomp_remote_plugin::hash::image_hash(&data) != hash {
                    return Err((
                        ErrorKind::InvalidImage,
                        format!(
                            "rank {}: the image received does not match its hash",
                            self.mpi.rank
                        ),
                    ));
                }
                self.images
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .entry(hash)
                    .or_insert_with(|| {
                        Arc::new(StoredImage {
                            bytes: data,
                            triple,
                            arch,
                        })
                    });
                Ok(Reply::Done)
            }
            Request::Compatibility { hash } => {
                let stored = self.stored(&hash)?;
                let info = stored.info();
                let verdicts = self
                    .devices
                    .iter()
                    .map(|&(p, index)| {
                        let plugin = &self.plugins[p];
                        if !plugin.is_compatible(&info) {
                            return Some(format!(
                                "the {} plugin cannot run {} images",
                                plugin.name(),
                                info.triple
                            ));
                        }
                        plugin.device_compatibility(index, &info).err()
                    })
                    .collect();
                Ok(Reply::Compatibility(verdicts))
            }
            Request::OpenDevice {
                device,
                global,
                total,
            } => {
                let &(p, index) = self.devices.get(device as usize).ok_or_else(|| {
                    (
                        ErrorKind::InvalidArgument,
                        format!(
                            "rank {} has no device {device} ({} devices)",
                            self.mpi.rank,
                            self.devices.len()
                        ),
                    )
                })?;
                let mut opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
                if opened.contains_key(&device) {
                    return Ok(Reply::Done);
                }
                let plugin = &self.plugins[p];
                let backend = plugin
                    .open_device(index, global as usize, total as usize)
                    .map_err(offload)?;
                let gpu_aware = self.mpi.gpu_aware
                    && plugin.name() == "cuda"
                    && std::env::var("RUSTOMP_REMOTE_GPU_AWARE").map_or(true, |v| v != "0");
                let direct = backend.shares_host_memory() || gpu_aware;
                opened.insert(
                    device,
                    Arc::new(Opened {
                        device: backend,
                        memory: Mutex::new(Ranges::default()),
                        direct,
                        name: format!("device {global} ({} plugin device {index})", plugin.name()),
                    }),
                );
                Ok(Reply::Done)
            }
            Request::Alloc {
                device,
                bytes,
                kind,
            } => {
                let opened = self.opened(device)?;
                let size = usize::try_from(bytes).map_err(|_| {
                    (
                        ErrorKind::OutOfMemory,
                        format!("{}: {bytes} bytes", opened.name),
                    )
                })?;
                let ptr = opened.device.alloc(size, kind).map_err(offload)?;
                opened
                    .memory
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .add(ptr as usize as u64, bytes);
                Ok(Reply::Value(ptr as usize as u64))
            }
            Request::Free { device, ptr, kind } => {
                let opened = self.opened(device)?;
                if !opened
                    .memory
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(ptr)
                {
                    return Err((
                        ErrorKind::InvalidArgument,
                        format!(
                            "{}: {ptr:#x} is no allocation of the application",
                            opened.name
                        ),
                    ));
                }
                // SAFETY: an allocation this device made for the application, freed once (its
                // range was just removed).
                unsafe { opened.device.free(ptr as usize as *mut c_void, kind) }
                    .map_err(offload)?;
                Ok(Reply::Done)
            }
            Request::CopyTo { device, dst, bytes } => {
                let opened = self.opened(device)?;
                self.check(&opened, dst, bytes)?;
                let peer = self.peer(self.app, data_tag, bytes)?;
                // SAFETY: the range was checked to lie in the device's memory.
                unsafe {
                    transfer::receive(self.mpi, &*opened.device, opened.direct, dst, bytes, &peer)
                }?;
                Ok(Reply::Done)
            }
            Request::CopyFrom { device, src, bytes } => {
                let opened = self.opened(device)?;
                self.check(&opened, src, bytes)?;
                let peer = self.peer(self.app, data_tag, bytes)?;
                // SAFETY: as above.
                unsafe {
                    transfer::send(self.mpi, &*opened.device, opened.direct, src, bytes, &peer)
                }?;
                Ok(Reply::Done)
            }
            Request::CopyWithin {
                device,
                dst,
                src,
                bytes,
            } => {
                let opened = self.opened(device)?;
                self.check(&opened, dst, bytes)?;
                self.check(&opened, src, bytes)?;
                // SAFETY: both ranges checked.
                unsafe {
                    opened.device.copy_within_device(
                        dst as usize as *mut c_void,
                        src as usize as *const c_void,
                        bytes as usize,
                    )
                }
                .map_err(offload)?;
                Ok(Reply::Done)
            }
            Request::CopyLocal {
                src_device,
                src,
                dst_device,
                dst,
                bytes,
            } => {
                let from = self.opened(src_device)?;
                let to = self.opened(dst_device)?;
                self.check(&from, src, bytes)?;
                self.check(&to, dst, bytes)?;
                self.copy_local(&from, src, &to, dst, bytes)
                    .map_err(offload)?;
                Ok(Reply::Done)
            }
            Request::PeerSend {
                device,
                src,
                bytes,
                peer,
                tag,
            } => {
                let opened = self.opened(device)?;
                self.check(&opened, src, bytes)?;
                let peer = self.peer_proxy(peer, tag, bytes)?;
                // SAFETY: the range was checked.
                unsafe {
                    transfer::send(self.mpi, &*opened.device, opened.direct, src, bytes, &peer)
                }?;
                Ok(Reply::Done)
            }
            Request::PeerRecv {
                device,
                dst,
                bytes,
                peer,
                tag,
            } => {
                let opened = self.opened(device)?;
                self.check(&opened, dst, bytes)?;
                let peer = self.peer_proxy(peer, tag, bytes)?;
                // SAFETY: the range was checked.
                unsafe {
                    transfer::receive(self.mpi, &*opened.device, opened.direct, dst, bytes, &peer)
                }?;
                Ok(Reply::Done)
            }
            Request::LoadImage { device, hash } => {
                let opened = self.opened(device)?;
                let stored = self.stored(&hash)?;
                let image = opened.device.load_image(&stored.info()).map_err(offload)?;
                let id = self.next_id.fetch_add(1, Ordering::Relaxed);
                self.loaded
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(id, Arc::new(LoadedOn { device, image }));
                Ok(Reply::Value(id))
            }
            Request::UnloadImage { image } => {
                let gone = self
                    .loaded
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&image);
                if gone.is_none() {
                    return Err((
                        ErrorKind::InvalidArgument,
                        format!("rank {} has no loaded image {image}", self.mpi.rank),
                    ));
                }
                self.kernels
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .retain(|_, (owner, _)| *owner != image);
                Ok(Reply::Done)
            }
            Request::Kernel { image, name } => {
                let loaded = self.loaded(image)?;
                match loaded.image.kernel(&name).map_err(offload)? {
                    None => Ok(Reply::Kernel(None)),
                    Some(handle) => {
                        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
                        self.kernels
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(id, (image, handle));
                        Ok(Reply::Kernel(Some(id)))
                    }
                }
            }
            Request::Global { image, name } => {
                let loaded = self.loaded(image)?;
                match loaded.image.global(&name).map_err(offload)? {
                    None => Ok(Reply::Global(None)),
                    Some(global) => {
                        let address = global.address as usize as u64;
                        if let Ok(opened) = self.opened(loaded.device) {
                            opened
                                .memory
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .add(address, global.size as u64);
                        }
                        Ok(Reply::Global(Some((address, global.size as u64))))
                    }
                }
            }
            Request::Launch {
                image,
                kernel,
                config,
                args,
            } => {
                let loaded = self.loaded(image)?;
                let handle = match self
                    .kernels
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(&kernel)
                {
                    Some(&(owner, handle)) if owner == image => handle,
                    _ => {
                        return Err((
                            ErrorKind::InvalidArgument,
                            format!(
                                "rank {}: kernel {kernel} is not a kernel of image {image}",
                                self.mpi.rank
                            ),
                        ))
                    }
                };
                let args: Vec<*mut c_void> =
                    args.iter().map(|a| *a as usize as *mut c_void).collect();
                // SAFETY: the application passes the values its kernel takes, as it would to a
                // local device (the kernel's own parameters are checked by GPU plugins).
                unsafe { loaded.image.launch(handle, &args, &config) }.map_err(offload)?;
                Ok(Reply::Done)
            }
            Request::SetIndirect { image, pairs } => {
                let loaded = self.loaded(image)?;
                let table = IndirectTable::new(
                    pairs
                        .into_iter()
                        .map(|(host, device)| FptrMapEntry { host, device })
                        .collect(),
                );
                loaded.image.set_indirect_table(&table).map_err(offload)?;
                Ok(Reply::Done)
            }
            Request::Synchronize { device } => {
                self.opened(device)?.device.synchronize().map_err(offload)?;
                Ok(Reply::Done)
            }
            Request::Baseline {
                mode,
                bytes,
                iterations,
            } => self.baseline(data_tag, mode, bytes, iterations),
        }
    }

    /// A transfer's peer that must be another proxy.
    fn peer_proxy(&self, rank: u32, tag: u32, bytes: u64) -> Result<Peer, Failure> {
        let rank = i32::try_from(rank).unwrap_or(-1);
        let tag = i32::try_from(tag).unwrap_or(-1);
        if rank == self.app {
            return Err((
                ErrorKind::InvalidArgument,
                format!(
                    "rank {}: a copy between ranks names the application",
                    self.mpi.rank
                ),
            ));
        }
        self.peer(rank, tag, bytes)
    }

    /// A copy between two devices of this node.
    fn copy_local(
        &self,
        from: &Opened,
        src: u64,
        to: &Opened,
        dst: u64,
        bytes: u64,
    ) -> rustomp_plugin::Result<()> {
        let (src_ptr, dst_ptr) = (src as usize as *const c_void, dst as usize as *mut c_void);
        let len = bytes as usize;
        if std::ptr::eq(from, to)
            || (from.device.shares_host_memory() && to.device.shares_host_memory())
        {
            // SAFETY: both ranges checked; on one device, or both in this process's memory.
            return unsafe { to.device.copy_within_device(dst_ptr, src_ptr, len) };
        }
        // SAFETY: both ranges checked.
        if let Some(done) = unsafe { from.device.copy_to_peer(&*to.device, dst_ptr, src_ptr, len) }
        {
            return done;
        }
        if from.device.shares_host_memory() {
            // SAFETY: the source is this process's memory.
            return unsafe { to.device.copy_to_device(dst_ptr, src_ptr, len) };
        }
        if to.device.shares_host_memory() {
            // SAFETY: the destination is this process's memory.
            return unsafe { from.device.copy_from_device(dst_ptr, src_ptr, len) };
        }
        let mut staging = vec![0u8; len];
        // SAFETY: both ranges checked; `staging` holds `len` bytes.
        unsafe {
            from.device
                .copy_from_device(staging.as_mut_ptr() as *mut c_void, src_ptr, len)?;
            to.device
                .copy_to_device(dst_ptr, staging.as_ptr() as *const c_void, len)
        }
    }

    /// Plain MPI with the application, mirrored (see `Link::baseline`).
    fn baseline(&self, tag: i32, mode: u32, bytes: u64, iterations: u32) -> Result<Reply, Failure> {
        let len = usize::try_from(bytes)
            .ok()
            .filter(|b| *b <= i32::MAX as usize)
            .ok_or((
                ErrorKind::InvalidArgument,
                "baseline size beyond an int".to_string(),
            ))?;
        let mut buffer = vec![0u8; len.max(1)];
        let app = self.app;
        let mpi = self.mpi;
        // SAFETY: `buffer` holds `len` bytes (at least one) for every call.
        let result = unsafe {
            (|| {
                match mode {
                    0 => {
                        for _ in 0..iterations {
                            mpi.recv(buffer.as_mut_ptr(), len, app, tag)?;
                            mpi.send(buffer.as_ptr(), len, app, tag)?;
                        }
                    }
                    1 => {
                        for _ in 0..iterations {
                            mpi.recv(buffer.as_mut_ptr(), len, app, tag)?;
                        }
                        mpi.send(buffer.as_ptr(), 0, app, tag)?;
                    }
                    _ => {
                        for _ in 0..iterations {
                            mpi.send(buffer.as_ptr(), len, app, tag)?;
                        }
                        mpi.recv(buffer.as_mut_ptr(), 0, app, tag)?;
                    }
                }
                Ok::<(), rustomp_remote_plugin::mpi::MpiError>(())
            })()
        };
        result
            .map(|()| Reply::Done)
            .map_err(|e| (ErrorKind::TransferFailed, e.0))
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
