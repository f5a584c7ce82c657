//! The construct-level operations behind the exports: resolve the device, apply the offload
//! policy, map, launch, unmap. Failures are reported here with the construct's location.

use crate::data_regions;
use crate::diag::{self, debug};
use crate::host_call_guard;
use crate::mapping::{self, LaunchArguments, MapList};
use crate::ompt;
use crate::profile;
use crate::runtime::{runtime, DeviceState, Policy};
use rustomp_abi::{Ident, KernelArgs};
use rustomp_plugin::{LaunchConfig, OffloadError, Result};
use std::ffi::c_void;

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

/// The device a construct runs on, or why not. `None` means "the host" (fallback). A construct
/// on the device whose kernel called the host function it is in is refused
/// (`host_call_guard`).
pub fn resolve(device_id: i64, loc: &diag::Location) -> Option<&'static DeviceState> {
    let device = resolve_device(device_id, loc)?;
    let waits = || device.backend.waits_for_running_kernels();
    if let Some(why) = host_call_guard::refusal(device.id, waits, "a target construct") {
        failed(loc, &why);
        return None;
    }
    Some(device)
}

fn resolve_device(device_id: i64, loc: &diag::Location) -> Option<&'static DeviceState> {
    let rt = runtime();
    let id = if device_id == rustomp_abi::device_id::UNDEFINED {
        default_device()
    } else {
        device_id
    };
    if rt.policy == Policy::Disabled {
        return None;
    }
    if let Some(ready) = usize::try_from(id).ok().and_then(|id| rt.ready_device(id)) {
        return Some(ready);
    }
    if id == rt.num_devices() as i64 {
        // With no device at all, `mandatory` cannot be met on the host (fatal there).
        if let Some(why) = rt.missing_devices() {
            failed(loc, &why);
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
            failed(loc, &e.to_string());
            None
        }
    }
}

/// A failed construct: reported; fatal under `mandatory`, otherwise left to host fallback.
pub fn failed(loc: &diag::Location, message: &str) {
    diag::error(message);
    if runtime().policy == Policy::Mandatory {
        fail_construct(loc);
    }
}

/// LLVM's end of a failed construct under `mandatory` (`handleTargetOutcome`): the mapping
/// tables (`LIBOMPTARGET_INFO` 0x4) or where to read about debugging, the construct's
/// location, fatal error 1, SIGABRT.
pub fn fail_construct(loc: &diag::Location) -> ! {
    if diag::info_enabled(diag::infotype::DUMP_TABLE) {
        dump_tables(&loc.source(), false);
    } else {
        diag::error("Consult https://openmp.llvm.org/design/Runtimes.html for debugging options.");
    }
    let source = loc.source();
    if source.is_available() {
        eprint!("{}:{}:{}: ", source.file, source.line, source.column);
    } else {
        diag::error(
            "Source location information not present. Compile with -g or -gline-tables-only.",
        );
    }
    diag::fatal(
        1,
        "failure of target construct while offloading is mandatory",
    )
}

/// The mapping table of every device in use, after the construct at `loc` (LLVM's
/// `dumpTargetPointerMappings`); on stdout for `ompx_dump_mapping_tables`.
pub fn dump_tables(at: &diag::SourceInfo, to_stdout: bool) {
    let rt = runtime();
    for id in 0..rt.num_devices() {
        if let Some(device) = rt.opened_device(id) {
            crate::runtime::dump_table(id, &device.table(), at, to_stdout);
        }
    }
}

/// What LLVM reports after a failed phase of a construct, before its end.
const BEGIN_FAILED: &[&str] = &[
    "Call to targetDataBegin failed, abort target.",
    "Failed to process data before launching the kernel.",
];
const LAUNCH_FAILED: &[&str] = &["Executing target region abort target."];
const END_FAILED: &[&str] = &[
    "Call to targetDataEnd failed, abort target.",
    "Failed to process data after launching the kernel.",
];

