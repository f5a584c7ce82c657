//! Running kernels: the device's AQL queue ([`AqlQueue`]), completion signals and waiting on
//! them, kernel-argument buffers with the code object v5 implicit arguments, and the dispatch of
//! one kernel-dispatch packet per launch.

use crate::agent::AgentProps;
use crate::hsa::result as r;
use crate::hsa::sys::*;
use crate::hsa::{failed, released, HsaResult};
use core::ffi::c_void;
use rustomp_plugin::generic::KernelLaunch;
use rustomp_plugin::{ErrorKind, OffloadError, Result};
use std::sync::atomic::{AtomicU32, Ordering};

/// Packets per queue (`LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE`, as LLVM).
const DEFAULT_QUEUE_SIZE: u32 = 512;
/// Offsets in the code object v5 implicit-argument block (256 bytes after the explicit
/// arguments) of the fields the host fills (AMDGPUUsage: `hidden_block_count_*`,
/// `hidden_group_size_*`, `hidden_grid_dims`, `hidden_dynamic_lds_size`); the rest stays zero,
/// as LLVM leaves it.
pub mod implicit {
    pub const BLOCK_COUNT: usize = 0;
    pub const GROUP_SIZE: usize = 12;
    pub const GRID_DIMS: usize = 64;
    pub const DYNAMIC_LDS_SIZE: usize = 120;
}

/// The queue-error callback: records the first error of the device's queue (a kernel fault),
/// which ends every wait on the queue.
unsafe extern "C" fn on_queue_error(status: Status, _queue: *mut Queue, data: *mut c_void) {
    // SAFETY: `data` is the queue's `error`, which outlives the runtime's queue.
    let slot = unsafe { &*(data as *const AtomicU32) };
    // A later error leaves the first one in place.
    let _ = slot.compare_exchange(STATUS_SUCCESS, status, Ordering::AcqRel, Ordering::Relaxed);
}

/// A device's user-mode AQL queue, destroyed on drop, and the first error the runtime reported
/// for it.
pub struct AqlQueue {
    api: &'static Api,
    queue: *mut Queue,
    /// Written by `on_queue_error`; boxed so its address stays put.
    error: Box<AtomicU32>,
}

// SAFETY: the queue is used only through the runtime's thread-safe calls and atomic packet
// writes (a MULTI queue takes packets from any thread); the error slot is atomic.
unsafe impl Send for AqlQueue {}
// SAFETY: as above.
unsafe impl Sync for AqlQueue {}

impl Drop for AqlQueue {
    fn drop(&mut self) {
        released("an HSA queue", {
            // SAFETY: created in `create`, destroyed once; every dispatch waited for its packet.
            unsafe { r::queue_destroy(self.api, self.queue) }
        });
    }
}

impl AqlQueue {
    /// A queue on the agent of `props`, sized by `LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE` within the
    /// agent's limit.
    pub fn create(api: &'static Api, props: &AgentProps) -> Result<Self> {
        let error = Box::new(AtomicU32::new(STATUS_SUCCESS));
        let size = rustomp_plugin::diag::env_u64("LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE")
            .map_or(DEFAULT_QUEUE_SIZE, |v| {
                v.clamp(2, u64::from(u32::MAX)) as u32
            });
        // Queue sizes are powers of two within the agent's limit.
        let size = size.next_power_of_two().min(props.queue_max_size.max(2));
        // SAFETY: a GPU agent of this runtime; the callback data outlives the queue (it is
        // dropped after the queue is destroyed, see `Drop`).
        let queue = unsafe {
            r::queue_create(
                api,
                props.agent,
                size,
                queue_type::MULTI,
                Some(on_queue_error),
                &*error as *const AtomicU32 as *mut c_void,
            )
        }
        .map_err(failed(ErrorKind::DeviceUnavailable))?;
        if queue.is_null() {
            return Err(OffloadError::new(
                ErrorKind::DeviceUnavailable,
                "hsa_queue_create returned no queue",
            ));
        }
        Ok(Self { api, queue, error })
    }

    /// Has the packet processor stamp dispatches' start and end (OMPT device tracing).
    pub(crate) fn enable_profiling(&self) -> Result<()> {
        // SAFETY: the queue lives until `drop`.
        unsafe { r::amd_profiling_set_profiler_enabled(self.api, self.queue) }
            .map_err(failed(ErrorKind::DeviceUnavailable))
    }

    /// The first error the runtime reported for the queue, [`STATUS_SUCCESS`] while none.
    pub(crate) fn error(&self) -> Status {
        self.error.load(Ordering::Acquire)
    }

