//! `libomptarget.so.22.1`: the host offload runtime that clang-22 programs load.
//!
//! Contract: exports LLVM 22's 81 entry points under `VERS1.0`, and one of rustomp's own
//! (`__rustomp_remote_baseline`, the remote benchmark's reference). Each export is a thin shim that
//! converts raw arguments and calls a safe module (`target`, `data`, `api`); no panic crosses
//! the C boundary: every export is defined with `export::exports!`, which reports a panic with
//! the export's name and returns LLVM's failure value for it. The mapping table, reference counts and the
//! offload policy are owned here; plugins only allocate, copy, load and launch.

mod api;
mod data_regions;
mod diag;
mod export;
mod external;
mod host_call_guard;
pub mod mapping;
mod ompt;
mod profile;
mod runtime;
mod target;
mod tasks;

use export::exports;
use mapping::{MapItem, MapList};
use rustomp_abi::{BinDesc, Ident, KernelArgs, MapType};
use std::ffi::c_void;
use target::{OFFLOAD_FAIL, OFFLOAD_SUCCESS};

exports! {
    /// # Safety
    /// `desc` is clang's descriptor, valid until the matching `__tgt_unregister_lib`.
    pub unsafe extern "C" fn __tgt_register_lib(desc: *mut BinDesc) {
        on_panic: ();
        if !desc.is_null() {
            // SAFETY: guaranteed by the caller.
            runtime::runtime().register(unsafe { &*desc });
            ompt::set_host_device(runtime::runtime().num_devices());
            ompt::connect_once();
        }
    }

    /// # Safety
    /// `desc` was registered with `__tgt_register_lib`.
    pub unsafe extern "C" fn __tgt_unregister_lib(desc: *mut BinDesc) {
        on_panic: ();
        if !desc.is_null() {
            // SAFETY: guaranteed by the caller.
            runtime::runtime().unregister(unsafe { &*desc });
        }
    }

    pub extern "C" fn __tgt_init_all_rtls() {
        on_panic: ();
        runtime::runtime();
    }
    pub extern "C" fn __tgt_rtl_init() {
        on_panic: ();
        __tgt_init_all_rtls()
    }
    pub extern "C" fn __tgt_rtl_deinit() {
        on_panic: ();
    }

    pub extern "C" fn __tgt_register_requires(flags: i64) {
        on_panic: ();
        runtime::runtime().requires.fetch_or(flags as u64, std::sync::atomic::Ordering::Relaxed);
    }

    pub extern "C" fn __tgt_set_info_flag(flags: u32) {
        on_panic: ();
        diag::set_info_flags(flags);
    }

    pub extern "C" fn __tgt_print_device_info(device_id: i64) -> i32 {
        on_panic: OFFLOAD_FAIL;
        match runtime::runtime().device(device_id.max(0) as usize) {
            Ok(device) => {
                println!("{}", device.backend.describe());
                OFFLOAD_SUCCESS
            }
            Err(e) => {
                diag::error(&e.to_string());
                OFFLOAD_FAIL
            }
        }
    }

    pub extern "C" fn ompx_dump_mapping_tables() {
        on_panic: ();
        target::dump_tables(&diag::SourceInfo::libomptarget(), true);
    }

    /// # Safety
    /// `args` is clang's `KernelArgs`.
    pub unsafe extern "C" fn __tgt_target_kernel(
        ident: *mut Ident,
        device_id: i64,
        _num_teams: i32,
        _thread_limit: i32,
        region_id: *mut c_void,
        args: *mut KernelArgs,
    ) -> i32 {
        on_panic: OFFLOAD_FAIL;
        if args.is_null() {
            return OFFLOAD_FAIL;
        }
        // SAFETY: guaranteed by the caller.
        unsafe { target::target_kernel(ident, device_id, region_id, &*args) }
    }

    /// Kernels run to completion inside the call; `nowait` ordering comes from libomp's target task.
    ///
    /// # Safety
    /// As `__tgt_target_kernel`.
    #[allow(clippy::too_many_arguments, reason = "LLVM's C signature")]
    pub unsafe extern "C" fn __tgt_target_kernel_nowait(
        ident: *mut Ident,
        device_id: i64,
        num_teams: i32,
        thread_limit: i32,
        region_id: *mut c_void,
        args: *mut KernelArgs,
        _dep_num: i32,
        _dep_list: *mut c_void,
        _noalias_dep_num: i32,
        _noalias_dep_list: *mut c_void,
    ) -> i32 {
        on_panic: OFFLOAD_FAIL;
        // SAFETY: forwarded.
        unsafe { __tgt_target_kernel(ident, device_id, num_teams, thread_limit, region_id, args) }
    }
}

