//! rustomp's own entry point for remote devices (the remote plugin, under MPI): the plain-MPI
//! reference the benchmark (`cargo xtask bench remote`, `bench/remote.c`) measures remote
//! launches and copies against, between this process and the rank of a remote device.

use super::device;
use crate::diag;
use crate::export::exports;
use std::ffi::c_int;

exports! {
    /// Runs `iterations` rounds of plain `MPI_Send`/`MPI_Recv` of `bytes` bytes between this
    /// process and the rank that holds device `device_num` (`mode` 0: ping-pong; 1: this
    /// process sends, then receives an empty acknowledgement; 2: the other way) and stores
    /// their time in `*seconds`. Returns 0, or -1 when the device is not remote or MPI failed
    /// (with a message on stderr).
    ///
    /// # Safety
    /// `seconds` is null or points to a writable double.
    pub unsafe extern "C" fn __rustomp_remote_baseline(
        device_num: c_int,
        mode: c_int,
        bytes: usize,
        iterations: c_int,
        seconds: *mut f64,
    ) -> c_int {
        on_panic: -1;
        const WHAT: &str = "__rustomp_remote_baseline";
        let Some(state) = device(device_num, WHAT) else {
            return -1;
        };
        let Some(remote) = state
            .backend
            .as_any()
            .and_then(|a| a.downcast_ref::<rustomp_remote_plugin::RemoteDevice>())
        else {
            diag::error(&format!("{WHAT}: device {device_num} is not a remote device"));
            return -1;
        };
        match remote.baseline(mode.clamp(0, 2) as u32, bytes as u64, iterations.max(0) as u32) {
            Ok(time) => {
                if !seconds.is_null() {
                    // SAFETY: the caller's pointer, checked non-null.
                    unsafe { *seconds = time.as_secs_f64() };
                }
                0
            }
            Err(e) => {
                diag::error(&format!("{WHAT}: {e}"));
                -1
            }
        }
    }
}