/// The end of a construct: on success the tables when asked for (0x4); on failure the error
/// (a mapping error was reported where it was found, in LLVM's words), the phase's lines, and
/// LLVM's end of a failed construct when fatal. A broken map clause is fatal under every
/// policy: the data is inconsistent.
fn report(result: Result<()>, loc: &diag::Location, phase_lines: &[&str]) -> i32 {
    match result {
        Ok(()) => {
            if diag::info_enabled(diag::infotype::DUMP_TABLE) {
                dump_tables(&loc.source(), false);
            }
            OFFLOAD_SUCCESS
        }
        Err(e) => {
            let mapping = e.kind == rustomp_plugin::ErrorKind::MappingError;
            if !mapping {
                diag::error(&e.to_string());
            }
            for line in phase_lines {
                diag::error(line);
            }
            if mapping || runtime().policy == Policy::Mandatory {
                fail_construct(loc);
            }
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
    region: data_regions::Key,
    list: &MapList,
    bases: *mut *mut c_void,
) -> i32 {
    let loc = diag::location(ident);
    // The device fixed now: a `target data` region's end must find it (see `data_regions`).
    let device_id = if device_id == rustomp_abi::device_id::UNDEFINED {
        default_device()
    } else {
        device_id
    };
    data_regions::began(region, device_id);
    let Some(device) = resolve(device_id, &loc) else {
        return OFFLOAD_SUCCESS;
    };
    let _construct = ompt::Region::begin(ompt::Construct::EnterData, device.id);
    if diag::info_enabled(diag::infotype::KERNEL_ARGS) {
        mapping::print_kernel_arguments(
            device.id,
            "Entering OpenMP data region with being_mapper",
            &loc,
            &list.items,
        );
    }
    // use_device_ptr/addr: the device addresses go back into clang's base array.
    let return_bases = (!bases.is_null()).then(|| {
        // SAFETY: clang's base array has one element per list item.
        unsafe { std::slice::from_raw_parts_mut(bases, list.items.len()) }
    });
    let mapped = profile::phase(device.id, "map in (data)", list.items.len(), || {
        mapping::begin(device, &list.items, return_bases)
    });
    report(mapped, &loc, &[])
}

pub fn data_end(
    ident: *const Ident,
    device_id: i64,
    region: data_regions::Key,
    list: &MapList,
) -> i32 {
    let loc = diag::location(ident);
    let device_id = data_regions::ending(region, device_id);
    let Some(device) = resolve(device_id, &loc) else {
        return OFFLOAD_SUCCESS;
    };
    let _construct = ompt::Region::begin(ompt::Construct::ExitData, device.id);
    if diag::info_enabled(diag::infotype::KERNEL_ARGS) {
        mapping::print_kernel_arguments(
            device.id,
            "Exiting OpenMP data region with end_mapper",
            &loc,
            &list.items,
        );
    }
    let unmapped = profile::phase(device.id, "map out (data)", list.items.len(), || {
        mapping::end(device, &list.items)
    });
    report(unmapped, &loc, &[])
}

pub fn data_update(ident: *const Ident, device_id: i64, list: &MapList) -> i32 {
    let loc = diag::location(ident);
    let Some(device) = resolve(device_id, &loc) else {
        return OFFLOAD_SUCCESS;
    };
    let _construct = ompt::Region::begin(ompt::Construct::Update, device.id);
    if diag::info_enabled(diag::infotype::KERNEL_ARGS) {
        mapping::print_kernel_arguments(
            device.id,
            "Updating data within the OpenMP data region with update_mapper",
            &loc,
            &list.items,
        );
    }
    let updated = profile::phase(device.id, "update", list.items.len(), || {
        mapping::update(device, &list.items)
    });
    report(updated, &loc, &[])
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
    let Some(bound) = device.kernel(region_id as usize) else {
        failed(
            &loc,
            &format!("device {} has no kernel for target region {region_id:p} (no image compatible with this device?)", device.id),
        );
        return OFFLOAD_FAIL;
    };
    let _construct = ompt::Region::begin(ompt::Construct::Target, device.id);
    let mut list = MapList::new();
    // SAFETY: guaranteed by the caller.
    unsafe {
        list.gather(
            args.num_args as i32,
            args.arg_base_ptrs,
            args.arg_ptrs,
            args.arg_sizes,
            args.arg_types,
            args.arg_names as *const *const std::ffi::c_char,
            args.arg_mappers,
        )
    }
    if diag::info_enabled(diag::infotype::KERNEL_ARGS) {
        mapping::print_kernel_arguments(device.id, "Entering OpenMP kernel", &loc, &list.items);
    }
    let mut arguments = LaunchArguments::new();
    let entered = profile::phase(device.id, "map in (target)", list.items.len(), || {
        mapping::enter_for_launch(device, &list.items, &mut arguments)
    });
    if let Err(e) = entered {
        return report(Err(e), &loc, BEGIN_FAILED);
    }
    let LaunchArguments {
        values,
        temporaries,
    } = &mut arguments;
    let config = LaunchConfig {
        num_teams: league_size(args.num_teams[0]),
        thread_limit: args.thread_limit[0],
        teams_yz: [args.num_teams[1], args.num_teams[2]],
        threads_yz: [args.thread_limit[1], args.thread_limit[2]],
        dyn_shared_bytes: args.dyn_cgroup_mem,
        tripcount: args.tripcount,
    };
    debug!(
        "launch {} on device {}: {} argument(s)",
        bound.name,
        device.id,
        values.len()
    );
    let launched = ompt::submit(device.id, config.num_teams, || {
        let _launching = host_call_guard::Launching::on(device.id);
        // SAFETY: the values follow the kernel's parameter list as clang built it.
        unsafe { bound.image.launch(bound.kernel, &values[..], &config) }
    });
    // The private copies are freed once, after the kernel that used them finished.
    let freed = temporaries
        .drain(..)
        .try_for_each(|buffer| mapping::free_device(device, buffer));
    if let Err(e) = launched.and(freed) {
        // The construct's references go, its results do not come back (there are none).
        if let Err(released) = mapping::release(device, &list.items) {
            debug!("releasing the maps of a failed launch: {released}");
        }
        return report(Err(e), &loc, LAUNCH_FAILED);
    }
    let unmapped = profile::phase(device.id, "map out (target)", list.items.len(), || {
        mapping::end(device, &list.items)
    });
    report(unmapped, &loc, END_FAILED)
}

/// The number of teams a construct asks for. clang-22 passes -1 for a `target` region without
/// a `teams` construct (`target`, `target parallel for`): its league has one team, the
/// initial thread's, so one block; 0 (`target teams` without `num_teams`) leaves the choice to
/// the plugin; anything else is the clause. Read as unsigned, -1 would ask for the largest grid.
fn league_size(num_teams: u32) -> u32 {
    if (num_teams as i32) < 0 {
        1
    } else {
        num_teams
    }
}

#[cfg(test)]
mod tests {
    use super::league_size;

    #[test]
    fn a_target_region_without_teams_is_one_team() {
        assert_eq!(league_size(-1i32 as u32), 1);
        assert_eq!(league_size(0), 0);
        assert_eq!(league_size(7), 7);
    }
}