/// # Safety
/// Arrays of `arg_num` elements, as clang passes them.
#[allow(
    clippy::too_many_arguments,
    reason = "the arguments of LLVM's legacy entry points"
)]
unsafe fn legacy_target(
    ident: *mut Ident,
    device_id: i64,
    region_id: *mut c_void,
    arg_num: i32,
    bases: *mut *mut c_void,
    begins: *mut *mut c_void,
    sizes: *mut i64,
    types: *mut i64,
    names: *mut *mut c_void,
    mappers: *mut *mut c_void,
    teams: i32,
    threads: i32,
) -> i32 {
    let mut args = KernelArgs {
        version: rustomp_abi::KERNEL_ARGS_VERSION,
        num_args: arg_num.max(0) as u32,
        arg_base_ptrs: bases,
        arg_ptrs: begins,
        arg_sizes: sizes,
        arg_types: types,
        arg_names: names as *mut *const std::ffi::c_char,
        arg_mappers: mappers,
        tripcount: 0,
        flags: 0,
        num_teams: [teams.max(0) as u32, 0, 0],
        thread_limit: [threads.max(0) as u32, 0, 0],
        dyn_cgroup_mem: 0,
    };
    // SAFETY: forwarded.
    unsafe { __tgt_target_kernel(ident, device_id, teams, threads, region_id, &mut args) }
}

/// Exports that forward their C arguments to one shared implementation; `OFFLOAD_FAIL` on a panic.
macro_rules! forwarding_exports {
    ($($name:ident($($extra:ident: $t:ty),*) => $call:expr;)*) => {$(
        exports! {
            /// # Safety
            /// Arrays of `arg_num` elements, as clang passes them.
            #[allow(clippy::too_many_arguments, reason = "LLVM's C signature")]
            #[allow(unused_variables, reason = "the dependences and `nowait` have nothing to change here")]
            pub unsafe extern "C" fn $name($($extra: $t),*) -> i32 {
                on_panic: OFFLOAD_FAIL;
                // SAFETY: forwarded; the caller passes clang's arrays.
                unsafe { $call }
            }
        }
    )*};
}
forwarding_exports! {
    __tgt_target(device_id: i64, host_ptr: *mut c_void, arg_num: i32, args_base: *mut *mut c_void, args: *mut *mut c_void, arg_sizes: *mut i64, arg_types: *mut i64) => legacy_target(std::ptr::null_mut(), device_id, host_ptr, arg_num, args_base, args, arg_sizes, arg_types, std::ptr::null_mut(), std::ptr::null_mut(), 0, 0);
    __tgt_target_nowait(device_id: i64, host_ptr: *mut c_void, arg_num: i32, args_base: *mut *mut c_void, args: *mut *mut c_void, arg_sizes: *mut i64, arg_types: *mut i64, dep_num: i32, dep_list: *mut c_void, na_num: i32, na_list: *mut c_void) => legacy_target(std::ptr::null_mut(), device_id, host_ptr, arg_num, args_base, args, arg_sizes, arg_types, std::ptr::null_mut(), std::ptr::null_mut(), 0, 0);
    __tgt_target_mapper(ident: *mut Ident, device_id: i64, host_ptr: *mut c_void, arg_num: i32, args_base: *mut *mut c_void, args: *mut *mut c_void, arg_sizes: *mut i64, arg_types: *mut i64, arg_names: *mut *mut c_void, arg_mappers: *mut *mut c_void) => legacy_target(ident, device_id, host_ptr, arg_num, args_base, args, arg_sizes, arg_types, arg_names, arg_mappers, 0, 0);
    __tgt_target_nowait_mapper(ident: *mut Ident, device_id: i64, host_ptr: *mut c_void, arg_num: i32, args_base: *mut *mut c_void, args: *mut *mut c_void, arg_sizes: *mut i64, arg_types: *mut i64, arg_names: *mut *mut c_void, arg_mappers: *mut *mut c_void, dep_num: i32, dep_list: *mut c_void, na_num: i32, na_list: *mut c_void) => legacy_target(ident, device_id, host_ptr, arg_num, args_base, args, arg_sizes, arg_types, arg_names, arg_mappers, 0, 0);
    __tgt_target_teams(device_id: i64, host_ptr: *mut c_void, arg_num: i32, args_base: *mut *mut c_void, args: *mut *mut c_void, arg_sizes: *mut i64, arg_types: *mut i64, team_num: i32, thread_limit: i32) => legacy_target(std::ptr::null_mut(), device_id, host_ptr, arg_num, args_base, args, arg_sizes, arg_types, std::ptr::null_mut(), std::ptr::null_mut(), team_num, thread_limit);
    __tgt_target_teams_nowait(device_id: i64, host_ptr: *mut c_void, arg_num: i32, args_base: *mut *mut c_void, args: *mut *mut c_void, arg_sizes: *mut i64, arg_types: *mut i64, team_num: i32, thread_limit: i32, dep_num: i32, dep_list: *mut c_void, na_num: i32, na_list: *mut c_void) => legacy_target(std::ptr::null_mut(), device_id, host_ptr, arg_num, args_base, args, arg_sizes, arg_types, std::ptr::null_mut(), std::ptr::null_mut(), team_num, thread_limit);
    __tgt_target_teams_mapper(ident: *mut Ident, device_id: i64, host_ptr: *mut c_void, arg_num: i32, args_base: *mut *mut c_void, args: *mut *mut c_void, arg_sizes: *mut i64, arg_types: *mut i64, arg_names: *mut *mut c_void, arg_mappers: *mut *mut c_void, team_num: i32, thread_limit: i32) => legacy_target(ident, device_id, host_ptr, arg_num, args_base, args, arg_sizes, arg_types, arg_names, arg_mappers, team_num, thread_limit);
    __tgt_target_teams_nowait_mapper(ident: *mut Ident, device_id: i64, host_ptr: *mut c_void, arg_num: i32, args_base: *mut *mut c_void, args: *mut *mut c_void, arg_sizes: *mut i64, arg_types: *mut i64, arg_names: *mut *mut c_void, arg_mappers: *mut *mut c_void, team_num: i32, thread_limit: i32, dep_num: i32, dep_list: *mut c_void, na_num: i32, na_list: *mut c_void) => legacy_target(ident, device_id, host_ptr, arg_num, args_base, args, arg_sizes, arg_types, arg_names, arg_mappers, team_num, thread_limit);
}

