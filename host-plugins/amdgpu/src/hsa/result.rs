//! One thin function per HSA entry point the plugin calls: arguments in, the status turned into
//! an [`HsaResult`] named after the call (see [`check`]). Calls that return a value instead of a
//! status (signal loads, stores and waits, queue indices) are wrapped too, so no raw call sits
//! outside this module.
//!
//! Calls that take only values are safe functions: the runtime checks them and answers with an
//! error. Calls that take handles, addresses or write a caller-chosen type are `unsafe`, each with
//! its `# Safety` contract, which the owning types of the backend uphold.

use super::sys::*;
use super::{check, collect, info, HsaError, HsaResult};
use core::ffi::{c_int, c_void};
use std::ffi::CStr;

pub fn init(api: &Api) -> HsaResult<()> {
    // SAFETY: hsa_init takes no arguments; it may be called more than once.
    check(api, "hsa_init", unsafe { (api.init)() })
}

/// One [`system_info`] attribute.
///
/// # Safety
/// `T` is the type the runtime writes for `attribute` (hsa.h).
pub unsafe fn system_get_info<T: Default>(api: &Api, attribute: u32) -> HsaResult<T> {
    // SAFETY: the caller's type for the attribute; the runtime writes one `T` to `out`.
    unsafe {
        info(api, "hsa_system_get_info", |out| {
            (api.system_get_info)(attribute, out)
        })
    }
}

/// Every agent the runtime knows, CPUs and GPUs.
pub fn iterate_agents(api: &Api) -> HsaResult<Vec<Agent>> {
    // SAFETY: the iterator calls back with every agent before returning.
    unsafe {
        collect::<Agent>(api, "hsa_iterate_agents", |f, data| {
            (api.iterate_agents)(f, data)
        })
    }
}

/// One [`agent_info`] or [`amd_agent_info`] attribute of `agent`.
///
/// # Safety
/// `agent` is an agent of this runtime, and `T` is the type the runtime writes for `attribute`
/// (hsa.h, hsa_ext_amd.h).
pub unsafe fn agent_get_info<T: Default>(api: &Api, agent: Agent, attribute: u32) -> HsaResult<T> {
    // SAFETY: the caller's agent and type for the attribute.
    unsafe {
        info(api, "hsa_agent_get_info", |out| {
            (api.agent_get_info)(agent, attribute, out)
        })
    }
}

/// The ISAs `agent` supports, the preferred one first.
///
/// # Safety
/// `agent` is an agent of this runtime.
pub unsafe fn agent_iterate_isas(api: &Api, agent: Agent) -> HsaResult<Vec<Isa>> {
    // SAFETY: the caller's agent; the iterator calls back with its ISAs before returning.
    unsafe {
        collect::<Isa>(api, "hsa_agent_iterate_isas", |f, data| {
            (api.agent_iterate_isas)(agent, f, data)
        })
    }
}

/// The name of `isa` (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`): its
/// [`isa_info::NAME_LENGTH`], then [`isa_info::NAME`] into a buffer that long.
///
/// # Safety
/// `isa` is an ISA of this runtime.
pub unsafe fn isa_get_name(api: &Api, isa: Isa) -> HsaResult<String> {
    // SAFETY: the caller's ISA; NAME_LENGTH is a u32.
    let length: u32 = unsafe {
        info(api, "hsa_isa_get_info_alt", |out| {
            (api.isa_get_info_alt)(isa, isa_info::NAME_LENGTH, out)
        })
    }?;
    let mut name = vec![0u8; length as usize + 1];
    check(api, "hsa_isa_get_info_alt", {
        // SAFETY: NAME writes NAME_LENGTH bytes, which `name` holds.
        unsafe { (api.isa_get_info_alt)(isa, isa_info::NAME, name.as_mut_ptr() as *mut c_void) }
    })?;
    Ok(super::name_of(&name))
}

/// The memory pools of `agent`.
///
/// # Safety
/// `agent` is an agent of this runtime.
pub unsafe fn amd_agent_iterate_memory_pools(
    api: &Api,
    agent: Agent,
) -> HsaResult<Vec<MemoryPool>> {
    // SAFETY: the caller's agent; the iterator calls back with its pools before returning.
    unsafe {
        collect::<MemoryPool>(api, "hsa_amd_agent_iterate_memory_pools", |f, data| {
            (api.amd_agent_iterate_memory_pools)(agent, f, data)
        })
    }
}

