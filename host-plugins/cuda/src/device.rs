//! One GPU as a [`Backend`] of the generic layer: its primary context, a pool of streams,
//! memory of each kind, copies, modules and launches. Nothing here knows about OpenMP.
//!
//! Every operation makes the context current on the calling thread (the front calls from any
//! host thread, e.g. libomp's hidden helpers for `nowait`), takes a stream from the pool, queues
//! its work and waits for it before returning: the backend contract is synchronous. Streams are
//! non-blocking and per operation, so host threads working on one device overlap.

use crate::compat::ComputeCapability;
use crate::driver::error::DriverError;
use crate::driver::result::{self as r, LaunchDims};
use crate::driver::safe::{Context, Event, Module, PrimaryContext, Stream};
use crate::driver::sys::{
    device_attribute as attr, function_attribute, limit, Api, CUdevice, CUdeviceptr, CUfunction,
    CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_NOT_FOUND,
};
use core::ffi::c_void;
use rustomp_plugin::diag::Settings;
use rustomp_plugin::generic::{
    Backend, DeviceInfo, Direction, GlobalSymbol, Initializers, KernelLaunch, KernelParameters,
    StagedPiece,
};
use rustomp_plugin::geometry::{GridValues, NVPTX_GRID_VALUES};
use rustomp_plugin::image::ImageKind;
use rustomp_plugin::{AllocKind, ErrorKind, OffloadError, Result};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

/// Facts about one GPU, read when the plugin initializes (before any context exists).
#[derive(Debug, Clone)]
pub struct DeviceProps {
    pub handle: CUdevice,
    pub name: String,
    pub capability: ComputeCapability,
    pub multiprocessors: u32,
    pub max_threads_per_multiprocessor: u32,
    pub warp_size: u32,
    pub max_block_dim_x: u32,
    pub max_grid_dim_x: u32,
    pub total_memory: usize,
    /// `CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS`: kernels can use pageable host memory
    /// (HMM or ATS), what `requires unified_shared_memory` needs.
    pub pageable_memory_access: bool,
}

impl DeviceProps {
    pub fn query(api: &Api, ordinal: usize) -> std::result::Result<Self, DriverError> {
        let handle = r::device_get(api, ordinal)?;
        let get = |a| r::device_attribute(api, handle, a).map(|v| v.max(0) as u32);
        Ok(Self {
            handle,
            name: r::device_name(api, handle)?,
            capability: ComputeCapability {
                major: get(attr::COMPUTE_CAPABILITY_MAJOR)?,
                minor: get(attr::COMPUTE_CAPABILITY_MINOR)?,
            },
            multiprocessors: get(attr::MULTIPROCESSOR_COUNT)?,
            max_threads_per_multiprocessor: get(attr::MAX_THREADS_PER_MULTIPROCESSOR)?,
            warp_size: get(attr::WARP_SIZE)?,
            max_block_dim_x: get(attr::MAX_BLOCK_DIM_X)?,
            max_grid_dim_x: get(attr::MAX_GRID_DIM_X)?,
            total_memory: r::device_total_memory(api, handle)?,
            pageable_memory_access: get(attr::PAGEABLE_MEMORY_ACCESS)? != 0,
        })
    }

    /// What the generic layer needs of the GPU.
    pub fn info(&self) -> DeviceInfo {
        let warp_size = self.warp_size.max(1);
        DeviceInfo {
            name: self.name.clone(),
            arch: self.capability.to_string(),
            grid_values: GridValues {
                warp_size,
                ..NVPTX_GRID_VALUES
            },
            max_block_threads: self.max_block_dim_x,
            max_grid_teams: self.max_grid_dim_x,
            hardware_parallelism: u64::from(self.multiprocessors)
                * u64::from(self.max_threads_per_multiprocessor / warp_size),
            // Device time is read from the nanosecond %globaltimer, as LLVM's NVPTX plugin states.
            clock_frequency: 1_000_000_000,
            total_memory: self.total_memory,
        }
    }
}