/// Which data operation a `__tgt_target_data_*` export performs.
#[derive(Clone, Copy)]
enum DataOp {
    Begin,
    End,
    Update,
}

/// # Safety
/// Arrays of `arg_num` elements, as clang passes them (mappers may be null).
#[allow(
    clippy::too_many_arguments,
    reason = "the arguments of LLVM's data entry points"
)]
unsafe fn data_op(
    op: DataOp,
    ident: *mut Ident,
    device_id: i64,
    arg_num: i32,
    bases: *mut *mut c_void,
    begins: *mut *mut c_void,
    sizes: *mut i64,
    types: *mut i64,
    names: *mut *mut c_void,
    mappers: *mut *mut c_void,
) -> i32 {
    let mut list = MapList::new();
    // SAFETY: guaranteed by the caller.
    unsafe {
        list.gather(
            arg_num,
            bases,
            begins,
            sizes,
            types,
            names as *const *const std::ffi::c_char,
            mappers,
        )
    }
    let region = data_regions::Key::new(types, arg_num);
    match op {
        // SAFETY: as above.
        DataOp::Begin => unsafe { target::data_begin(ident, device_id, region, &list, bases) },
        DataOp::End => target::data_end(ident, device_id, region, &list),
        DataOp::Update => target::data_update(ident, device_id, &list),
    }
}