/// One [`pool_info`] attribute of `pool`.
///
/// # Safety
/// `pool` is a memory pool of this runtime, and `T` is the type the runtime writes for
/// `attribute` (hsa_ext_amd.h).
pub unsafe fn amd_memory_pool_get_info<T: Default>(
    api: &Api,
    pool: MemoryPool,
    attribute: u32,
) -> HsaResult<T> {
    // SAFETY: the caller's pool and type for the attribute.
    unsafe {
        info(api, "hsa_amd_memory_pool_get_info", |out| {
            (api.amd_memory_pool_get_info)(pool, attribute, out)
        })
    }
}

/// `bytes` from `pool` (no allocation flags).
///
/// # Safety
/// `pool` is a memory pool of this runtime.
pub unsafe fn amd_memory_pool_allocate(
    api: &Api,
    pool: MemoryPool,
    bytes: usize,
) -> HsaResult<*mut c_void> {
    let mut address: *mut c_void = std::ptr::null_mut();
    // SAFETY: the caller's pool; writes one pointer to a live local.
    check(api, "hsa_amd_memory_pool_allocate", unsafe {
        (api.amd_memory_pool_allocate)(pool, bytes, 0, &mut address)
    })?;
    Ok(address)
}

/// # Safety
/// `address` came from [`amd_memory_pool_allocate`], is freed once, and nothing uses it after.
pub unsafe fn amd_memory_pool_free(api: &Api, address: *mut c_void) -> HsaResult<()> {
    // SAFETY: guaranteed by the caller.
    check(api, "hsa_amd_memory_pool_free", unsafe {
        (api.amd_memory_pool_free)(address)
    })
}

/// Lets `agents` reach the pool allocation at `address` (no per-agent flags).
///
/// # Safety
/// `agents` are agents of this runtime and `address` is a live allocation of one of its pools.
pub unsafe fn amd_agents_allow_access(
    api: &Api,
    agents: &[Agent],
    address: *const c_void,
) -> HsaResult<()> {
    // SAFETY: the caller's agents and allocation; the runtime reads `agents.len()` agents.
    check(api, "hsa_amd_agents_allow_access", unsafe {
        (api.amd_agents_allow_access)(
            agents.len() as u32,
            agents.as_ptr(),
            std::ptr::null(),
            address,
        )
    })
}

/// Starts copying `bytes` from `src` (as `src_agent` sees it) to `dst` (as `dst_agent` sees it),
/// with no dependencies; `completion` drops by one when the copy is done.
///
/// # Safety
/// `dst` and `src` are valid for `bytes` for the agents given until `completion` says the copy is
/// done; the agents and the signal belong to this runtime and the signal outlives the copy.
pub unsafe fn amd_memory_async_copy(
    api: &Api,
    dst: *mut c_void,
    dst_agent: Agent,
    src: *const c_void,
    src_agent: Agent,
    bytes: usize,
    completion: Signal,
) -> HsaResult<()> {
    // SAFETY: guaranteed by the caller; no dependency signals (0, null).
    check(api, "hsa_amd_memory_async_copy", unsafe {
        (api.amd_memory_async_copy)(
            dst,
            dst_agent,
            src,
            src_agent,
            bytes,
            0,
            std::ptr::null(),
            completion,
        )
    })
}

/// Locks the host range `host..host + bytes` for `agents`; the address they use for it, which
/// the runtime may leave null.
///
/// # Safety
/// `host` is valid for `bytes` until [`amd_memory_unlock`]; `agents` are agents of this runtime.
pub unsafe fn amd_memory_lock(
    api: &Api,
    host: *mut c_void,
    bytes: usize,
    agents: &mut [Agent],
) -> HsaResult<*mut c_void> {
    let mut agent_address: *mut c_void = std::ptr::null_mut();
    // SAFETY: the caller's range and agents; writes one pointer to a live local.
    check(api, "hsa_amd_memory_lock", unsafe {
        (api.amd_memory_lock)(
            host,
            bytes,
            agents.as_mut_ptr(),
            agents.len() as c_int,
            &mut agent_address,
        )
    })?;
    Ok(agent_address)
}

