//! The requests the application sends a proxy, and their checked decoding.

use super::*;

/// What the application asks of a proxy. Device numbers are the proxy's own (its devices in
/// its plugins' order), images and kernels the ids the proxy gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// The first request: the application's protocol version. The reply lists the devices.
    Hello {
        version: u32,
    },
    /// Are you there (asked while a long operation is pending).
    Ping,
    /// Finish and exit.
    Stop,
    /// An image of `bytes` bytes follows as bulk data; keep it under `hash`.
    StoreImage {
        hash: ImageHash,
        bytes: u64,
        triple: String,
        arch: String,
    },
    /// Which devices can run the stored image `hash`.
    Compatibility {
        hash: ImageHash,
    },
    OpenDevice {
        device: u32,
        global: u32,
        total: u32,
    },
    Alloc {
        device: u32,
        bytes: u64,
        kind: AllocKind,
    },
    Free {
        device: u32,
        ptr: u64,
        kind: AllocKind,
    },
    /// `bytes` bytes follow as bulk data, to `dst`.
    CopyTo {
        device: u32,
        dst: u64,
        bytes: u64,
    },
    /// Send `bytes` bytes from `src` back as bulk data.
    CopyFrom {
        device: u32,
        src: u64,
        bytes: u64,
    },
    CopyWithin {
        device: u32,
        dst: u64,
        src: u64,
        bytes: u64,
    },
    /// Between two devices of the proxy.
    CopyLocal {
        src_device: u32,
        src: u64,
        dst_device: u32,
        dst: u64,
        bytes: u64,
    },
    /// Send `bytes` from `src` to rank `peer` on tag `tag` (its `PeerRecv` receives them).
    PeerSend {
        device: u32,
        src: u64,
        bytes: u64,
        peer: u32,
        tag: u32,
    },
    PeerRecv {
        device: u32,
        dst: u64,
        bytes: u64,
        peer: u32,
        tag: u32,
    },
    LoadImage {
        device: u32,
        hash: ImageHash,
    },
    UnloadImage {
        image: u64,
    },
    Kernel {
        image: u64,
        name: String,
    },
    Global {
        image: u64,
        name: String,
    },
    Launch {
        image: u64,
        kernel: u64,
        config: LaunchConfig,
        args: Vec<u64>,
    },
    SetIndirect {
        image: u64,
        pairs: Vec<(u64, u64)>,
    },
    Synchronize {
        device: u32,
    },
    /// Plain MPI for the benchmark's reference: `mode` 0 ping-pong of `bytes`, 1 receive
    /// `bytes` `iterations` times then acknowledge, 2 send them; on the request's data tag.
    Baseline {
        mode: u32,
        bytes: u64,
        iterations: u32,
    },
    /// A tool traces the proxy's devices (or no longer does): while on, the replies to copies
    /// and launches carry the device's times of the operation on the proxy's clock.
    Trace {
        on: bool,
    },
    /// The proxy's clock now (its devices' time base), for the application to translate.
    Clock,
}

impl Request {
    pub fn kind(&self) -> Kind {
        match self {
            Request::Hello { .. } => Kind::Hello,
            Request::Ping => Kind::Ping,
            Request::Stop => Kind::Stop,
            Request::StoreImage { .. } => Kind::StoreImage,
            Request::Compatibility { .. } => Kind::Compatibility,
            Request::OpenDevice { .. } => Kind::OpenDevice,
            Request::Alloc { .. } => Kind::Alloc,
            Request::Free { .. } => Kind::Free,
            Request::CopyTo { .. } => Kind::CopyTo,
            Request::CopyFrom { .. } => Kind::CopyFrom,
            Request::CopyWithin { .. } => Kind::CopyWithin,
            Request::CopyLocal { .. } => Kind::CopyLocal,
            Request::PeerSend { .. } => Kind::PeerSend,
            Request::PeerRecv { .. } => Kind::PeerRecv,
            Request::LoadImage { .. } => Kind::LoadImage,
            Request::UnloadImage { .. } => Kind::UnloadImage,
            Request::Kernel { .. } => Kind::Kernel,
            Request::Global { .. } => Kind::Global,
            Request::Launch { .. } => Kind::Launch,
            Request::SetIndirect { .. } => Kind::SetIndirect,
            Request::Synchronize { .. } => Kind::Synchronize,
            Request::Trace { .. } => Kind::Trace,
            Request::Clock => Kind::Clock,
            Request::Baseline { .. } => Kind::Baseline,
        }
    }

