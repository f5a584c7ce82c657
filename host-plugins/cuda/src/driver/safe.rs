//! Owning types over the driver: a retained primary context, streams, modules and device
//! allocations, each released on `Drop` with its context made current first.
//!
//! Every type holds a [`Context`] (an `Arc` of the primary context), so a context is released
//! only after the last module, stream and allocation made in it.

use super::error::DriverError;
use super::result as r;
use super::sys::*;
use core::ffi::c_void;
use std::ffi::CString;
use std::sync::Arc;

/// A device's retained primary context. Cheap to clone.
pub type Context = Arc<PrimaryContext>;

pub struct PrimaryContext {
    api: &'static Api,
    device: CUdevice,
    handle: CUcontext,
}

// SAFETY: the driver API is thread-safe and a context handle may be made current on any thread
// (cuCtxSetCurrent); this type only passes the handle to the driver.
unsafe impl Send for PrimaryContext {}
// SAFETY: as above; no method mutates the handle.
unsafe impl Sync for PrimaryContext {}

impl PrimaryContext {
    /// Retains `device`'s primary context, first asking for blocking synchronization (a host
    /// thread waiting for a kernel sleeps instead of spinning) when nobody activated it yet.
    pub fn retain(api: &'static Api, device: CUdevice) -> Result<Context, DriverError> {
        let (_flags, active) = r::primary_context_state(api, device)?;
        if !active {
            r::primary_context_set_flags(api, device, CU_CTX_SCHED_BLOCKING_SYNC)?;
        }
        let handle = r::primary_context_retain(api, device)?;
        Ok(Arc::new(Self {
            api,
            device,
            handle,
        }))
    }

    pub fn api(&self) -> &'static Api {
        self.api
    }

    /// Makes the context current on the calling thread (every entry point calls this first:
    /// the front may call from any host thread).
    pub fn make_current(&self) -> Result<(), DriverError> {
        // SAFETY: the handle is retained until `drop`.
        unsafe { r::context_set_current(self.api, self.handle) }
    }
}

impl Drop for PrimaryContext {
    fn drop(&mut self) {
        // SAFETY: retained once in `retain`; every user holds an `Arc` to us, so this is the
        // last use. A failure (driver already shut down at exit) leaves nothing to undo.
        if let Err(e) = unsafe { r::primary_context_release(self.api, self.device) } {
            rustomp_plugin::diag::debug(
                "cuda",
                format_args!(
                    "releasing the primary context of CUDA device {}: {e}",
                    self.device
                ),
            );
        }
    }
}

/// Reports a failed release: nothing can be done about it in `Drop`, but it is traced.
fn released(what: &str, result: Result<(), DriverError>) {
    if let Err(e) = result {
        rustomp_plugin::diag::debug("cuda", format_args!("releasing {what}: {e}"));
    }
}

/// A non-blocking stream of one context.
pub struct Stream {
    context: Context,
    handle: CUstream,
}

// SAFETY: streams may be used from any thread with their context current; the pool hands one
// stream to one user at a time.
unsafe impl Send for Stream {}

impl Stream {
    pub fn new(context: &Context) -> Result<Self, DriverError> {
        context.make_current()?;
        let handle = r::stream_create(context.api, CU_STREAM_NON_BLOCKING)?;
        Ok(Self {
            context: context.clone(),
            handle,
        })
    }

    pub fn handle(&self) -> CUstream {
        self.handle
    }

    /// Waits for everything queued on the stream.
    pub fn synchronize(&self) -> Result<(), DriverError> {
        // SAFETY: the stream lives until `drop`.
        unsafe { r::stream_synchronize(self.context.api, self.handle) }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let result = self.context.make_current().and_then(|()| {
            // SAFETY: created in `new`, destroyed once here.
            unsafe { r::stream_destroy(self.context.api, self.handle) }
        });
        released("a CUDA stream", result);
    }
}

/// A timing event of one context.
pub struct Event {
    context: Context,
    handle: CUevent,
}

// SAFETY: event handles may be used from any thread with their context current.
unsafe impl Send for Event {}

impl Event {
    /// `Ok(None)` on a driver without events.
    pub fn new(context: &Context) -> Result<Option<Self>, DriverError> {
        context.make_current()?;
        Ok(r::event_create(context.api)?.map(|handle| Self {
            context: context.clone(),
            handle,
        }))
    }

    /// Queues the event on `stream`.
    pub fn record(&self, stream: &Stream) -> Result<(), DriverError> {
        // SAFETY: both live, of this context.
        unsafe { r::event_record(self.context.api, self.handle, stream.handle()) }
    }

    pub fn synchronize(&self) -> Result<(), DriverError> {
        // SAFETY: live until `drop`.
        unsafe { r::event_synchronize(self.context.api, self.handle) }
    }

    /// Milliseconds from `earlier` to this event, both recorded and completed.
    pub fn since(&self, earlier: &Event) -> Result<f32, DriverError> {
        // SAFETY: both live; the caller synchronized them.
        unsafe { r::event_elapsed_ms(self.context.api, earlier.handle, self.handle) }
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        let result = self.context.make_current().and_then(|()| {
            // SAFETY: created in `new`, destroyed once here.
            unsafe { r::event_destroy(self.context.api, self.handle) }
        });
        released("a CUDA event", result);
    }
}

/// A loaded image.
pub struct Module {
    context: Context,
    handle: CUmodule,
}

// SAFETY: module handles may be used from any thread with their context current.
unsafe impl Send for Module {}
// SAFETY: lookups do not mutate the module.
unsafe impl Sync for Module {}

impl Module {
    /// Loads `image` (cubin, fatbinary or NUL-terminated PTX) into `context`.
    ///
    /// # Safety
    /// `image` is a complete image of one of those kinds.
    pub unsafe fn load(context: &Context, image: &[u8]) -> Result<Self, DriverError> {
        context.make_current()?;
        // SAFETY: guaranteed by the caller; the driver copies what it needs before returning.
        let handle = unsafe { r::module_load_data(context.api, image.as_ptr() as *const c_void) }?;
        Ok(Self {
            context: context.clone(),
            handle,
        })
    }

    /// A kernel by name.
    pub fn function(&self, name: &str) -> Result<CUfunction, DriverError> {
        let name = c_name(name);
        // SAFETY: the module lives until `drop`.
        unsafe { r::module_get_function(self.context.api, self.handle, &name) }
    }

    /// (address, size) of a global by name.
    pub fn global(&self, name: &str) -> Result<(CUdeviceptr, usize), DriverError> {
        let name = c_name(name);
        // SAFETY: the module lives until `drop`.
        unsafe { r::module_get_global(self.context.api, self.handle, &name) }
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        let result = self.context.make_current().and_then(|()| {
            // SAFETY: loaded in `load`, unloaded once here; the functions and globals looked up
            // in it are not used after the image that owns us is dropped.
            unsafe { r::module_unload(self.context.api, self.handle) }
        });
        released("a CUDA module", result);
    }
}

/// A symbol name as C string; a name with an interior NUL cannot exist in an image, so it
/// becomes one that is not found.
fn c_name(name: &str) -> CString {
    CString::new(name).unwrap_or_else(|_| CString::from(c"<name with NUL>"))
}
