//! A device of a proxy rank, and the images loaded on it, as the front's [`Device`] and
//! [`LoadedImage`]: every method is one call to the rank (see `link`), its errors named with
//! the device ("remote device 4 (rank 0, host device 1): ...").
//!
//! Device addresses, image and kernel ids are the proxy's values, passed back untouched; the
//! proxy checks each against what it handed out. Memory of a remote device is never the
//! application's: `shares_host_memory` is false even for a remote CPU, so mapping copies.

use crate::connection::Connection;
use crate::link::{unexpected, Bulk};
use crate::wire::{Kind, Reply, Request};
use rustomp_plugin::layout::IndirectTable;
use rustomp_plugin::{monotonic_ns, op_times};
use rustomp_plugin::{
    AllocKind, Device, DeviceGlobal, ErrorKind, ImageInfo, KernelHandle, LaunchConfig, LoadedImage,
    OffloadError, Result,
};
use std::collections::{HashMap, HashSet};
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// What a remote device and its images share.
struct Place {
    connection: &'static Connection,
    /// The rank's index in the link.
    rank: usize,
    /// The rank's own number for the device.
    local: u32,
    /// "remote device 4 (rank 0, host device 1)".
    name: String,
    /// Whether the proxy was told that a tool traces (its replies then carry times).
    traced: AtomicBool,
    /// The rank's clock minus ours, in nanoseconds, once measured.
    clock_offset: OnceLock<i64>,
}

impl Place {
    fn call(&self, request: &Request, bulk: Bulk, what: &dyn Fn() -> String) -> Result<Reply> {
        self.connection
            .link
            .call(self.rank, request, bulk, what)
            .map_err(|e| e.context(&self.name))
    }

    fn done(&self, request: &Request, bulk: Bulk) -> Result<()> {
        let kind = request.kind();
        match self.call(request, bulk, &|| kind.describe().to_string())? {
            Reply::Done => Ok(()),
            _ => Err(unexpected(kind).context(&self.name)),
        }
    }

    /// A copy or a launch. While a tool traces, the proxy is told so and answers with the
    /// operation's times on its clock, which are left for the trace (`op_times`; the device's
    /// `clock_to_host_ns` translates them).
    fn operation(&self, request: &Request, bulk: Bulk, what: &dyn Fn() -> String) -> Result<()> {
        let wanted = op_times::wanted();
        if self.traced.load(Ordering::Relaxed) != wanted {
            self.done(&Request::Trace { on: wanted }, Bulk::None)?;
            self.traced.store(wanted, Ordering::Relaxed);
            if wanted {
                // Measured now, before the first traced operation, not inside it.
                self.clock_offset();
            }
        }
        let kind = request.kind();
        match self.call(request, bulk, what)? {
            Reply::Done => Ok(()),
            Reply::Timed(start, end) => {
                op_times::record(start, end);
                Ok(())
            }
            _ => Err(unexpected(kind).context(&self.name)),
        }
    }

    /// The rank's clock minus ours: of a few readings, the one with the shortest round trip,
    /// taken at its midpoint (0 when the rank cannot be asked).
    fn clock_offset(&self) -> i64 {
        *self.clock_offset.get_or_init(|| {
            let mut best: Option<(u64, i64)> = None;
            for _ in 0..5 {
                let sent = monotonic_ns();
                let remote = match self.call(&Request::Clock, Bulk::None, &|| {
                    "clock reading".into()
                }) {
                    Ok(Reply::Value(remote)) => remote,
                    other => {
                        if best.is_none() {
                            let why = match other {
                                Err(e) => e.message,
                                Ok(_) => "an unexpected reply".into(),
                            };
                            eprintln!("omptarget warning: {}: its clock could not be read ({why}); its trace times are taken as this process's", self.name);
                        }
                        break;
                    }
                };
                let back = monotonic_ns();
                let round_trip = back.saturating_sub(sent);
                let offset = remote.wrapping_sub(sent + round_trip / 2) as i64;
                if best.is_none_or(|(shortest, _)| round_trip < shortest) {
                    best = Some((round_trip, offset));
                }
            }
            best.map_or(0, |(_, offset)| offset)
        })
    }
}