    /// The message: header and payload.
    pub fn encode(&self, id: u64) -> Vec<u8> {
        let mut w = Writer::default();
        match self {
            Request::Hello { version } => w.u32(*version),
            Request::Ping | Request::Stop | Request::Clock => {}
            Request::Trace { on } => w.u8(u8::from(*on)),
            Request::StoreImage {
                hash,
                bytes,
                triple,
                arch,
            } => {
                w.hash(hash);
                w.u64(*bytes);
                w.str(triple);
                w.str(arch);
            }
            Request::Compatibility { hash } => w.hash(hash),
            Request::OpenDevice {
                device,
                global,
                total,
            } => {
                w.u32(*device);
                w.u32(*global);
                w.u32(*total);
            }
            Request::Alloc {
                device,
                bytes,
                kind,
            } => {
                w.u32(*device);
                w.u64(*bytes);
                w.u8(alloc_kind_code(*kind));
            }
            Request::Free { device, ptr, kind } => {
                w.u32(*device);
                w.u64(*ptr);
                w.u8(alloc_kind_code(*kind));
            }
            Request::CopyTo { device, dst, bytes } => {
                w.u32(*device);
                w.u64(*dst);
                w.u64(*bytes);
            }
            Request::CopyFrom { device, src, bytes } => {
                w.u32(*device);
                w.u64(*src);
                w.u64(*bytes);
            }
            Request::CopyWithin {
                device,
                dst,
                src,
                bytes,
            } => {
                w.u32(*device);
                w.u64(*dst);
                w.u64(*src);
                w.u64(*bytes);
            }
            Request::CopyLocal {
                src_device,
                src,
                dst_device,
                dst,
                bytes,
            } => {
                w.u32(*src_device);
                w.u64(*src);
                w.u32(*dst_device);
                w.u64(*dst);
                w.u64(*bytes);
            }
            Request::PeerSend {
                device,
                src: ptr,
                bytes,
                peer,
                tag,
            }
            | Request::PeerRecv {
                device,
                dst: ptr,
                bytes,
                peer,
                tag,
            } => {
                w.u32(*device);
                w.u64(*ptr);
                w.u64(*bytes);
                w.u32(*peer);
                w.u32(*tag);
            }
            Request::LoadImage { device, hash } => {
                w.u32(*device);
                w.hash(hash);
            }
            Request::UnloadImage { image } => w.u64(*image),
            Request::Kernel { image, name } | Request::Global { image, name } => {
                w.u64(*image);
                w.str(name);
            }
            Request::Launch {
                image,
                kernel,
                config,
                args,
            } => {
                w.u64(*image);
                w.u64(*kernel);
                w.u32(config.num_teams);
                w.u32(config.thread_limit);
                w.u32(config.teams_yz[0]);
                w.u32(config.teams_yz[1]);
                w.u32(config.threads_yz[0]);
                w.u32(config.threads_yz[1]);
                w.u32(config.dyn_shared_bytes);
                w.u64(config.tripcount);
                w.u32(args.len() as u32);
                for a in args {
                    w.u64(*a);
                }
            }
            Request::SetIndirect { image, pairs } => {
                w.u64(*image);
                w.u32(pairs.len() as u32);
                for (host, device) in pairs {
                    w.u64(*host);
                    w.u64(*device);
                }
            }
            Request::Synchronize { device } => w.u32(*device),
            Request::Baseline {
                mode,
                bytes,
                iterations,
            } => {
                w.u32(*mode);
                w.u64(*bytes);
                w.u32(*iterations);
            }
        }
        w.message(self.kind() as u16, id, 0)
    }