forwarding_exports! {
    __tgt_target_data_begin(device_id: i64, arg_num: i32, args_base: *mut *mut c_void, args: *mut *mut c_void, arg_sizes: *mut i64, arg_types: *mut i64) => data_op(DataOp::Begin, std::ptr::null_mut(), device_id, arg_num, args_base, args, arg_sizes, arg_types, std::ptr::null_mut(), std::ptr::null_mut());
    __tgt_target_data_end(device_id: i64, arg_num: i32, args_base: *mut *mut c_void, args: *mut *mut c_void, arg_sizes: *mut i64, arg_types: *mut i64) => data_op(DataOp::End, std::ptr::null_mut(), device_id, arg_num, args_base, args, arg_sizes, arg_types, std::ptr::null_mut(), std::ptr::null_mut());
    __tgt_target_data_update(device_id: i64, arg_num: i32, args_base: *mut *mut c_void, args: *mut *mut c_void, arg_sizes: *mut i64, arg_types: *mut i64) => data_op(DataOp::Update, std::ptr::null_mut(), device_id, arg_num, args_base, args, arg_sizes, arg_types, std::ptr::null_mut(), std::ptr::null_mut());
    __tgt_target_data_begin_nowait(device_id: i64, arg_num: i32, args_base: *mut *mut c_void, args: *mut *mut c_void, arg_sizes: *mut i64, arg_types: *mut i64, dep_num: i32, dep_list: *mut c_void, na_num: i32, na_list: *mut c_void) => data_op(DataOp::Begin, std::ptr::null_mut(), device_id, arg_num, args_base, args, arg_sizes, arg_types, std::ptr::null_mut(), std::ptr::null_mut());
    __tgt_target_data_end_nowait(device_id: i64, arg_num: i32, args_base: *mut *mut c_void, args: *mut *mut c_void, arg_sizes: *mut i64, arg_types: *mut i64, dep_num: i32, dep_list: *mut c_void, na_num: i32, na_list: *mut c_void) => data_op(DataOp::End, std::ptr::null_mut(), device_id, arg_num, args_base, args, arg_sizes, arg_types, std::ptr::null_mut(), std::ptr::null_mut());
    __tgt_target_data_update_nowait(device_id: i64, arg_num: i32, args_base: *mut *mut c_void, args: *mut *mut c_void, arg_sizes: *mut i64, arg_types: *mut i64, dep_num: i32, dep_list: *mut c_void, na_num: i32, na_list: *mut c_void) => data_op(DataOp::Update, std::ptr::null_mut(), device_id, arg_num, args_base, args, arg_sizes, arg_types, std::ptr::null_mut(), std::ptr::null_mut());
    __tgt_target_data_begin_mapper(ident: *mut Ident, device_id: i64, arg_num: i32, args_base: *mut *mut c_void, args: *mut *mut c_void, arg_sizes: *mut i64, arg_types: *mut i64, arg_names: *mut *mut c_void, arg_mappers: *mut *mut c_void) => data_op(DataOp::Begin, ident, device_id, arg_num, args_base, args, arg_sizes, arg_types, arg_names, arg_mappers);
    __tgt_target_data_end_mapper(ident: *mut Ident, device_id: i64, arg_num: i32, args_base: *mut *mut c_void, args: *mut *mut c_void, arg_sizes: *mut i64, arg_types: *mut i64, arg_names: *mut *mut c_void, arg_mappers: *mut *mut c_void) => data_op(DataOp::End, ident, device_id, arg_num, args_base, args, arg_sizes, arg_types, arg_names, arg_mappers);
    __tgt_target_data_update_mapper(ident: *mut Ident, device_id: i64, arg_num: i32, args_base: *mut *mut c_void, args: *mut *mut c_void, arg_sizes: *mut i64, arg_types: *mut i64, arg_names: *mut *mut c_void, arg_mappers: *mut *mut c_void) => data_op(DataOp::Update, ident, device_id, arg_num, args_base, args, arg_sizes, arg_types, arg_names, arg_mappers);
    __tgt_target_data_begin_nowait_mapper(ident: *mut Ident, device_id: i64, arg_num: i32, args_base: *mut *mut c_void, args: *mut *mut c_void, arg_sizes: *mut i64, arg_types: *mut i64, arg_names: *mut *mut c_void, arg_mappers: *mut *mut c_void, dep_num: i32, dep_list: *mut c_void, na_num: i32, na_list: *mut c_void) => data_op(DataOp::Begin, ident, device_id, arg_num, args_base, args, arg_sizes, arg_types, arg_names, arg_mappers);
    __tgt_target_data_end_nowait_mapper(ident: *mut Ident, device_id: i64, arg_num: i32, args_base: *mut *mut c_void, args: *mut *mut c_void, arg_sizes: *mut i64, arg_types: *mut i64, arg_names: *mut *mut c_void, arg_mappers: *mut *mut c_void, dep_num: i32, dep_list: *mut c_void, na_num: i32, na_list: *mut c_void) => data_op(DataOp::End, ident, device_id, arg_num, args_base, args, arg_sizes, arg_types, arg_names, arg_mappers);
    __tgt_target_data_update_nowait_mapper(ident: *mut Ident, device_id: i64, arg_num: i32, args_base: *mut *mut c_void, args: *mut *mut c_void, arg_sizes: *mut i64, arg_types: *mut i64, arg_names: *mut *mut c_void, arg_mappers: *mut *mut c_void, dep_num: i32, dep_list: *mut c_void, na_num: i32, na_list: *mut c_void) => data_op(DataOp::Update, ident, device_id, arg_num, args_base, args, arg_sizes, arg_types, arg_names, arg_mappers);
}