pub struct RemoteDevice {
    place: Arc<Place>,
    global: usize,
}

impl RemoteDevice {
    pub fn open(
        connection: &'static Connection,
        rank: usize,
        local: u32,
        global: usize,
        total: usize,
    ) -> Result<RemoteDevice> {
        let info = &connection.link.ranks[rank].hello.devices[local as usize];
        let place = Place {
            connection,
            rank,
            local,
            name: format!(
                "remote device {global} (rank {}, {} device {})",
                connection.link.ranks[rank].rank, info.plugin, info.index
            ),
            traced: AtomicBool::new(false),
            clock_offset: OnceLock::new(),
        };
        place.done(
            &Request::OpenDevice {
                device: local,
                global: global as u32,
                total: total as u32,
            },
            Bulk::None,
        )?;
        Ok(RemoteDevice {
            place: Arc::new(place),
            global,
        })
    }

    fn link(&self) -> &crate::link::Link {
        &self.place.connection.link
    }

    /// The proxy's MPI rank.
    fn mpi_rank(&self) -> i32 {
        self.link().ranks[self.place.rank].rank
    }

    fn info(&self) -> &crate::wire::DeviceInfo {
        &self.link().ranks[self.place.rank].hello.devices[self.place.local as usize]
    }

    /// Plain MPI between this process and the device's rank (`Link::baseline`), for the
    /// benchmark's reference figures.
    pub fn baseline(&self, mode: u32, bytes: u64, iterations: u32) -> Result<std::time::Duration> {
        self.link()
            .baseline(self.place.rank, mode, bytes, iterations)
            .map_err(|e| e.context(&self.place.name))
    }
}

fn address(ptr: *const c_void) -> u64 {
    ptr as usize as u64
}

impl Device for RemoteDevice {
    fn alloc(&self, bytes: usize, kind: AllocKind) -> Result<*mut c_void> {
        // Host and shared memory must be usable by this process: a proxy's is not.
        if kind != AllocKind::Device {
            return Err(OffloadError::new(
                ErrorKind::Unsupported,
                format!(
                    "{}: {kind:?} memory of a remote device would be another process's memory; only device memory (omp_target_alloc) is offered",
                    self.place.name
                ),
            ));
        }
        let request = Request::Alloc {
            device: self.place.local,
            bytes: bytes as u64,
            kind,
        };
        match self.place.call(&request, Bulk::None, &|| {
            format!("allocation of {bytes} bytes")
        })? {
            Reply::Value(ptr) => Ok(ptr as usize as *mut c_void),
            _ => Err(unexpected(Kind::Alloc).context(&self.place.name)),
        }
    }