/// # Safety
/// `host` was locked by [`amd_memory_lock`] and no copy uses it any more.
pub unsafe fn amd_memory_unlock(api: &Api, host: *mut c_void) -> HsaResult<()> {
    // SAFETY: guaranteed by the caller.
    check(api, "hsa_amd_memory_unlock", unsafe {
        (api.amd_memory_unlock)(host)
    })
}

/// Has the queue's packet processor stamp each dispatch's start and end (its completion
/// signal then carries them).
///
/// # Safety
/// `queue` is live.
pub unsafe fn amd_profiling_set_profiler_enabled(api: &Api, queue: *mut Queue) -> HsaResult<()> {
    // SAFETY: guaranteed by the caller.
    check(api, "hsa_amd_profiling_set_profiler_enabled", unsafe {
        (api.amd_profiling_set_profiler_enabled)(queue, 1)
    })
}

/// Has the runtime stamp every async copy's start and end (process-wide).
pub fn amd_profiling_async_copy_enable(api: &Api) -> HsaResult<()> {
    // SAFETY: takes a flag only.
    check(api, "hsa_amd_profiling_async_copy_enable", unsafe {
        (api.amd_profiling_async_copy_enable)(true)
    })
}

/// A completed dispatch's start and end, in `agent`'s ticks.
pub fn amd_profiling_dispatch_time(
    api: &Api,
    agent: Agent,
    signal: Signal,
) -> HsaResult<ProfilingTime> {
    let mut time = ProfilingTime::default();
    // SAFETY: handles of this runtime; writes one structure to a live local.
    check(api, "hsa_amd_profiling_get_dispatch_time", unsafe {
        (api.amd_profiling_get_dispatch_time)(agent, signal, &mut time)
    })?;
    Ok(time)
}

/// A completed async copy's start and end, in system ticks.
pub fn amd_profiling_async_copy_time(api: &Api, signal: Signal) -> HsaResult<ProfilingTime> {
    let mut time = ProfilingTime::default();
    // SAFETY: a signal of this runtime; writes one structure to a live local.
    check(api, "hsa_amd_profiling_get_async_copy_time", unsafe {
        (api.amd_profiling_get_async_copy_time)(signal, &mut time)
    })?;
    Ok(time)
}

/// An agent tick in the system timestamp domain (`hsa_system_get_info`'s TIMESTAMP).
pub fn amd_profiling_tick_to_system(api: &Api, agent: Agent, tick: u64) -> HsaResult<u64> {
    let mut system = 0u64;
    let convert = api.amd_profiling_convert_tick_to_system_domain;
    // SAFETY: an agent of this runtime; writes one value to a live local.
    let status = unsafe { convert(agent, tick, &mut system) };
    check(
        api,
        "hsa_amd_profiling_convert_tick_to_system_domain",
        status,
    )?;
    Ok(system)
}

