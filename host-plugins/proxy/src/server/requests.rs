//! What the proxy does for each request: the dispatch from a decoded [`Request`] to the node's
//! plugins, and the requests with more to them than one plugin call (copies between ranks and
//! between devices of this node, the plain-MPI baseline).

use super::*;
use rustomp_plugin::{monotonic_ns, op_times};

/// Set (signed nanoseconds) to make this proxy's clock run that far from the host's: the
/// remote-offload test's check that the application translates a rank's times.
pub const CLOCK_SKEW_VARIABLE: &str = "RUSTOMP_PROXY_CLOCK_SKEW_NS";

/// A time of the host's monotonic clock as this proxy's clock (its devices' time base).
fn proxy_clock(host_ns: u64) -> u64 {
    static SKEW: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    let skew = *SKEW.get_or_init(|| {
        std::env::var(CLOCK_SKEW_VARIABLE)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    });
    host_ns.wrapping_add_signed(skew)
}

/// What a traced operation's times are.
#[derive(Clone, Copy, PartialEq)]
enum Timing {
    /// The device's own times when its backend recorded them (CUDA events, HSA timestamps),
    /// else the clock read around the work (the CPU plugin's): a launch, a copy on the device.
    Device,
    /// The clock around the whole request: a copy from or to the application, whose MPI
    /// transfer and device copies (one per fragment, each staged in pieces) are one operation.
    Request,
}

/// Does `work` and answers it: `Done`, or while a tool traces, `Timed` with the operation's
/// start and end on the proxy's clock, as `timing` says.
fn timed(timing: Timing, work: impl FnOnce() -> Result<(), Failure>) -> Result<Reply, Failure> {
    if !op_times::wanted() {
        work()?;
        return Ok(Reply::Done);
    }
    let _ = op_times::take();
    let start = monotonic_ns();
    work()?;
    let end = monotonic_ns();
    let device = op_times::take().filter(|_| timing == Timing::Device);
    let (start, end) = device.unwrap_or((start, end));
    Ok(Reply::Timed(proxy_clock(start), proxy_clock(end)))
}

impl Server {
    pub(super) fn carry_out(&self, id: u64, request: Request) -> Result<Reply, Failure> {
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
                timed(Timing::Request, || {
                    // SAFETY: the range was checked to lie in the device's memory.
                    unsafe {
                        transfer::receive(
                            self.mpi,
                            &*opened.device,
                            opened.direct,
                            dst,
                            bytes,
                            &peer,
                        )
                    }
                })
            }
            Request::CopyFrom { device, src, bytes } => {
                let opened = self.opened(device)?;
                self.check(&opened, src, bytes)?;
                let peer = self.peer(self.app, data_tag, bytes)?;
                timed(Timing::Request, || {
                    // SAFETY: as above.
                    unsafe {
                        transfer::send(self.mpi, &*opened.device, opened.direct, src, bytes, &peer)
                    }
                })
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
                timed(Timing::Device, || {
                    // SAFETY: both ranges checked.
                    unsafe {
                        opened.device.copy_within_device(
                            dst as usize as *mut c_void,
                            src as usize as *const c_void,
                            bytes as usize,
                        )
                    }
                    .map_err(offload)
                })
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
                timed(Timing::Device, || {
                    // SAFETY: the application passes the values its kernel takes, as it would
                    // to a local device (the kernel's own parameters are checked by GPU plugins).
                    unsafe { loaded.image.launch(handle, &args, &config) }.map_err(offload)
                })
            }
            Request::Trace { on } => {
                op_times::set_wanted(on);
                Ok(Reply::Done)
            }
            Request::Clock => Ok(Reply::Value(proxy_clock(monotonic_ns()))),
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