/// A driver failure as a plugin error (see [`DriverError::error`]).
fn failed(fallback: ErrorKind) -> impl Fn(DriverError) -> OffloadError + Copy {
    move |e| e.error(fallback)
}

/// A kernel of a loaded module.
#[derive(Debug, Clone, Copy)]
pub struct Function(CUfunction);

// SAFETY: a function handle is only passed to the driver, which is thread-safe.
unsafe impl Send for Function {}
// SAFETY: as above.
unsafe impl Sync for Function {}

pub struct CudaDevice {
    context: Context,
    props: DeviceProps,
    info: DeviceInfo,
    streams: Mutex<Vec<Stream>>,
    /// Dynamic shared memory each function has been opted in to (by function handle); the
    /// limit only grows, under this lock, so no launch sees it lowered under its feet.
    dynamic_shared_limits: Mutex<HashMap<usize, u32>>,
    /// Where event times meet the host's clock, while a tool traces (see [`EventClock`]).
    event_clock: Mutex<Option<EventClock>>,
}

/// An event the device stamped and the host's monotonic time when it did (the midpoint of a
/// record and its synchronization on an idle stream): a device event's time is this plus the
/// milliseconds between the two events. Renewed every second, so the driver's float
/// milliseconds keep sub-microsecond resolution.
struct EventClock {
    anchor: Event,
    host_ns: u64,
    taken: std::time::Instant,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl CudaDevice {
    pub fn open(api: &'static Api, props: &DeviceProps, settings: &Settings) -> Result<Self> {
        let context = PrimaryContext::retain(api, props.handle)
            .map_err(failed(ErrorKind::DeviceUnavailable))?;
        context
            .make_current()
            .map_err(failed(ErrorKind::DeviceUnavailable))?;
        for (variable, which, value) in [
            (
                "LIBOMPTARGET_STACK_SIZE",
                limit::STACK_SIZE,
                settings.stack_size,
            ),
            (
                "LIBOMPTARGET_HEAP_SIZE",
                limit::MALLOC_HEAP_SIZE,
                settings.heap_size,
            ),
        ] {
            if let Some(bytes) = value {
                r::context_set_limit(api, which, bytes as usize).map_err(|e| {
                    failed(ErrorKind::DeviceUnavailable)(e)
                        .context(format!("cannot apply {variable}={bytes}"))
                })?;
            }
        }
        Ok(Self {
            context,
            info: props.info(),
            props: props.clone(),
            streams: Mutex::new(Vec::new()),
            dynamic_shared_limits: Mutex::new(HashMap::new()),
            event_clock: Mutex::new(None),
        })
    }

    fn api(&self) -> &'static Api {
        self.context.api()
    }

    /// Runs `work` on a stream of the pool and waits for it (also when `work` failed halfway,
    /// so no queued copy still refers to the caller's memory when this returns).
    fn with_stream<T>(
        &self,
        work: impl FnOnce(&Stream) -> std::result::Result<T, DriverError>,
    ) -> std::result::Result<T, DriverError> {
        self.context.make_current()?;
        let stream = self.pooled_stream()?;
        let result = work(&stream);
        let synchronized = stream.synchronize();
        locked(&self.streams).push(stream);
        let value = result?;
        synchronized?;
        Ok(value)
    }

    /// [`Self::with_stream`], and while a tool traces (`op_times::wanted`), events before and
    /// after the work: their device times go to `op_times` for the trace record. Without
    /// events (an old driver, a failure to make them) the work runs untimed.
    fn with_stream_timed<T>(
        &self,
        work: impl FnOnce(&Stream) -> std::result::Result<T, DriverError>,
    ) -> std::result::Result<T, DriverError> {
        if !rustomp_plugin::op_times::wanted() {
            return self.with_stream(work);
        }
        let events = (Event::new(&self.context), Event::new(&self.context));
        let (Ok(Some(start)), Ok(Some(end))) = events else {
            return self.with_stream(work);
        };
        let value = self.with_stream(|stream| {
            start.record(stream)?;
            let value = work(stream)?;
            end.record(stream)?;
            Ok(value)
        })?;
        if let (Some(from), Some(to)) = (self.event_ns(&start), self.event_ns(&end)) {
            rustomp_plugin::op_times::record(from, to);
        }
        Ok(value)
    }

