//! [`GenericPlugin`]: a [`Plugin`] over a backend's [`Driver`], initialized only when an image
//! needs its devices.

use super::{Driver, GenericDevice};
use crate::diag::{self, Settings};
use crate::image;
use crate::{Device, ErrorKind, ImageInfo, OffloadError, Plugin, Result};
use std::sync::{Arc, OnceLock};

/// A [`Plugin`] over a [`Driver`]: the driver is initialized the first time devices are
/// counted, never before (LLVM initializes a plugin only when an image needs it).
pub struct GenericPlugin<D: Driver> {
    driver: Arc<D>,
    devices: OnceLock<std::result::Result<Vec<D::Properties>, String>>,
}

impl<D: Driver> GenericPlugin<D> {
    pub fn new(driver: D) -> Self {
        Self {
            driver: Arc::new(driver),
            devices: OnceLock::new(),
        }
    }

    fn devices(&self) -> &std::result::Result<Vec<D::Properties>, String> {
        self.devices.get_or_init(|| {
            let found = self.driver.initialize().and_then(|devices| {
                if devices.is_empty() {
                    Err(format!(
                        "the {} driver reports no device",
                        self.driver.name()
                    ))
                } else {
                    Ok(devices)
                }
            });
            match &found {
                Ok(devices) => diag::debug(
                    self.driver.name(),
                    format_args!("{} device(s)", devices.len()),
                ),
                Err(why) => diag::debug(self.driver.name(), format_args!("no devices: {why}")),
            }
            found
        })
    }
}

impl<D: Driver> Plugin for GenericPlugin<D> {
    fn name(&self) -> &str {
        self.driver.name()
    }

    fn number_of_devices(&self) -> usize {
        self.devices().as_ref().map_or(0, Vec::len)
    }

    fn unavailable_reason(&self) -> Option<String> {
        self.devices().as_ref().err().cloned()
    }

    fn is_compatible(&self, image: &ImageInfo<'_>) -> bool {
        image::classify(image.bytes).is_some_and(|kind| self.driver.accepts(&kind, &image.triple))
    }

    fn device_compatibility(
        &self,
        index: usize,
        image: &ImageInfo<'_>,
    ) -> std::result::Result<(), String> {
        let name = self.driver.name();
        let kind = image::classify(image.bytes).filter(|k| self.driver.accepts(k, &image.triple));
        let kind = kind.ok_or_else(|| format!("not an image the {name} plugin runs"))?;
        let devices = self.devices().as_ref().map_err(Clone::clone)?;
        let device = devices
            .get(index)
            .ok_or_else(|| format!("the {name} plugin has no device {index}"))?;
        self.driver.runs(device, &kind, &image.arch)
    }

    fn open_device(&self, index: usize, global: usize, total: usize) -> Result<Box<dyn Device>> {
        let name = self.driver.name();
        let label = format!("device {global} ({name} plugin)");
        let devices = self.devices().as_ref().map_err(|why| {
            OffloadError::new(ErrorKind::DeviceUnavailable, format!("{label}: {why}"))
        })?;
        let properties = devices.get(index).ok_or_else(|| {
            OffloadError::new(
                ErrorKind::InvalidArgument,
                format!("{label}: the {name} plugin has no device {index}"),
            )
        })?;
        let backend = self
            .driver
            .open(properties, index)
            .map_err(|e| e.context(format!("{label}: cannot open the device")))?;
        let device = GenericDevice::new(backend, name, index, global, total, Settings::get());
        diag::debug(
            name,
            format_args!(
                "{label}: {} ({}) opened, grid {:?}",
                device.core.info().name,
                device.core.info().arch,
                device.core.grid
            ),
        );
        Ok(Box::new(device))
    }
}