    /// A request message, checked (see the module's description).
    pub fn decode(bytes: &[u8]) -> Result<(Header, Request), WireError> {
        let header = Header::decode(bytes)?;
        if header.status != 0 {
            return Err(WireError::new(format!(
                "a request with status {}",
                header.status
            )));
        }
        let kind = Kind::from_u16(header.kind)
            .ok_or_else(|| WireError::new(format!("unknown request kind {}", header.kind)))?;
        let mut r = Reader::new(&bytes[HEADER_BYTES..], kind.describe());
        let request = match kind {
            Kind::Hello => Request::Hello { version: r.u32()? },
            Kind::Ping => Request::Ping,
            Kind::Stop => Request::Stop,
            Kind::StoreImage => Request::StoreImage {
                hash: r.hash()?,
                bytes: r.u64()?,
                triple: r.str()?,
                arch: r.str()?,
            },
            Kind::Compatibility => Request::Compatibility { hash: r.hash()? },
            Kind::OpenDevice => Request::OpenDevice {
                device: r.u32()?,
                global: r.u32()?,
                total: r.u32()?,
            },
            Kind::Alloc => Request::Alloc {
                device: r.u32()?,
                bytes: r.u64()?,
                kind: r.alloc_kind()?,
            },
            Kind::Free => Request::Free {
                device: r.u32()?,
                ptr: r.u64()?,
                kind: r.alloc_kind()?,
            },
            Kind::CopyTo => Request::CopyTo {
                device: r.u32()?,
                dst: r.u64()?,
                bytes: r.u64()?,
            },
            Kind::CopyFrom => Request::CopyFrom {
                device: r.u32()?,
                src: r.u64()?,
                bytes: r.u64()?,
            },
            Kind::CopyWithin => Request::CopyWithin {
                device: r.u32()?,
                dst: r.u64()?,
                src: r.u64()?,
                bytes: r.u64()?,
            },
            Kind::CopyLocal => Request::CopyLocal {
                src_device: r.u32()?,
                src: r.u64()?,
                dst_device: r.u32()?,
                dst: r.u64()?,
                bytes: r.u64()?,
            },
            Kind::PeerSend => Request::PeerSend {
                device: r.u32()?,
                src: r.u64()?,
                bytes: r.u64()?,
                peer: r.u32()?,
                tag: r.u32()?,
            },
            Kind::PeerRecv => Request::PeerRecv {
                device: r.u32()?,
                dst: r.u64()?,
                bytes: r.u64()?,
                peer: r.u32()?,
                tag: r.u32()?,
            },
            Kind::LoadImage => Request::LoadImage {
                device: r.u32()?,
                hash: r.hash()?,
            },
            Kind::UnloadImage => Request::UnloadImage { image: r.u64()? },
            Kind::Kernel => Request::Kernel {
                image: r.u64()?,
                name: r.str()?,
            },
            Kind::Global => Request::Global {
                image: r.u64()?,
                name: r.str()?,
            },
            Kind::Launch => {
                let image = r.u64()?;
                let kernel = r.u64()?;
                let config = LaunchConfig {
                    num_teams: r.u32()?,
                    thread_limit: r.u32()?,
                    teams_yz: [r.u32()?, r.u32()?],
                    threads_yz: [r.u32()?, r.u32()?],
                    dyn_shared_bytes: r.u32()?,
                    tripcount: r.u64()?,
                };
                let count = r.count(8, "kernel arguments")?;
                let mut args = Vec::with_capacity(count);
                for _ in 0..count {
                    args.push(r.u64()?);
                }
                Request::Launch {
                    image,
                    kernel,
                    config,
                    args,
                }
            }
            Kind::SetIndirect => {
                let image = r.u64()?;
                let count = r.count(16, "indirect-call pairs")?;
                let mut pairs = Vec::with_capacity(count);
                for _ in 0..count {
                    pairs.push((r.u64()?, r.u64()?));
                }
                Request::SetIndirect { image, pairs }
            }
            Kind::Synchronize => Request::Synchronize { device: r.u32()? },
            Kind::Trace => Request::Trace { on: r.bool()? },
            Kind::Clock => Request::Clock,
            Kind::Baseline => Request::Baseline {
                mode: r.u32()?,
                bytes: r.u64()?,
                iterations: r.u32()?,
            },
        };
        r.finish()?;
        Ok((header, request))
    }
}