    /// Writes a kernel-dispatch packet to the queue, rings the doorbell; returns when the
    /// packet processor has it.
    ///
    /// # Safety
    /// The packet's kernel object and kernel-argument address are live until it completes.
    pub(crate) unsafe fn dispatch(&self, packet: KernelDispatchPacket) {
        let api = self.api;
        let queue = self.queue;
        // SAFETY: the runtime's queue, alive while `self` is; its fields are read-only to us.
        let (base, size, doorbell) = unsafe {
            (
                (*queue).base_address as *mut KernelDispatchPacket,
                u64::from((*queue).size),
                (*queue).doorbell_signal,
            )
        };
        // SAFETY: a valid queue; the index reserves one slot for this thread.
        let index = unsafe { r::queue_add_write_index_relaxed(api, queue, 1) };
        // SAFETY: as above.
        while index.wrapping_sub(unsafe { r::queue_load_read_index_scacquire(api, queue) }) >= size
        {
            std::thread::yield_now();
        }
        // SAFETY: `index % size` is a slot of the queue's ring that this thread reserved and
        // the packet processor has consumed; the body is written before the header publishes it.
        unsafe {
            let slot = base.add((index % size) as usize);
            let body = (&packet as *const KernelDispatchPacket as *const u8).add(4);
            std::ptr::copy_nonoverlapping(
                body,
                (slot as *mut u8).add(4),
                std::mem::size_of::<KernelDispatchPacket>() - 4,
            );
            let header_and_setup = u32::from(packet.header) | u32::from(packet.setup) << 16;
            AtomicU32::from_ptr(slot as *mut u32).store(header_and_setup, Ordering::Release);
            r::signal_store_relaxed(api, doorbell, index as i64);
        }
    }
}

/// A completion signal, destroyed on drop.
pub(crate) struct CompletionSignal<'a> {
    api: &'a Api,
    pub(crate) signal: Signal,
}

impl<'a> CompletionSignal<'a> {
    pub(crate) fn new(api: &'a Api) -> HsaResult<Self> {
        let signal = r::signal_create(api, 1)?;
        Ok(Self { api, signal })
    }
}

impl Drop for CompletionSignal<'_> {
    fn drop(&mut self) {
        released("a completion signal", {
            // SAFETY: created in `new`, destroyed once, after the wait on it ended.
            unsafe { r::signal_destroy(self.api, self.signal) }
        });
    }
}

/// Fills the kernel-argument buffer: the explicit arguments, then the implicit block (as
/// much of it as the kernel's segment holds).
pub(crate) fn kernel_arguments(launch: &KernelLaunch<'_>, segment_bytes: usize) -> Vec<u8> {
    let explicit = launch.args.len() * 8;
    let mut bytes = vec![0u8; segment_bytes.max(explicit)];
    for (i, value) in launch.args.iter().enumerate() {
        bytes[i * 8..i * 8 + 8].copy_from_slice(&value.to_le_bytes());
    }
    let base = explicit.next_multiple_of(8);
    let mut put = |offset: usize, value: &[u8]| {
        if let Some(slot) = bytes.get_mut(base + offset..base + offset + value.len()) {
            slot.copy_from_slice(value);
        }
    };
    for (d, (blocks, group)) in launch.blocks.iter().zip(workgroup_size(launch)).enumerate() {
        put(implicit::BLOCK_COUNT + 4 * d, &blocks.to_le_bytes());
        put(implicit::GROUP_SIZE + 2 * d, &group.to_le_bytes());
    }
    put(implicit::GRID_DIMS, &grid_dimensions(launch).to_le_bytes());
    put(
        implicit::DYNAMIC_LDS_SIZE,
        &launch.dynamic_shared_bytes.to_le_bytes(),
    );
    bytes
}

/// Threads per workgroup in x, y, z as AQL and the implicit arguments hold them (16 bits).
pub(crate) fn workgroup_size(launch: &KernelLaunch<'_>) -> [u16; 3] {
    launch.threads.map(|t| t.min(u32::from(u16::MAX)) as u16)
}

/// How many dimensions a launch uses (the packet's setup and `hidden_grid_dims`, as LLVM).
pub(crate) fn grid_dimensions(launch: &KernelLaunch<'_>) -> u16 {
    if launch.blocks[2] * launch.threads[2] > 1 {
        3
    } else if launch.blocks[1] * launch.threads[1] > 1 {
        2
    } else {
        1
    }
}
