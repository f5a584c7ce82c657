//! The construct-level operations behind the exports: resolve the device, apply the offload
//! policy, map, launch, unmap. Failures are reported here with the construct's location.

use crate::data::{self, LaunchArguments, MapList};
use crate::diag::{self, debug, info};
use crate::runtime::{runtime, DeviceState, Policy};
use rustomp_abi::{Ident, KernelArgs};
use rustomp_plugin::{LaunchConfig, OffloadError, Result};
use std::ffi::c_void;
use std::sync::Arc;

/// Return codes of the `__tgt_*` entry points.
pub const OFFLOAD_SUCCESS: i32 = 0;
pub const OFFLOAD_FAIL: i32 = !0;

/// `omp_get_default_device` lives in libomp (the default-device ICV); ask it when present.
pub fn default_device() -> i64 {
    type Getter = unsafe extern "C" fn() -> i32;
    static GETTER: std::sync::OnceLock<Option<Getter>> = std::sync::OnceLock::new();
    let getter = GETTER.get_or_init(|| {
        // SAFETY: dlsym with RTLD_DEFAULT and a valid C string.
        let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"omp_get_default_device".as_ptr()) };
        // SAFETY: libomp's omp_get_default_device has this signature.
        (!f.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, Getter>(f) })
    });
    match getter {
        // SAFETY: see above.
        Some(f) => unsafe { f() as i64 },
        None => std::env::var("OMP_DEFAULT_DEVICE")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
    }
}

/// The device a construct runs on, or why not. `None` means "the host" (fallback).
pub fn resolve(device_id: i64, loc: &diag::Location) -> Option<Arc<DeviceState>> {
    let rt = runtime();
    let id = if device_id == rustomp_abi::device_id::UNDEFINED {
        default_device()
    } else {
        device_id
    };
    if rt.policy == Policy::Disabled {
        return None;
    }
    if id == rt.num_devices() as i64 {
        // With no device at all, `mandatory` cannot be met on the host (fatal there).
        if let Some(why) = rt.missing_devices() {
            failed(&format!("{loc}: {why}"));
        }
        return None; // the initial device: the construct runs on the host, under any policy
    }
    let result = if id < 0 {
        Err(OffloadError::new(
            rustomp_plugin::ErrorKind::InvalidArgument,
            format!("device number {id} is not valid"),
        ))
    } else {
        rt.device(id as usize)
    };
    match result {
        Ok(device) => Some(device),
        Err(e) => {
            failed(&format!("{loc}: {e}"));
            None
        }
    }
}

/// A failed construct: fatal under `mandatory`, otherwise reported and left to host fallback.
pub fn failed(message: &str) {
    if runtime().policy == Policy::Mandatory {
        diag::fatal(message);
    }
    diag::error(message);
}

fn report(result: Result<()>, loc: &diag::Location) -> i32 {
    match result {
        Ok(()) => OFFLOAD_SUCCESS,
        Err(e) => {
            // A broken map clause ends the program under every policy: the data is inconsistent.
            if e.kind == rustomp_plugin::ErrorKind::MappingError {
                diag::fatal(&format!("{loc}: {e}"));
            }
            failed(&format!("{loc}: {e}"));
            OFFLOAD_FAIL
        }
    }
}

/// # Safety
/// The map arrays hold `list`'s elements, as clang passes them; `bases` is null or clang's
/// base array of the same length.
pub unsafe fn data_begin(
    ident: *const Ident,
    device_id: i64,
    list: MapList,
    bases: *mut *mut c_void,
) -> i32 {
    let loc = diag::location(ident);
    let Some(device) = resolve(device_id, &loc) else {
        return OFFLOAD_SUCCESS;
    };
    // use_device_ptr/addr: the device addresses go back into clang's base array.
    let return_bases = (!bases.is_null()).then(|| {
        // SAFETY: clang's base array has one element per list item.
        unsafe { std::slice::from_raw_parts_mut(bases, list.items.len()) }
    });
    report(data::begin(&device, &list.items, return_bases), &loc)
}

pub fn data_end(ident: *const Ident, device_id: i64, list: MapList) -> i32 {
    let loc = diag::location(ident);
    let Some(device) = resolve(device_id, &loc) else {
        return OFFLOAD_SUCCESS;
    };
    report(data::end(&device, &list.items), &loc)
}

pub fn data_update(ident: *const Ident, device_id: i64, list: MapList) -> i32 {
    let loc = diag::location(ident);
    let Some(device) = resolve(device_id, &loc) else {
        return OFFLOAD_SUCCESS;
    };
    report(data::update(&device, &list.items), &loc)
}

/// `__tgt_target_kernel`: map, launch, unmap. Non-zero tells clang's code to run the host
/// version of the region instead.
///
/// # Safety
/// `args` is clang's `KernelArgs` for this region.
pub unsafe fn target_kernel(
    ident: *const Ident,
    device_id: i64,
    region_id: *mut c_void,
    args: &KernelArgs,
) -> i32 {
    let loc = diag::location(ident);
    let Some(device) = resolve(device_id, &loc) else {
        return OFFLOAD_FAIL;
    };
    let Some((image, kernel, name)) = device.kernel(region_id as usize) else {
        failed(&format!(
            "{loc}: device {} has no kernel for target region {region_id:p} (no image compatible with this device?)",
            device.id
        ));
        return OFFLOAD_FAIL;
    };
    // SAFETY: guaranteed by the caller.
    let list = unsafe {
        MapList::from_raw(
            args.num_args as i32,
            args.arg_base_ptrs,
            args.arg_ptrs,
            args.arg_sizes,
            args.arg_types,
            args.arg_mappers,
        )
    };
    let result = (|| -> Result<()> {
        let LaunchArguments {
            values,
            temporaries,
        } = data::enter_for_launch(&device, &list.items)?;
        let config = LaunchConfig {
            num_teams: args.num_teams[0],
            thread_limit: args.thread_limit[0],
            teams_yz: [args.num_teams[1], args.num_teams[2]],
            threads_yz: [args.thread_limit[1], args.thread_limit[2]],
            dyn_shared_bytes: args.dyn_cgroup_mem,
            tripcount: args.tripcount,
        };
        info!(
            diag::infotype::KERNEL_ARGS,
            device.id,
            "launching kernel {name} with {} argument(s), {} team(s), thread limit {} at {loc}",
            values.len(),
            config.num_teams,
            config.thread_limit
        );
        debug!("launch {name} on device {}", device.id);
        // SAFETY: the values follow the kernel's parameter list as clang built it.
        let launched = unsafe { image.launch(kernel, &values, &config) };
        for buffer in temporaries {
            device
                .backend
                .free(buffer as *mut c_void, rustomp_plugin::AllocKind::Device)?;
        }
        launched?;
        data::end(&device, &list.items)
    })();
    report(result, &loc)
}