    /// A completed event's time on the host's monotonic clock (the device's `clock_ns`).
    fn event_ns(&self, event: &Event) -> Option<u64> {
        let mut clock = locked(&self.event_clock);
        let stale = clock
            .as_ref()
            .is_none_or(|c| c.taken.elapsed() > std::time::Duration::from_secs(1));
        if stale {
            *clock = self.event_clock_now();
        }
        let c = clock.as_ref()?;
        let ms = event.since(&c.anchor).ok()?;
        Some((c.host_ns as i64 + (f64::from(ms) * 1e6) as i64).max(0) as u64)
    }

    fn event_clock_now(&self) -> Option<EventClock> {
        let anchor = Event::new(&self.context).ok()??;
        let stream = self.pooled_stream().ok()?;
        let before = rustomp_plugin::monotonic_ns();
        let stamped = anchor.record(&stream).and_then(|()| anchor.synchronize());
        let after = rustomp_plugin::monotonic_ns();
        locked(&self.streams).push(stream);
        stamped.ok()?;
        Some(EventClock {
            anchor,
            host_ns: before + (after - before) / 2,
            taken: std::time::Instant::now(),
        })
    }

    /// A stream from the pool (made if it is empty); the caller gives it back idle.
    fn pooled_stream(&self) -> std::result::Result<Stream, DriverError> {
        let pooled = locked(&self.streams).pop();
        match pooled {
            Some(s) => Ok(s),
            None => Stream::new(&self.context),
        }
    }

    /// Queues one piece's copy on `stream`.
    ///
    /// # Safety
    /// As [`Backend::copy_pieces`] for the piece, until `stream` is synchronized.
    unsafe fn queue_piece(
        &self,
        stream: &Stream,
        direction: Direction,
        piece: &StagedPiece,
    ) -> std::result::Result<(), DriverError> {
        let (api, s) = (self.api(), stream.handle());
        // SAFETY: the caller's contract.
        unsafe {
            match direction {
                Direction::ToDevice => r::memcpy_htod_async(
                    api,
                    piece.device,
                    piece.pinned as *const c_void,
                    piece.bytes,
                    s,
                ),
                Direction::FromDevice => r::memcpy_dtoh_async(
                    api,
                    piece.pinned as *mut c_void,
                    piece.device,
                    piece.bytes,
                    s,
                ),
            }
        }
    }

    fn opt_in_dynamic_shared(&self, function: Function, bytes: u32) -> Result<()> {
        // SAFETY: the function belongs to a module of this context, alive while launches are.
        unsafe {
            r::function_set_attribute(
                self.api(),
                function.0,
                function_attribute::MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes.min(i32::MAX as u32) as i32,
            )
        }
        .map_err(failed(ErrorKind::LaunchFailed))
        .map_err(|e| e.context(format!("cannot get {bytes} bytes of dynamic shared memory")))
    }
}

impl Backend for CudaDevice {
    type Module = Module;
    type Function = Function;
    const INITIALIZERS: Initializers = Initializers::ObjectArray {
        init_kernel: "nvptx$device$init",
        fini_kernel: "nvptx$device$fini",
    };

    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn alloc(&self, bytes: usize, kind: AllocKind) -> Result<u64> {
        self.context
            .make_current()
            .map_err(failed(ErrorKind::OutOfMemory))?;
        let api = self.api();
        match kind {
            AllocKind::Device => r::mem_alloc(api, bytes),
            AllocKind::Host => r::mem_alloc_host(api, bytes).map(|p| p as u64),
            AllocKind::Shared => r::mem_alloc_managed(api, bytes),
        }
        .map_err(failed(ErrorKind::OutOfMemory))
    }

