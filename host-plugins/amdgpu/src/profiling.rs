//! The device's own times of kernels and copies for OMPT device tracing
//! (`rustomp_plugin::op_times`): while a tool traces, the queue's packet processor stamps each
//! dispatch (`hsa_amd_profiling_set_profiler_enabled`) and the runtime each async copy
//! (`hsa_amd_profiling_async_copy_enable`); after the work completed its signal gives the start
//! and end, in agent ticks for a dispatch (converted to the system domain) and system ticks for
//! a copy. System ticks meet the host's monotonic clock at one pairing of
//! `HSA_SYSTEM_INFO_TIMESTAMP` with it.

use crate::device::AmdgpuDevice;
use crate::hsa::result as r;
use crate::hsa::sys::{system_info, Signal};
use rustomp_plugin::op_times;

impl AmdgpuDevice {
    /// Whether this dispatch is timed: a tool traces and the queue stamps dispatches.
    pub(crate) fn times_dispatch(&self) -> bool {
        op_times::wanted()
            && *self
                .profiling
                .dispatches
                .get_or_init(|| self.queue.enable_profiling().is_ok())
    }

    /// Whether this copy is timed: a tool traces and the runtime stamps copies.
    pub(crate) fn times_copy(&self) -> bool {
        op_times::wanted()
            && *self
                .profiling
                .copies
                .get_or_init(|| r::amd_profiling_async_copy_enable(self.api).is_ok())
    }

    /// Leaves a completed dispatch's device times in `op_times`.
    pub(crate) fn dispatch_timed(&self, signal: Signal) {
        let agent = self.props.agent;
        let times = r::amd_profiling_dispatch_time(self.api, agent, signal).and_then(|t| {
            Ok((
                r::amd_profiling_tick_to_system(self.api, agent, t.start)?,
                r::amd_profiling_tick_to_system(self.api, agent, t.end)?,
            ))
        });
        if let Ok((start, end)) = times {
            self.record_system_times(start, end);
        }
    }

    /// Leaves a completed copy's device times in `op_times`.
    pub(crate) fn copy_timed(&self, signal: Signal) {
        if let Ok(t) = r::amd_profiling_async_copy_time(self.api, signal) {
            self.record_system_times(t.start, t.end);
        }
    }

    fn record_system_times(&self, start: u64, end: u64) {
        let clock = self.profiling.clock.get_or_init(|| {
            // SAFETY: both attributes are u64.
            let frequency =
                unsafe { r::system_get_info::<u64>(self.api, system_info::TIMESTAMP_FREQUENCY) };
            let before = rustomp_plugin::monotonic_ns();
            // SAFETY: as above.
            let now = unsafe { r::system_get_info::<u64>(self.api, system_info::TIMESTAMP) };
            let after = rustomp_plugin::monotonic_ns();
            match (now, frequency) {
                (Ok(now), Ok(frequency)) if frequency > 0 => {
                    Some((now, before + (after - before) / 2, frequency))
                }
                _ => None,
            }
        });
        let Some((system, host, frequency)) = *clock else {
            return;
        };
        let to_host = |ticks: u64| {
            let delta =
                (i128::from(ticks) - i128::from(system)) * 1_000_000_000 / i128::from(frequency);
            (i128::from(host) + delta).max(0) as u64
        };
        if start != 0 && end >= start {
            op_times::record(to_host(start), to_host(end));
        }
    }
}
