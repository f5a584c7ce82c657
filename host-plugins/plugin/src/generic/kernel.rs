//! A kernel of a loaded image as the generic layer keeps it: its backend function and what its
//! first launch learned about it (its environment, geometry limits, parameters).

use super::{Backend, KernelParameters};
use crate::geometry::KernelShape;
use crate::OffloadError;
use rustomp_abi::ConfigurationEnvironment;
use std::sync::OnceLock;

/// A kernel of an image, looked up by the front through `LoadedImage::kernel`.
pub(super) struct Kernel<B: Backend> {
    pub(super) name: String,
    pub(super) function: B::Function,
    /// Read at the first launch.
    pub(super) facts: OnceLock<std::result::Result<KernelFacts, OffloadError>>,
}

#[derive(Clone, Copy)]
pub(super) struct KernelFacts {
    pub(super) config: ConfigurationEnvironment,
    pub(super) shape: KernelShape,
    pub(super) reduction_bytes: usize,
    /// What the kernel declares (driver first, else the image), `None` when neither says.
    pub(super) parameters: Option<KernelParameters>,
}