    unsafe fn free(&self, address: u64, kind: AllocKind) -> Result<()> {
        self.context
            .make_current()
            .map_err(failed(ErrorKind::InvalidArgument))?;
        // SAFETY: the caller's contract: `address` came from `alloc` with this kind, once.
        unsafe {
            match kind {
                AllocKind::Device | AllocKind::Shared => {
                    r::mem_free(self.api(), address as CUdeviceptr)
                }
                AllocKind::Host => r::mem_free_host(self.api(), address as *mut c_void),
            }
        }
        .map_err(failed(ErrorKind::InvalidArgument))
    }

    unsafe fn copy_to_device(&self, device: u64, host: *const u8, bytes: usize) -> Result<()> {
        self.with_stream_timed(|s| {
            // SAFETY: the caller's contract; the copy has finished when `with_stream` returns.
            unsafe {
                r::memcpy_htod_async(self.api(), device, host as *const c_void, bytes, s.handle())
            }
        })
        .map_err(failed(ErrorKind::TransferFailed))
    }

    unsafe fn copy_from_device(&self, host: *mut u8, device: u64, bytes: usize) -> Result<()> {
        self.with_stream_timed(|s| {
            // SAFETY: the caller's contract; the copy has finished when `with_stream` returns.
            unsafe {
                r::memcpy_dtoh_async(self.api(), host as *mut c_void, device, bytes, s.handle())
            }
        })
        .map_err(failed(ErrorKind::TransferFailed))
    }

    unsafe fn copy_within_device(&self, dst: u64, src: u64, bytes: usize) -> Result<()> {
        self.with_stream_timed(|s| {
            // SAFETY: the caller's contract: both ranges are this device's memory.
            unsafe { r::memcpy_dtod_async(self.api(), dst, src, bytes, s.handle()) }
        })
        .map_err(failed(ErrorKind::TransferFailed))
    }