/// What the runtime knows of `address` (type UNKNOWN for memory it does not know).
pub fn amd_pointer_info(api: &Api, address: u64) -> HsaResult<PointerInfo> {
    let mut info = PointerInfo {
        size: size_of::<PointerInfo>() as u32,
        kind: pointer_type::UNKNOWN,
        agent_base_address: std::ptr::null_mut(),
        host_base_address: std::ptr::null_mut(),
        size_in_bytes: 0,
        user_data: std::ptr::null_mut(),
        agent_owner: Agent::default(),
        global_flags: 0,
        registered: false,
    };
    // SAFETY: the runtime only looks the address up; it writes at most `info.size` bytes of
    // `info`, a live local; no allocator and no accessible-agent list are asked for.
    check(api, "hsa_amd_pointer_info", unsafe {
        (api.amd_pointer_info)(
            address as *const c_void,
            &mut info,
            None,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    })?;
    Ok(info)
}

/// A signal holding `initial`, with no consumer list (any agent may wait on it).
pub fn signal_create(api: &Api, initial: SignalValue) -> HsaResult<Signal> {
    let mut signal = Signal::default();
    // SAFETY: no consumer list (0, null); writes one handle to a live local.
    check(api, "hsa_signal_create", unsafe {
        (api.signal_create)(initial, 0, std::ptr::null(), &mut signal)
    })?;
    Ok(signal)
}

/// # Safety
/// `signal` came from [`signal_create`], is destroyed once, and no packet or wait uses it any more.
pub unsafe fn signal_destroy(api: &Api, signal: Signal) -> HsaResult<()> {
    // SAFETY: guaranteed by the caller.
    check(api, "hsa_signal_destroy", unsafe {
        (api.signal_destroy)(signal)
    })
}

/// The value of `signal`, with acquire ordering.
///
/// # Safety
/// `signal` is a live signal of this runtime.
pub unsafe fn signal_load_scacquire(api: &Api, signal: Signal) -> SignalValue {
    // SAFETY: guaranteed by the caller.
    unsafe { (api.signal_load_scacquire)(signal) }
}

/// Sets `signal` to `value`, with no ordering (a doorbell).
///
/// # Safety
/// `signal` is a live signal of this runtime.
pub unsafe fn signal_store_relaxed(api: &Api, signal: Signal, value: SignalValue) {
    // SAFETY: guaranteed by the caller.
    unsafe { (api.signal_store_relaxed)(signal, value) }
}

/// Waits until `signal` meets `condition` against `compare` ([`signal_condition`]), or for about
/// `timeout_hint` timestamp ticks, or less (the runtime may return early); the value last
/// observed, which the caller checks again.
///
/// # Safety
/// `signal` is a live signal of this runtime.
pub unsafe fn signal_wait_scacquire(
    api: &Api,
    signal: Signal,
    condition: u32,
    compare: SignalValue,
    timeout_hint: u64,
    wait_state: u32,
) -> SignalValue {
    // SAFETY: guaranteed by the caller.
    unsafe { (api.signal_wait_scacquire)(signal, condition, compare, timeout_hint, wait_state) }
}

/// A user-mode queue of `size` packets on `agent`; `on_error` is called with `data` on a runtime
/// thread when the queue faults. No private or group segment limits (`u32::MAX`).
///
/// # Safety
/// `agent` is a GPU agent of this runtime, and `data` is valid for `on_error` until the queue is
/// destroyed.
pub unsafe fn queue_create(
    api: &Api,
    agent: Agent,
    size: u32,
    type_: u32,
    on_error: QueueErrorCallback,
    data: *mut c_void,
) -> HsaResult<*mut Queue> {
    let mut queue: *mut Queue = std::ptr::null_mut();
    // SAFETY: the caller's agent and callback data; writes one pointer to a live local.
    check(api, "hsa_queue_create", unsafe {
        (api.queue_create)(
            agent,
            size,
            type_,
            on_error,
            data,
            u32::MAX,
            u32::MAX,
            &mut queue,
        )
    })?;
    Ok(queue)
}

/// # Safety
/// `queue` came from [`queue_create`], is destroyed once, and holds no packet still running.
pub unsafe fn queue_destroy(api: &Api, queue: *mut Queue) -> HsaResult<()> {
    // SAFETY: guaranteed by the caller.
    check(api, "hsa_queue_destroy", unsafe {
        (api.queue_destroy)(queue)
    })
}

/// Adds `value` to the write index of `queue`; the index before (the first slot reserved).
///
/// # Safety
/// `queue` is a live queue of this runtime.
pub unsafe fn queue_add_write_index_relaxed(api: &Api, queue: *const Queue, value: u64) -> u64 {
    // SAFETY: guaranteed by the caller.
    unsafe { (api.queue_add_write_index_relaxed)(queue, value) }
}

/// The read index of `queue` (the next packet the packet processor takes), with acquire ordering.
///
/// # Safety
/// `queue` is a live queue of this runtime.
pub unsafe fn queue_load_read_index_scacquire(api: &Api, queue: *const Queue) -> u64 {
    // SAFETY: guaranteed by the caller.
    unsafe { (api.queue_load_read_index_scacquire)(queue) }
}

/// A reader of the code object (ELF image) in `bytes`.
///
/// # Safety
/// `bytes` stays valid and unchanged until the last
/// [`executable_load_agent_code_object`] from the reader has returned: the runtime keeps the
/// pointer, not a copy, and reads the image when a code object is loaded from it.
pub unsafe fn code_object_reader_create_from_memory(
    api: &Api,
    bytes: &[u8],
) -> HsaResult<CodeObjectReader> {
    let mut reader = CodeObjectReader::default();
    // SAFETY: the caller keeps the bytes alive; writes one handle to a live local.
    check(api, "hsa_code_object_reader_create_from_memory", unsafe {
        (api.code_object_reader_create_from_memory)(
            bytes.as_ptr() as *const c_void,
            bytes.len(),
            &mut reader,
        )
    })?;
    Ok(reader)
}

/// # Safety
/// `reader` came from [`code_object_reader_create_from_memory`] and is destroyed once.
pub unsafe fn code_object_reader_destroy(api: &Api, reader: CodeObjectReader) -> HsaResult<()> {
    // SAFETY: guaranteed by the caller.
    check(api, "hsa_code_object_reader_destroy", unsafe {
        (api.code_object_reader_destroy)(reader)
    })
}

/// An empty executable for `profile` and `rounding_mode` ([`profile`], [`float_rounding_mode`]),
/// with no options.
pub fn executable_create_alt(api: &Api, profile: u32, rounding_mode: u32) -> HsaResult<Executable> {
    let mut executable = Executable::default();
    // SAFETY: plain values and no options (null); writes one handle to a live local.
    check(api, "hsa_executable_create_alt", unsafe {
        (api.executable_create_alt)(profile, rounding_mode, std::ptr::null(), &mut executable)
    })?;
    Ok(executable)
}

/// Loads the code object of `reader` into `executable` for `agent`, with no options.
///
/// # Safety
/// `executable` (not frozen), `agent` and `reader` are live handles of this runtime, and the
/// reader's bytes are still valid (see [`code_object_reader_create_from_memory`]).
pub unsafe fn executable_load_agent_code_object(
    api: &Api,
    executable: Executable,
    agent: Agent,
    reader: CodeObjectReader,
) -> HsaResult<LoadedCodeObject> {
    let mut loaded = LoadedCodeObject::default();
    // SAFETY: the caller's handles; no options (null); writes one handle to a live local.
    check(api, "hsa_executable_load_agent_code_object", unsafe {
        (api.executable_load_agent_code_object)(
            executable,
            agent,
            reader,
            std::ptr::null(),
            &mut loaded,
        )
    })?;
    Ok(loaded)
}

/// Links `executable` (no options); no code object can be loaded into it afterwards.
///
/// # Safety
/// `executable` is a live executable of this runtime.
pub unsafe fn executable_freeze(api: &Api, executable: Executable) -> HsaResult<()> {
    // SAFETY: the caller's executable; no options (null).
    check(api, "hsa_executable_freeze", unsafe {
        (api.executable_freeze)(executable, std::ptr::null())
    })
}

/// # Safety
/// `executable` came from [`executable_create_alt`], is destroyed once, and none of its kernels
/// runs any more.
pub unsafe fn executable_destroy(api: &Api, executable: Executable) -> HsaResult<()> {
    // SAFETY: guaranteed by the caller.
    check(api, "hsa_executable_destroy", unsafe {
        (api.executable_destroy)(executable)
    })
}

/// The symbol `name` of `executable` for `agent`; `None` when it has none (HSA answers
/// `HSA_STATUS_ERROR_INVALID_SYMBOL_NAME` for a name the executable lacks).
///
/// # Safety
/// `executable` (frozen) and `agent` are live handles of this runtime.
pub unsafe fn executable_get_symbol_by_name(
    api: &Api,
    executable: Executable,
    name: &CStr,
    agent: Agent,
) -> HsaResult<Option<ExecutableSymbol>> {
    let mut symbol = ExecutableSymbol::default();
    // SAFETY: the caller's handles, a NUL-terminated name; writes one handle to a live local.
    let status = unsafe {
        (api.executable_get_symbol_by_name)(executable, name.as_ptr(), &agent, &mut symbol)
    };
    if status == STATUS_SUCCESS {
        return Ok(Some(symbol));
    }
    match check(api, "hsa_executable_get_symbol_by_name", status) {
        Err(HsaError {
            status: STATUS_ERROR_INVALID_SYMBOL_NAME,
            ..
        })
        | Ok(()) => Ok(None),
        Err(e) => Err(e),
    }
}

/// One [`symbol_info`] attribute of `symbol`.
///
/// # Safety
/// `symbol` is a symbol of a live executable of this runtime, and `T` is the type the runtime
/// writes for `attribute` (hsa.h).
pub unsafe fn executable_symbol_get_info<T: Default>(
    api: &Api,
    symbol: ExecutableSymbol,
    attribute: u32,
) -> HsaResult<T> {
    // SAFETY: the caller's symbol and type for the attribute.
    unsafe {
        info(api, "hsa_executable_symbol_get_info", |out| {
            (api.executable_symbol_get_info)(symbol, attribute, out)
        })
    }
}