    unsafe fn free(&self, ptr: *mut c_void, kind: AllocKind) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        self.place.done(
            &Request::Free {
                device: self.place.local,
                ptr: address(ptr),
                kind,
            },
            Bulk::None,
        )
    }

    unsafe fn copy_to_device(
        &self,
        device: *mut c_void,
        host: *const c_void,
        bytes: usize,
    ) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        let request = Request::CopyTo {
            device: self.place.local,
            dst: address(device),
            bytes: bytes as u64,
        };
        // The host buffer goes out as it is, in fragments: no staging copy here.
        self.place.operation(
            &request,
            Bulk::Out(host as *const u8, bytes as u64),
            &|| format!("copy of {bytes} bytes to {device:p}"),
        )
    }

    unsafe fn copy_from_device(
        &self,
        host: *mut c_void,
        device: *const c_void,
        bytes: usize,
    ) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        let request = Request::CopyFrom {
            device: self.place.local,
            src: address(device),
            bytes: bytes as u64,
        };
        self.place
            .operation(&request, Bulk::In(host as *mut u8, bytes as u64), &|| {
                format!("copy of {bytes} bytes from {device:p}")
            })
    }

    unsafe fn copy_within_device(
        &self,
        dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
    ) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.place.operation(
            &Request::CopyWithin {
                device: self.place.local,
                dst: address(dst),
                src: address(src),
                bytes: bytes as u64,
            },
            Bulk::None,
            &|| format!("copy of {bytes} bytes within the device"),
        )
    }

    unsafe fn copy_to_peer(
        &self,
        peer: &dyn Device,
        dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
    ) -> Option<Result<()>> {
        let other = peer.as_any()?.downcast_ref::<RemoteDevice>()?;
        if !std::ptr::eq(self.place.connection, other.place.connection) {
            return None;
        }
        if bytes == 0 {
            return Some(Ok(()));
        }
        let link = self.link();
        let what = || format!("copy of {bytes} bytes to {} at {dst:p}", other.place.name);
        if self.place.rank == other.place.rank {
            let request = Request::CopyLocal {
                src_device: self.place.local,
                src: address(src),
                dst_device: other.place.local,
                dst: address(dst),
                bytes: bytes as u64,
            };
            return Some(self.place.call(&request, Bulk::None, &what).map(|_| ()));
        }
        // Rank to rank: the receiver and the sender are asked at once, and the data goes
        // between them directly on a tag of their own.
        let tag = link.fresh_tag();
        let requests = [
            (
                other.place.rank,
                Request::PeerRecv {
                    device: other.place.local,
                    dst: address(dst),
                    bytes: bytes as u64,
                    peer: self.mpi_rank() as u32,
                    tag,
                },
                Bulk::None,
            ),
            (
                self.place.rank,
                Request::PeerSend {
                    device: self.place.local,
                    src: address(src),
                    bytes: bytes as u64,
                    peer: other.mpi_rank() as u32,
                    tag,
                },
                Bulk::None,
            ),
        ];
        Some(
            link.call_all(&requests, &what)
                .map(|_| ())
                .map_err(|e| e.context(&self.place.name)),
        )
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn load_image(&self, image: &ImageInfo<'_>) -> Result<Box<dyn LoadedImage>> {
        let hash = crate::hash::image_hash(image.bytes);
        // Shipped once per rank; a second device of the rank finds it there.
        self.link()
            .image_on(
                self.place.rank,
                hash,
                image.bytes,
                &image.triple,
                &image.arch,
            )
            .map_err(|e| e.context(&self.place.name))?;
        let request = Request::LoadImage {
            device: self.place.local,
            hash,
        };
        let what = || {
            format!(
                "load of a {} image ({} bytes)",
                image.triple,
                image.bytes.len()
            )
        };
        match self.place.call(&request, Bulk::None, &what)? {
            Reply::Value(id) => Ok(Box::new(RemoteImage {
                place: self.place.clone(),
                id,
                names: Mutex::new(HashMap::new()),
            })),
            _ => Err(unexpected(Kind::LoadImage).context(&self.place.name)),
        }
    }

    fn synchronize(&self) -> Result<()> {
        self.place.done(
            &Request::Synchronize {
                device: self.place.local,
            },
            Bulk::None,
        )
    }

    fn unified_memory(&self) -> std::result::Result<(), String> {
        Err(format!(
            "its memory is on rank {} ({}), not in this process",
            self.mpi_rank(),
            self.link().ranks[self.place.rank].hello.hostname
        ))
    }

    /// The rank's clock (the time base of its devices' trace times), read as ours plus the
    /// measured offset.
    fn clock_ns(&self) -> u64 {
        // The offset first: its first measurement takes a few round trips.
        let offset = self.place.clock_offset();
        monotonic_ns().wrapping_add_signed(offset)
    }

    fn clock_to_host_ns(&self, device_ns: u64) -> u64 {
        device_ns.wrapping_add_signed(self.place.clock_offset().wrapping_neg())
    }

    fn describe(&self) -> String {
        format!(
            "device {}: remote, rank {} ({}), {} device {}: {}",
            self.global,
            self.mpi_rank(),
            self.link().ranks[self.place.rank].hello.hostname,
            self.info().plugin,
            self.info().index,
            self.info().description
        )
    }

    fn properties(&self) -> Vec<(&'static str, String)> {
        let rank = &self.link().ranks[self.place.rank];
        let mut out = vec![
            (
                "Location",
                format!(
                    "rank {} ({}, pid {}), device {}",
                    rank.rank, rank.hello.hostname, rank.hello.pid, self.place.local
                ),
            ),
            (
                "Remote plugin",
                format!("{} device {}", self.info().plugin, self.info().index),
            ),
        ];
        out.extend(
            self.info()
                .properties
                .iter()
                .map(|(label, value)| (intern(label), value.clone())),
        );
        out.push(("MPI", self.link().mpi.library.clone()));
        out
    }
}