exports! {
    pub extern "C" fn __tgt_push_mapper_component(
        _handle: *mut c_void,
        base: *mut c_void,
        begin: *mut c_void,
        size: i64,
        kind: i64,
        name: *mut c_void,
    ) {
        on_panic: ();
        mapping::push_mapper_component(MapItem {
            base,
            begin,
            size,
            kind: MapType::from_bits_retain(kind as u64),
            mapper: std::ptr::null_mut(),
            name: name as *const std::ffi::c_char,
        });
    }

    pub extern "C" fn __tgt_mapper_num_components(_handle: *mut c_void) -> i64 {
        on_panic: 0;
        mapping::mapper_num_components()
    }
}

thread_local! {
    static TRIPCOUNT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

exports! {
    pub extern "C" fn __kmpc_push_target_tripcount(_device_id: i64, tripcount: u64) {
        on_panic: ();
        TRIPCOUNT.with(|t| t.set(tripcount));
    }
    pub extern "C" fn __kmpc_push_target_tripcount_mapper(_ident: *mut Ident, _device_id: i64, tripcount: u64) {
        on_panic: ();
        TRIPCOUNT.with(|t| t.set(tripcount));
    }

    /// Every target construct completes inside its call, so nothing is ever pending.
    ///
    /// # Safety
    /// `handle` is null or writable.
    pub unsafe extern "C" fn __tgt_target_nowait_query(handle: *mut *mut c_void) -> i32 {
        on_panic: OFFLOAD_FAIL;
        if !handle.is_null() {
            // SAFETY: guaranteed by the caller.
            unsafe { *handle = std::ptr::null_mut() };
        }
        OFFLOAD_SUCCESS
    }

    /// Record-and-replay of kernels is an LLVM debugging feature this runtime does not offer.
    pub extern "C" fn __tgt_activate_record_replay(_device_id: i64, _memory_size: u64, _addr: *mut c_void, _is_record: bool, _save_output: bool, _reqptr: *mut u64) -> i64 {
        on_panic: OFFLOAD_FAIL as i64;
        diag::error("kernel record/replay (LIBOMPTARGET_RECORD) is not supported by this runtime");
        OFFLOAD_FAIL as i64
    }
    #[allow(clippy::too_many_arguments, reason = "LLVM's C signature")]
    pub extern "C" fn __tgt_target_kernel_replay(
        _ident: *mut Ident,
        _device_id: i64,
        _host_ptr: *mut c_void,
        _device_memory: *mut c_void,
        _device_memory_size: i64,
        _tgt_args: *mut *mut c_void,
        _tgt_offsets: *mut i64,
        _num_args: i32,
        _num_teams: i32,
        _thread_limit: i32,
        _loop_tripcount: u64,
    ) -> i32 {
        on_panic: OFFLOAD_FAIL;
        diag::error("kernel replay is not supported by this runtime");
        OFFLOAD_FAIL
    }
}

// CUDA-style launches through OpenMP offload (`-fopenmp -x cuda`) are not supported: each
// entry point fails with 1 (`cudaErrorInvalidValue`), a panic too.
exports! {
    pub extern "C" fn llvmLaunchKernel(_func: *const c_void, _grid: u64, _grid_z: u32, _block: u64, _block_z: u32, _args: *mut *mut c_void, _shared: usize, _stream: *mut c_void) -> u32 {
        on_panic: 1;
        diag::error("llvmLaunchKernel: CUDA-language kernels on the OpenMP runtime are not supported");
        1
    }
    pub extern "C" fn __llvmPushCallConfiguration(_grid: u64, _grid_z: u32, _block: u64, _block_z: u32, _shared: usize, _stream: *mut c_void) -> u32 {
        on_panic: 1;
        diag::error("__llvmPushCallConfiguration: CUDA-language kernels on the OpenMP runtime are not supported");
        1
    }
    pub extern "C" fn __llvmPopCallConfiguration(_grid: *mut u64, _grid_z: *mut u32, _block: *mut u64, _block_z: *mut u32, _shared: *mut usize, _stream: *mut *mut c_void) -> u32 {
        on_panic: 1;
        1
    }
}