    fn load_module(&self, bytes: &[u8], kind: &ImageKind) -> Result<Module> {
        // The driver reads PTX up to its NUL.
        let bytes: Cow<'_, [u8]> = match kind {
            ImageKind::Ptx { .. } if bytes.last() != Some(&0) => {
                let mut owned = bytes.to_vec();
                owned.push(0);
                Cow::Owned(owned)
            }
            _ => Cow::Borrowed(bytes),
        };
        // SAFETY: the generic layer checked the kind and that the headers' extent lies within
        // the bytes; PTX is NUL-terminated above.
        unsafe { Module::load(&self.context, &bytes) }.map_err(failed(ErrorKind::InvalidImage))
    }

    fn global(&self, module: &Module, name: &str) -> Result<Option<GlobalSymbol>> {
        self.context
            .make_current()
            .map_err(failed(ErrorKind::DeviceUnavailable))?;
        match module.global(name) {
            Ok((address, size)) => Ok(Some(GlobalSymbol { address, size })),
            Err(e) if e.code == CUDA_ERROR_NOT_FOUND => Ok(None),
            // The driver's answer for the name of a function: never asked by the generic layer,
            // which looks globals and kernels up by the kind of their offload entry.
            Err(e) if e.code == CUDA_ERROR_INVALID_VALUE => {
                Err(failed(ErrorKind::SymbolNotFound)(e).context(format!(
                    "{name} is not a global of the module (a function?)"
                )))
            }
            Err(e) => Err(failed(ErrorKind::SymbolNotFound)(e)),
        }
    }

    fn function(&self, module: &Module, name: &str) -> Result<Option<Function>> {
        self.context
            .make_current()
            .map_err(failed(ErrorKind::DeviceUnavailable))?;
        match module.function(name) {
            Ok(f) => Ok(Some(Function(f))),
            Err(e) if e.code == CUDA_ERROR_NOT_FOUND => Ok(None),
            Err(e) => Err(failed(ErrorKind::SymbolNotFound)(e)),
        }
    }

    fn function_parameters(&self, function: Function) -> Result<Option<KernelParameters>> {
        // SAFETY: the function belongs to a module of this context, alive while it is asked.
        let found = unsafe { r::function_parameters(self.api(), function.0) };
        match found {
            Ok(found) => Ok(found.map(|(count, bytes)| KernelParameters { count, bytes })),
            // A driver may lack the query or refuse it for its own reasons (not supported
            // here, a build that answers no): the image's own parameter records still say.
            Err(e) => {
                rustomp_plugin::diag::debug(
                    "cuda",
                    format_args!("{e}; the kernel's parameters come from the image"),
                );
                Ok(None)
            }
        }
    }

    fn function_max_threads(&self, function: Function) -> Result<u32> {
        // SAFETY: the function belongs to a module of this context, alive while it is asked.
        let threads = unsafe {
            r::function_attribute(
                self.api(),
                function.0,
                function_attribute::MAX_THREADS_PER_BLOCK,
            )
        };
        threads
            .map(|t| t.max(1) as u32)
            .map_err(failed(ErrorKind::LaunchFailed))
    }

    fn reserve_dynamic_shared(&self, function: Function, bytes: u32) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        let mut limits = locked(&self.dynamic_shared_limits);
        let known = limits.get(&(function.0 as usize)).copied();
        let limit = match known {
            Some(limit) => limit,
            // Not asked yet: the limit without opting in is 48 KiB less the function's static
            // shared memory. Not known: opt in below, which is harmless when already allowed.
            // SAFETY: the function belongs to a module of this context.
            None => unsafe {
                r::function_attribute(
                    self.api(),
                    function.0,
                    function_attribute::MAX_DYNAMIC_SHARED_SIZE_BYTES,
                )
            }
            .map_or(0, |v| v.max(0) as u32),
        };
        if bytes > limit {
            self.opt_in_dynamic_shared(function, bytes)?;
        }
        limits.insert(function.0 as usize, limit.max(bytes));
        Ok(())
    }

    unsafe fn launch(
        &self,
        function: Function,
        launch: &KernelLaunch<'_>,
        while_running: Option<&mut dyn FnMut() -> bool>,
    ) -> Result<()> {
        // OpenMP kernels take 64-bit parameters only (pointers and literals), back to back.
        let mut parameters: Vec<u8> = launch.args.iter().flat_map(|v| v.to_le_bytes()).collect();
        let dims = LaunchDims {
            blocks: launch.blocks,
            threads: launch.threads,
            dynamic_shared_bytes: launch.dynamic_shared_bytes,
        };
        self.with_stream_timed(|stream| {
            // SAFETY: the function and stream belong to this device's current context;
            // `parameters` holds the values the kernel takes (the caller's contract, checked
            // against the kernel's parameter layout by the generic layer).
            unsafe {
                r::launch_kernel(
                    self.api(),
                    function.0,
                    dims,
                    stream.handle(),
                    &mut parameters,
                )
            }?;
            if let Some(serve) = while_running {
                // Poll the port and the stream; a request is served at once, an idle wait
                // backs off to short sleeps so a long kernel does not cost a host core. A
                // kernel that faults ends the wait with its error from cuStreamQuery.
                let mut idle = rustomp_plugin::host_call::Backoff::default();
                loop {
                    let served = serve();
                    // SAFETY: the pooled stream of this context.
                    if unsafe { r::stream_query(self.api(), stream.handle()) }? {
                        break;
                    }
                    idle.wait(served);
                }
            }
            Ok(())
        })
        .map_err(|e| {
            let what = if e.call == "cuLaunchKernel" {
                "cannot launch"
            } else {
                "failure while running"
            };
            failed(ErrorKind::LaunchFailed)(e).context(what)
        })
    }

    /// The driver copies pageable memory through a small bounce buffer of its own at a
    /// fraction of the link's speed (6-7 GB/s on an H200): large ones go through the generic
    /// layer's pinned ring instead.
    fn stages_pageable_copies(&self) -> bool {
        true
    }

    /// Two streams take turns: piece `i` is queued on stream `i % 2` once piece `i - 2`, the
    /// last on that stream, has finished, so the copy engine always has the next piece.
    unsafe fn copy_pieces(
        &self,
        direction: Direction,
        next: &mut dyn FnMut() -> Option<StagedPiece>,
        finished: &mut dyn FnMut(StagedPiece),
    ) -> Result<()> {
        let fail = failed(ErrorKind::TransferFailed);
        self.context.make_current().map_err(fail)?;
        let streams = [
            self.pooled_stream().map_err(fail)?,
            self.pooled_stream().map_err(fail)?,
        ];
        let mut in_flight = std::collections::VecDeque::with_capacity(2);
        let mut pipeline = || -> std::result::Result<(), DriverError> {
            let mut queued = 0usize;
            while let Some(piece) = next() {
                if in_flight.len() == 2 {
                    let (done, stream): (StagedPiece, usize) =
                        in_flight.pop_front().expect("two in flight");
                    streams[stream].synchronize()?;
                    finished(done);
                }
                let stream = queued % 2;
                // SAFETY: the caller's contract for the piece; its buffer is handed back only
                // after the stream was synchronized (here, or below on every way out).
                unsafe { self.queue_piece(&streams[stream], direction, &piece) }?;
                in_flight.push_back((piece, stream));
                queued += 1;
            }
            while let Some((done, stream)) = in_flight.pop_front() {
                streams[stream].synchronize()?;
                finished(done);
            }
            Ok(())
        };
        let result = pipeline();
        // On an error, copies still queued must end before the caller reuses their buffers.
        let drained: Vec<_> = streams.iter().map(Stream::synchronize).collect();
        locked(&self.streams).extend(streams);
        result.map_err(fail)?;
        drained
            .into_iter()
            .collect::<std::result::Result<(), _>>()
            .map_err(fail)
    }

    /// Asks the driver about both ends of the range: page-locked host memory (or managed
    /// memory) of one allocation, which the driver copies at full speed itself.
    fn host_memory_pinned(&self, host: u64, bytes: usize) -> bool {
        if self.context.make_current().is_err() || bytes == 0 {
            return false;
        }
        let kind = |address| r::pointer_kind(self.api(), address).ok().flatten();
        match (kind(host), kind(host + bytes as u64 - 1)) {
            (Some((first_type, first_id)), Some(last)) => {
                first_type != 0 && first_id != 0 && last == (first_type, first_id)
            }
            _ => false,
        }
    }

    unsafe fn lock_host(&self, host: u64, bytes: usize) -> Result<u64> {
        let fail = failed(ErrorKind::InvalidArgument);
        self.context.make_current().map_err(fail)?;
        // SAFETY: the caller's contract (live memory, unlocked before it is freed).
        let registered = unsafe { r::mem_host_register(self.api(), host as *mut c_void, bytes) }
            .map_err(fail)?;
        if !registered {
            rustomp_plugin::diag::debug(
                "cuda",
                format_args!(
                    "the driver has no cuMemHostRegister: {bytes} bytes at {host:#x} stay pageable"
                ),
            );
        }
        // Registered memory keeps its address on the device (unified addressing).
        Ok(host)
    }

    unsafe fn unlock_host(&self, host: u64) -> Result<()> {
        let fail = failed(ErrorKind::InvalidArgument);
        self.context.make_current().map_err(fail)?;
        // SAFETY: the caller's contract: locked by `lock_host`, unused now.
        unsafe { r::mem_host_unregister(self.api(), host as *mut c_void) }.map_err(fail)
    }

    fn unified_memory(&self) -> std::result::Result<(), String> {
        if self.props.pageable_memory_access {
            Ok(())
        } else {
            Err("the GPU cannot access pageable host memory (CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS is 0: no HMM or ATS on this system)".into())
        }
    }

    fn describe(&self) -> String {
        let version = r::driver_version(self.api()).map_or_else(
            |e| e.to_string(),
            |v| format!("{}.{}", v / 1000, (v % 1000) / 10),
        );
        format!(
            "{} multiprocessors, {} MiB, CUDA driver {version}",
            self.props.multiprocessors,
            self.props.total_memory >> 20
        )
    }
}
