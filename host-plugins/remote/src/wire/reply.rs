//! A proxy's replies, and their checked decoding (a reply must answer its request).

use super::*;

/// One device of a proxy, as its `Hello` reply describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceInfo {
    /// The proxy plugin's name (`host`, `cuda`, `amdgpu`).
    pub plugin: String,
    /// Its number within that plugin.
    pub index: u32,
    /// `Device::describe` of the device.
    pub description: String,
    /// `Device::properties` of the device, as labelled values.
    pub properties: Vec<(String, String)>,
}

/// What a proxy says about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Hello {
    pub version: u32,
    pub hostname: String,
    pub pid: u32,
    /// The MPI library can move GPU memory itself.
    pub gpu_aware: bool,
    pub devices: Vec<DeviceInfo>,
    /// Why a plugin of the proxy has no devices ("cuda: no CUDA driver ..."), one per plugin.
    pub reasons: Vec<String>,
}

/// A successful reply's contents, by the kind of its request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Everything without a result.
    Done,
    Hello(Hello),
    /// Per device of the proxy: `None` if it can run the image, else why not.
    Compatibility(Vec<Option<String>>),
    /// An allocation's device address, or a loaded image's id.
    Value(u64),
    Kernel(Option<u64>),
    /// A global's device address and size.
    Global(Option<(u64, u64)>),
    /// A copy or launch done while traced: its start and end on the proxy's clock.
    Timed(u64, u64),
}

/// A reply's status other than success: the failure's class and message.
pub type Failure = (ErrorKind, String);

impl Reply {
    /// The reply message to request `id` of kind `kind`.
    pub fn encode(kind: Kind, id: u64, result: &Result<Reply, Failure>) -> Vec<u8> {
        let mut w = Writer::default();
        let status = match result {
            Err((error, message)) => {
                w.str(truncated(message));
                error_code(*error)
            }
            Ok(reply) => {
                match reply {
                    Reply::Done => {}
                    Reply::Hello(hello) => {
                        w.u32(hello.version);
                        w.str(truncated(&hello.hostname));
                        w.u32(hello.pid);
                        w.u8(u8::from(hello.gpu_aware));
                        w.u32(hello.devices.len() as u32);
                        for d in &hello.devices {
                            w.str(truncated(&d.plugin));
                            w.u32(d.index);
                            w.str(truncated(&d.description));
                            w.u32(d.properties.len() as u32);
                            for (label, value) in &d.properties {
                                w.str(truncated(label));
                                w.str(truncated(value));
                            }
                        }
                        w.u32(hello.reasons.len() as u32);
                        for reason in &hello.reasons {
                            w.str(truncated(reason));
                        }
                    }
                    Reply::Compatibility(list) => {
                        w.u32(list.len() as u32);
                        for entry in list {
                            match entry {
                                None => w.u8(0),
                                Some(why) => {
                                    w.u8(1);
                                    w.str(truncated(why));
                                }
                            }
                        }
                    }
                    Reply::Value(v) => w.u64(*v),
                    Reply::Timed(start, end) => {
                        w.u64(*start);
                        w.u64(*end);
                    }
                    Reply::Kernel(k) => w.option_u64(*k),
                    Reply::Global(g) => match g {
                        None => w.u8(0),
                        Some((address, size)) => {
                            w.u8(1);
                            w.u64(*address);
                            w.u64(*size);
                        }
                    },
                }
                0
            }
        };
        let message = w.message(kind as u16 | REPLY, id, status);
        if message.len() > MAX_REPLY {
            let too_large: Result<Reply, Failure> = Err((
                ErrorKind::Unsupported,
                format!(
                    "the {} reply takes {} bytes, more than the {MAX_REPLY} a reply may have",
                    kind.describe(),
                    message.len()
                ),
            ));
            return Reply::encode(kind, id, &too_large);
        }
        message
    }

    /// A reply message, checked: it must answer request `id` of kind `kind`, and its payload
    /// must be what that kind's reply holds.
    pub fn decode(bytes: &[u8], kind: Kind, id: u64) -> Result<Result<Reply, Failure>, WireError> {
        let header = Header::decode(bytes)?;
        if header.kind != kind as u16 | REPLY {
            return Err(WireError::new(format!(
                "reply of kind {:#06x} to a {} request",
                header.kind,
                kind.describe()
            )));
        }
        if header.id != id {
            return Err(WireError::new(format!(
                "reply to request {} where {id} was expected",
                header.id
            )));
        }
        let mut r = Reader::new(&bytes[HEADER_BYTES..], kind.describe());
        if header.status != 0 {
            let error = error_kind(header.status)
                .ok_or_else(|| WireError::new(format!("unknown error status {}", header.status)))?;
            let message = r.str()?;
            r.finish()?;
            return Ok(Err((error, message)));
        }
        let reply = match kind {
            Kind::Hello => {
                let version = r.u32()?;
                let hostname = r.str()?;
                let pid = r.u32()?;
                let gpu_aware = r.bool()?;
                // A device takes at least 16 bytes (its index, a count, two empty strings).
                let count = r.count(16, "devices")?;
                let mut devices = Vec::with_capacity(count);
                for _ in 0..count {
                    let plugin = r.str()?;
                    let index = r.u32()?;
                    let description = r.str()?;
                    let n = r.count(8, "device properties")?;
                    let mut properties = Vec::with_capacity(n);
                    for _ in 0..n {
                        properties.push((r.str()?, r.str()?));
                    }
                    devices.push(DeviceInfo {
                        plugin,
                        index,
                        description,
                        properties,
                    });
                }
                let n = r.count(4, "reasons")?;
                let mut reasons = Vec::with_capacity(n);
                for _ in 0..n {
                    reasons.push(r.str()?);
                }
                Reply::Hello(Hello {
                    version,
                    hostname,
                    pid,
                    gpu_aware,
                    devices,
                    reasons,
                })
            }
            Kind::Compatibility => {
                let count = r.count(1, "devices")?;
                let mut list = Vec::with_capacity(count);
                for _ in 0..count {
                    list.push(if r.bool()? { Some(r.str()?) } else { None });
                }
                Reply::Compatibility(list)
            }
            Kind::Alloc | Kind::LoadImage | Kind::Clock => Reply::Value(r.u64()?),
            // Timed while the proxy is traced, else nothing.
            Kind::CopyTo | Kind::CopyFrom | Kind::CopyWithin | Kind::Launch
                if r.remaining() > 0 =>
            {
                Reply::Timed(r.u64()?, r.u64()?)
            }
            Kind::Kernel => Reply::Kernel(r.option_u64()?),
            Kind::Global => Reply::Global(if r.bool()? {
                Some((r.u64()?, r.u64()?))
            } else {
                None
            }),
            _ => Reply::Done,
        };
        r.finish()?;
        Ok(Ok(reply))
    }
}
