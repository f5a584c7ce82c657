//! The OpenMP device API (`omp_target_*`, `omp_get_*device*`) and LLVM's extensions, by family:
//! [`devices`] (numbering and uids), [`memory`] (allocation), [`copies`] (plain, rectangular,
//! asynchronous, fills), [`association`] (presence, mapped pointers, associated pointers),
//! [`interop`] (`omp interop`), [`host_call`], and rustomp's own [`remote`] (the benchmark's
//! plain-MPI reference). The initial (host) device is number
//! `omp_get_num_devices()`. Each export's `on_panic` value is what LLVM returns when that call
//! fails (see `export`).

pub(crate) mod association;
pub(crate) mod copies;
pub(crate) mod devices;
pub(crate) mod host_call;
pub(crate) mod interop;
pub(crate) mod memory;
pub(crate) mod remote;

use crate::diag;
use crate::runtime::{runtime, DeviceState};

/// `omp_invalid_device` in clang-22's omp.h.
const OMP_INVALID_DEVICE: i32 = -2;

fn initial_device() -> i32 {
    runtime().num_devices() as i32
}

fn device(id: i32, what: &str) -> Option<&'static DeviceState> {
    if id < 0 {
        diag::error(&format!("{what}: device number {id} is not valid"));
        return None;
    }
    match runtime().device(id as usize) {
        Ok(d) => Some(d),
        Err(e) => {
            diag::error(&format!("{what}: {e}"));
            None
        }
    }
}

/// As `device`, for a routine that allocates, frees or copies on it: such calls wait for the
/// device's running kernels, so one from a host function such a kernel called is refused
/// (`host_call_guard`).
fn moving_device(id: i32, what: &str) -> Option<&'static DeviceState> {
    let d = device(id, what)?;
    let waits = || d.backend.waits_for_running_kernels();
    if let Some(why) = crate::host_call_guard::refusal(d.id, waits, what) {
        diag::error(&why);
        return None;
    }
    Some(d)
}

/// Whether `device_num` names the host or a device that exists (else says which call named it).
fn known_device(device_num: i32, what: &str) -> bool {
    device_num == initial_device() || device(device_num, what).is_some()
}
