//! The remote plugin as the front sees it: every device of every proxy rank, numbered by
//! running totals over the ranks in rank order (rank 0's devices, then rank 1's, ...), each
//! rank's in its own order (its CUDA, AMDGPU, then CPU devices, as its plugins list them).
//! The plugin asks to be numbered after all local plugins (`numbered_last`), so a program sees
//! its own devices first, then the remote ones.
//!
//! MPI starts on the first question about devices, in a process `launcher` accepts
//! (`connection`).

use crate::connection::connection;
use crate::device::RemoteDevice;
use crate::launcher::{self, Launch};
use rustomp_plugin::{Device, ErrorKind, ImageInfo, OffloadError, Plugin, Result};

/// `rustomp-proxy` ranks' devices as this process's devices.
#[derive(Default)]
pub struct RemotePlugin;

impl RemotePlugin {
    pub fn new() -> Self {
        RemotePlugin
    }
}

impl Plugin for RemotePlugin {
    fn name(&self) -> &str {
        "remote"
    }

    fn number_of_devices(&self) -> usize {
        connection().map_or(0, |c| c.devices.len())
    }

    fn unavailable_reason(&self) -> Option<String> {
        match connection() {
            Err(why) => Some(why),
            Ok(c) if c.devices.is_empty() => Some(c.why_none()),
            Ok(_) => None,
        }
    }

    /// Any image, when proxies may be there: which device runs it is each rank's answer.
    fn is_compatible(&self, _image: &ImageInfo<'_>) -> bool {
        launcher::detect(crate::connection::environment) == Launch::WithProxies
    }

    fn device_compatibility(
        &self,
        index: usize,
        image: &ImageInfo<'_>,
    ) -> std::result::Result<(), String> {
        let c = connection()?;
        let &(rank, local) = c
            .devices
            .get(index)
            .ok_or_else(|| format!("no remote device {index}"))?;
        let hash = crate::hash::image_hash(image.bytes);
        let verdicts = c
            .link
            .image_on(rank, hash, image.bytes, &image.triple, &image.arch)
            .map_err(|e| format!("rank {}: {e}", c.link.ranks[rank].rank))?;
        match verdicts.get(local as usize) {
            Some(None) => Ok(()),
            Some(Some(why)) => Err(why.clone()),
            None => Err(format!(
                "rank {} answered for {} devices, not device {local}",
                c.link.ranks[rank].rank,
                verdicts.len()
            )),
        }
    }

    fn device_location(&self, index: usize) -> Option<String> {
        let c = connection().ok()?;
        let &(rank, local) = c.devices.get(index)?;
        Some(format!("rank {}, device {local}", c.link.ranks[rank].rank))
    }

    fn numbered_last(&self) -> bool {
        true
    }

    fn open_device(
        &self,
        index: usize,
        global_device_number: usize,
        total_devices: usize,
    ) -> Result<Box<dyn Device>> {
        let c = connection().map_err(|why| OffloadError::new(ErrorKind::DeviceUnavailable, why))?;
        let &(rank, local) = c.devices.get(index).ok_or_else(|| {
            OffloadError::new(
                ErrorKind::InvalidArgument,
                format!(
                    "remote device {index} does not exist ({} remote devices)",
                    c.devices.len()
                ),
            )
        })?;
        RemoteDevice::open(c, rank, local, global_device_number, total_devices)
            .map(|d| Box::new(d) as Box<dyn Device>)
    }
}
