//! One kernel launch on the device: the kernel-argument buffer (explicit arguments, then the
//! code object v5 implicit block), the AQL dispatch packet, and the wait for its completion
//! signal while host calls are served; also the wait of an asynchronous copy.

use crate::device::AmdgpuDevice;
use crate::hsa::result as r;
use crate::hsa::sys::*;
use crate::hsa::{check, failed, released};
use crate::module::Function;
use crate::queue::{grid_dimensions, kernel_arguments, workgroup_size, CompletionSignal};
use core::ffi::c_void;
use rustomp_plugin::generic::KernelLaunch;
use rustomp_plugin::{ErrorKind, OffloadError, Result};

/// Kernel arguments in kernarg memory, freed on drop.
struct Kernarg<'a> {
    device: &'a AmdgpuDevice,
    address: u64,
}

impl Drop for Kernarg<'_> {
    fn drop(&mut self) {
        released("kernel arguments", {
            // SAFETY: allocated in `alloc_kernarg`; the dispatch using it has completed.
            unsafe { r::amd_memory_pool_free(self.device.api, self.address as *mut c_void) }
        });
    }
}

impl AmdgpuDevice {
    /// [`Backend::launch`](rustomp_plugin::generic::Backend::launch): one kernel-dispatch
    /// packet, waited for.
    ///
    /// # Safety
    /// As the trait's: `launch.args` are the values the kernel takes; the memory they point to
    /// lives until this returns.
    pub(crate) unsafe fn run_kernel(
        &self,
        function: Function,
        launch: &KernelLaunch<'_>,
        while_running: Option<&mut dyn FnMut() -> bool>,
    ) -> Result<()> {
        let api = self.api;
        let arguments = kernel_arguments(launch, function.kernarg_size as usize);
        let kernarg = self.alloc_kernarg(&arguments)?;
        let signal = CompletionSignal::new(api).map_err(failed(ErrorKind::LaunchFailed))?;
        let private_size = if function.dynamic_stack {
            self.stack_size.min(u64::from(u32::MAX)) as u32
        } else {
            0
        }
        .max(function.private_size);
        let group = workgroup_size(launch);
        let mut packet = KernelDispatchPacket {
            header: packet::PACKET_TYPE_KERNEL_DISPATCH << packet::HEADER_TYPE
                | packet::FENCE_SCOPE_SYSTEM << packet::HEADER_SCACQUIRE_FENCE_SCOPE
                | packet::FENCE_SCOPE_SYSTEM << packet::HEADER_SCRELEASE_FENCE_SCOPE,
            setup: grid_dimensions(launch) << packet::KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS,
            workgroup_size_x: group[0],
            workgroup_size_y: group[1],
            workgroup_size_z: group[2],
            private_segment_size: private_size,
            group_segment_size: function
                .group_size
                .saturating_add(launch.dynamic_shared_bytes),
            kernel_object: function.kernel_object,
            kernarg_address: kernarg.address,
            completion_signal: signal.signal,
            ..Default::default()
        };
        (packet.grid_size_x, packet.grid_size_y, packet.grid_size_z) = (
            launch.blocks[0].saturating_mul(u32::from(group[0])),
            launch.blocks[1].saturating_mul(u32::from(group[1])),
            launch.blocks[2].saturating_mul(u32::from(group[2])),
        );
        let timed = self.times_dispatch();
        // SAFETY: the kernel object belongs to a loaded executable; the kernel arguments live in
        // `kernarg` until after the wait below.
        unsafe { self.queue.dispatch(packet) };
        self.wait(signal.signal, while_running).map_err(|why| {
            OffloadError::new(
                ErrorKind::LaunchFailed,
                format!("failure while running: {why}"),
            )
        })?;
        if timed {
            self.dispatch_timed(signal.signal);
        }
        Ok(())
    }

    /// Waits for `signal` to drop below 1, calling `while_running` meanwhile; a queue error
    /// ends the wait.
    pub(crate) fn wait(
        &self,
        signal: Signal,
        mut while_running: Option<&mut dyn FnMut() -> bool>,
    ) -> std::result::Result<(), String> {
        let api = self.api;
        // Sleep at most 100 microseconds between checks when serving host calls, else 10 ms.
        let ticks_per_us = (self.props.timestamp_frequency / 1_000_000).max(1);
        let hint = ticks_per_us * if while_running.is_some() { 100 } else { 10_000 };
        loop {
            let served = while_running.as_mut().is_some_and(|serve| serve());
            // SAFETY: a live signal of this runtime.
            if unsafe { r::signal_load_scacquire(api, signal) } < 1 {
                return Ok(());
            }
            let error = self.queue.error();
            if error != STATUS_SUCCESS {
                let text = check(api, "the GPU queue", error)
                    .err()
                    .map_or_else(String::new, |e| e.to_string());
                return Err(format!(
                    "{text}; the queue of {} is unusable",
                    self.info.name
                ));
            }
            if !served {
                // SAFETY: as above; returns on the condition or after about `hint` ticks. The
                // value it saw is not needed: the loop loads the signal again.
                unsafe {
                    r::signal_wait_scacquire(
                        api,
                        signal,
                        signal_condition::LT,
                        1,
                        hint,
                        wait_state::BLOCKED,
                    )
                };
            }
        }
    }

    fn alloc_kernarg(&self, arguments: &[u8]) -> Result<Kernarg<'_>> {
        let address = self
            .pool_allocate(self.props.kernarg_pool, arguments.len().max(8), true)
            .map_err(|e| e.context("allocating kernel arguments"))?;
        let kernarg = Kernarg {
            device: self,
            address: address as u64,
        };
        // SAFETY: fresh host-visible memory of at least `arguments.len()` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(arguments.as_ptr(), address as *mut u8, arguments.len())
        };
        Ok(kernarg)
    }
}
