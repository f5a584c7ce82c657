//! Host functions that device code calls (`__llvm_omp_host_call`) run on the launching thread
//! while their kernel runs. If such a function calls back into the runtime for that device (a
//! target construct, `omp_target_free`, `omp_target_memcpy`, ...) and the device's calls wait
//! for its running kernels (a GPU driver's synchronous calls), the kernel waits for the host
//! function and the host function for the kernel: a deadlock (LLVM's RPC server has the same
//! trap). The launching thread remembers which device it is running a kernel on, and such a
//! call is refused with a message that says why, instead.

use std::cell::Cell;

thread_local! {
    static LAUNCHED_ON: Cell<Option<usize>> = const { Cell::new(None) };
}

/// While alive, the calling thread runs a kernel on `device` (and serves its host calls).
pub struct Launching {
    outer: Option<usize>,
}

impl Launching {
    pub fn on(device: usize) -> Launching {
        Launching {
            outer: LAUNCHED_ON.with(|l| l.replace(Some(device))),
        }
    }
}

impl Drop for Launching {
    fn drop(&mut self) {
        LAUNCHED_ON.with(|l| l.set(self.outer));
    }
}

/// Why `what` on `device` must not run now, if it must not: the calling thread is running a
/// kernel on that device, whose calls wait for running kernels.
#[inline]
pub fn refusal(
    device: usize,
    waits_for_running_kernels: impl FnOnce() -> bool,
    what: &str,
) -> Option<String> {
    let launched = LAUNCHED_ON.with(Cell::get)?;
    refusal_for(Some(launched), device, waits_for_running_kernels(), what)
}

fn refusal_for(
    launched: Option<usize>,
    device: usize,
    waits_for_running_kernels: bool,
    what: &str,
) -> Option<String> {
    (launched == Some(device) && waits_for_running_kernels).then(|| {
        format!(
            "{what} on device {device} from a host function that device {device}'s running kernel called (__llvm_omp_host_call): the device would wait for that kernel, which waits for the host function; do it after the target region"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_running_kernels_device_is_refused_and_only_where_calls_wait() {
        assert!(refusal_for(Some(0), 0, true, "omp_target_free").is_some());
        assert!(refusal_for(Some(0), 1, true, "omp_target_free").is_none());
        assert!(refusal_for(Some(0), 0, false, "omp_target_free").is_none());
        assert!(refusal_for(None, 0, true, "omp_target_free").is_none());
        let message = refusal_for(Some(2), 2, true, "omp_target_memcpy").unwrap();
        assert!(message.starts_with("omp_target_memcpy on device 2 from a host function"));
    }

    #[test]
    fn the_launch_guard_nests_and_restores() {
        assert!(refusal(0, || true, "x").is_none());
        {
            let _outer = Launching::on(0);
            assert!(refusal(0, || true, "x").is_some());
            {
                let _inner = Launching::on(1);
                assert!(refusal(0, || true, "x").is_none());
                assert!(refusal(1, || true, "x").is_some());
            }
            assert!(refusal(0, || true, "x").is_some());
        }
        assert!(refusal(0, || true, "x").is_none());
    }
}