/// Property labels come from the proxy as strings; listings want `&'static str`. Each distinct
/// label is kept once (a proxy names a handful); past a bound, others share one label.
fn intern(label: &str) -> &'static str {
    static LABELS: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut labels = LABELS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(known) = labels.get(label) {
        return known;
    }
    if labels.len() >= 256 {
        return "Property";
    }
    let leaked: &'static str = Box::leak(label.to_string().into_boxed_str());
    labels.insert(leaked);
    leaked
}

pub struct RemoteImage {
    place: Arc<Place>,
    id: u64,
    /// Kernel id → name, for messages.
    names: Mutex<HashMap<u64, Arc<str>>>,
}

impl LoadedImage for RemoteImage {
    fn find_kernel(&self, name: &str) -> Result<Option<NonNull<c_void>>> {
        let request = Request::Kernel {
            image: self.id,
            name: name.to_string(),
        };
        match self.place.call(&request, Bulk::None, &|| {
            format!("lookup of kernel '{name}'")
        })? {
            Reply::Kernel(None) => Ok(None),
            Reply::Kernel(Some(id)) => {
                let handle = NonNull::new(id as usize as *mut c_void).ok_or_else(|| {
                    OffloadError::new(ErrorKind::TransferFailed, "kernel id 0 from the proxy")
                        .context(&self.place.name)
                })?;
                self.names
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(id, name.into());
                Ok(Some(handle))
            }
            _ => Err(unexpected(Kind::Kernel).context(&self.place.name)),
        }
    }

    fn global(&self, name: &str) -> Result<Option<DeviceGlobal>> {
        let request = Request::Global {
            image: self.id,
            name: name.to_string(),
        };
        match self.place.call(&request, Bulk::None, &|| {
            format!("lookup of global '{name}'")
        })? {
            Reply::Global(None) => Ok(None),
            Reply::Global(Some((address, size))) => Ok(Some(DeviceGlobal {
                address: address as usize as *mut c_void,
                size: size as usize,
            })),
            _ => Err(unexpected(Kind::Global).context(&self.place.name)),
        }
    }

    unsafe fn launch(
        &self,
        kernel: KernelHandle,
        args: &[*mut c_void],
        config: &LaunchConfig,
    ) -> Result<()> {
        let id = kernel.raw() as usize as u64;
        let name = self
            .names
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&id)
            .cloned()
            .unwrap_or_else(|| Arc::from(format!("kernel {id}")));
        // One packed message: the kernel, the geometry and every argument value.
        let request = Request::Launch {
            image: self.id,
            kernel: id,
            config: *config,
            args: args.iter().map(|a| *a as usize as u64).collect(),
        };
        self.place
            .operation(&request, Bulk::None, &|| format!("launch of '{name}'"))
    }

    fn set_indirect_table(&self, table: &IndirectTable) -> Result<()> {
        self.place.done(
            &Request::SetIndirect {
                image: self.id,
                pairs: table.entries().iter().map(|e| (e.host, e.device)).collect(),
            },
            Bulk::None,
        )
    }
}

impl Drop for RemoteImage {
    fn drop(&mut self) {
        // Best effort: after shutdown, or with the rank gone, there is nothing to unload.
        let _ = self
            .place
            .done(&Request::UnloadImage { image: self.id }, Bulk::None);
    }
}
