//! The whole plugin driven through a fake HSA runtime, as the CUDA plugin's tests drive theirs
//! through a fake driver. The agents, their pools and ISAs come from a table the test picks;
//! "device" memory is host memory; a code object is a table of named globals and kernels; and
//! ringing a queue's doorbell runs the packet published there: the fake records the packet and
//! its kernel arguments, then runs the kernel's fake behaviour (print to the `printf` buffer,
//! call a host function, fault). This checks what the pure unit tests cannot: what is written
//! at image load, the AQL packets and code object v5 implicit arguments of launches, which pool
//! each kind of memory comes from, both copy paths, and how runtime failures and kernel faults
//! are reported.

use crate::hsa::sys::*;
use crate::{AmdgpuDriver, AmdgpuPlugin};
use core::ffi::{c_char, c_int, c_void};
use rustomp_abi::{exec_mode, host_call_state, FptrMapEntry, HostCallPort};
use rustomp_plugin::image::{machine, testing, TRIPLE_AMDGCN, TRIPLE_NVPTX, TRIPLE_X86_64};
use rustomp_plugin::layout::IndirectTable;
use rustomp_plugin::{
    AllocKind, Device, ErrorKind, ImageInfo, LaunchConfig, LoadedImage, Plugin, Result,
};
use std::collections::HashMap;
use std::ffi::CStr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};

/// What the real HSA runtime does, from ROCm's documentation (`hsa.h`, LLVM's AMDGPUUsage) and
/// from runs against a real runtime, with the test that keeps the fake answering so. A GPU run
/// that shows a new behaviour adds a line and a test.
pub const REAL_RUNTIME: &[(&str, &str)] = &[
    (
        "hsa_init without /dev/kfd answers HSA_STATUS_ERROR_OUT_OF_RESOURCES (Debian's ROCr \
         5.2.3 on a machine without an AMD GPU)",
        "real_runtime_without_a_gpu_reports_no_devices",
    ),
    (
        "hsa_executable_get_symbol_by_name answers HSA_STATUS_ERROR_INVALID_SYMBOL_NAME for a \
         name the executable does not define (hsa.h)",
        "kernels_and_variables_are_looked_up_by_kind",
    ),
    (
        "a kernel is the symbol `<name>.kd`, its kernel descriptor, of type \
         HSA_SYMBOL_KIND_KERNEL (code object v3 and later, AMDGPUUsage); the function symbol \
         `<name>` is not an executable symbol",
        "kernels_and_variables_are_looked_up_by_kind",
    ),
    (
        "a kernel that faults completes its dispatch's signal only through the queue's error \
         callback; waiting on the signal alone would hang",
        "a_faulting_kernel_fails_its_launch_instead_of_hanging",
    ),
    (
        "hsa_amd_pointer_info answers HSA_STATUS_SUCCESS for any address: type \
         HSA_EXT_POINTER_TYPE_UNKNOWN for memory the runtime does not know, LOCKED inside a \
         range hsa_amd_memory_lock locked (agent and host base of the range), HSA inside an \
         allocation of one of its pools; it writes no more of the structure than its `size` \
         says (hsa_ext_amd.h)",
        "memory_the_runtime_has_pinned_is_copied_without_locking_it_again",
    ),
    (
        "with hsa_amd_profiling_set_profiler_enabled on a queue its dispatches' completion \
         signals give their start and end in agent ticks (hsa_amd_profiling_get_dispatch_time; \
         zeros for a dispatch run without), converted by \
         hsa_amd_profiling_convert_tick_to_system_domain to the ticks of \
         HSA_SYSTEM_INFO_TIMESTAMP; with hsa_amd_profiling_async_copy_enable an async copy's \
         signal gives them in system ticks (hsa_ext_amd.h)",
        "a_traced_kernel_and_copy_carry_the_devices_timestamps",
    ),
];

#[test]
fn every_real_runtime_behaviour_has_its_test() {
    let source = include_str!("tests.rs");
    for (behaviour, test) in REAL_RUNTIME {
        assert!(
            source.contains(&format!("fn {test}()")),
            "{behaviour}: no test `{test}`"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The fake runtime's world
// ---------------------------------------------------------------------------------------------

/// The host agent; GPU agent `i` is `GPU_AGENT + i`, its ISA `GPU_ISA + i`, and so on.
const CPU_AGENT: u64 = 0x100;
const GPU_AGENT: u64 = 0x200;
const GPU_ISA: u64 = 0x300;
/// The host's fine-grained pool and its fine-grained kernel-argument pool.
const FINE_POOL: u64 = 0x1000;
const KERNARG_POOL: u64 = 0x1001;
/// Each GPU's group-segment (LDS) pool, which the runtime does not allocate from, and its
/// coarse-grained global pool.
const LDS_POOL: u64 = 0x2000;
const COARSE_POOL: u64 = 0x2100;
const HOST_MEMORY: usize = 256 << 30;
const TIMESTAMP_FREQUENCY: u64 = 100_000_000;
const QUEUE_MAX_SIZE: u32 = 131_072;
/// Bytes of code object v5 implicit arguments after a kernel's explicit ones.
const IMPLICIT_ARGS: usize = 256;
/// What the "prints" kernel writes to the `printf` buffer.
const PRINTED: &str = "hello from a fake gfx90a wavefront\n";
/// Waits on a signal that does not change before the fake gives up on a stuck kernel (about
/// two seconds): it then completes the signal and says so in `watchdog_fired`, so that a
/// plugin that never sees a kernel finish fails its test instead of hanging it.
const WATCHDOG_WAITS: u32 = 2000;

/// ELF `e_flags` of code objects: gfx90a (xnack and sramecc "any"), gfx90a:xnack+, gfx942.
const GFX90A: u32 = 0x53f;
const GFX90A_XNACK_ON: u32 = 0x73f;
const GFX942: u32 = 0x54c;

/// A GPU agent of the fake runtime.
#[derive(Clone)]
struct FakeGpu {
    name: &'static str,
    product: &'static str,
    isa: &'static str,
    compute_units: u32,
    waves_per_cu: u32,
    memory: usize,
}

const MI210: FakeGpu = FakeGpu {
    name: "gfx90a",
    product: "Fake MI210",
    isa: "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-",
    compute_units: 104,
    waves_per_cu: 32,
    memory: 64 << 30,
};

const MI300X: FakeGpu = FakeGpu {
    name: "gfx942",
    product: "Fake MI300X",
    isa: "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-",
    compute_units: 304,
    waves_per_cu: 32,
    memory: 192 << 30,
};

/// A kernel of a fake code object. Its kernel-argument segment is `explicit_args` 64-bit
/// values followed by the implicit block.
#[derive(Clone, Debug)]
struct KernelSpec {
    name: String,
    explicit_args: usize,
    group: u32,
    private: u32,
    dynamic_stack: bool,
}

impl KernelSpec {
    fn kernarg_size(&self) -> u32 {
        (self.explicit_args * 8 + IMPLICIT_ARGS) as u32
    }
}

fn kernel(name: &str, explicit_args: usize) -> KernelSpec {
    KernelSpec {
        name: name.into(),
        explicit_args,
        group: 0,
        private: 0,
        dynamic_stack: false,
    }
}

/// What the next code object handed to the runtime contains.
#[derive(Clone, Default)]
struct ModuleSpec {
    /// Name and initial contents.
    globals: Vec<(String, Vec<u8>)>,
    kernels: Vec<KernelSpec>,
}

#[derive(Default)]
struct FakeExecutable {
    agent: u64,
    frozen: bool,
    /// name -> (address, size)
    globals: HashMap<String, (u64, usize)>,
    /// name -> kernel object
    kernels: HashMap<String, u64>,
}

#[derive(Clone, Copy)]
enum FakeSymbol {
    Variable { address: u64, size: usize },
    Kernel { object: u64 },
}

#[derive(Clone, Copy)]
struct FakeQueue {
    /// The `hsa_queue_t` handed to the plugin and its ring of `size` packets.
    queue: usize,
    ring: usize,
    size: u32,
    doorbell: u64,
    write: u64,
    read: u64,
    on_error: QueueErrorCallback,
    data: usize,
}

/// One packet the packet processor ran.
#[derive(Clone, Debug)]
struct Dispatch {
    kernel: String,
    packet: KernelDispatchPacket,
    /// The kernel's whole kernel-argument segment.
    kernarg: Vec<u8>,
    /// For kernels with explicit arguments: the 16 bytes the first one (the launch
    /// environment) points to, when the kernel ran.
    launch_env: Option<Vec<u8>>,
}

/// One `hsa_amd_memory_async_copy`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Transfer {
    dst: u64,
    dst_agent: u64,
    src: u64,
    src_agent: u64,
    bytes: usize,
}

#[derive(Default)]
struct Fake {
    gpus: Vec<FakeGpu>,
    /// Fail the next call of this entry point with this status.
    fail: Option<(&'static str, Status)>,
    /// `hsa_amd_memory_lock` refuses every range (the plugin must stage).
    lock_fails: bool,
    inits: u32,
    next_handle: u64,
    next_module: ModuleSpec,
    /// Live allocations: address -> (pool, bytes); and every allocation ever made.
    allocs: HashMap<u64, (u64, usize)>,
    allocated: Vec<(u64, usize)>,
    /// `hsa_amd_agents_allow_access` calls: (agents, address).
    allowed: Vec<(Vec<u64>, u64)>,
    /// Locked host ranges (address -> bytes) and every address ever locked.
    locked: HashMap<u64, usize>,
    locks: Vec<u64>,
    copies: Vec<Transfer>,
    signals: HashMap<u64, SignalValue>,
    queues: Vec<FakeQueue>,
    /// (agent, size, type) of every `hsa_queue_create`.
    queues_created: Vec<(u64, u32, u32)>,
    readers: HashMap<u64, ModuleSpec>,
    readers_created: usize,
    executables: HashMap<u64, FakeExecutable>,
    executables_destroyed: usize,
    symbols: HashMap<u64, FakeSymbol>,
    /// kernel object -> (executable, kernel)
    kernel_objects: HashMap<u64, (u64, KernelSpec)>,
    dispatches: Vec<Dispatch>,
    /// A "calls_host" kernel's completion signal and port, until the plugin served the call.
    host_call_pending: Option<(u64, u64)>,
    host_calls_completed: usize,
    waits: u32,
    watchdog_fired: bool,
    /// Every name asked of `hsa_executable_get_symbol_by_name`, in order.
    symbol_lookups: Vec<String>,
    /// Profiling switched on: dispatches (any queue), async copies.
    profiled_dispatches: bool,
    profiled_copies: bool,
    /// Stamps by completion signal: (start, end) in system ticks, for dispatches and copies
    /// started while their profiling was on.
    stamps: HashMap<u64, (u64, u64)>,
}

/// The fake's system clock: the host's monotonic clock in ticks of [`TIMESTAMP_FREQUENCY`].
fn system_ticks() -> u64 {
    rustomp_plugin::monotonic_ns() / (1_000_000_000 / TIMESTAMP_FREQUENCY)
}
/// The fake GPU's ticks: another rate and origin than the system's, as a real agent's may be.
const AGENT_TICK_ORIGIN: u64 = 1000;
fn agent_ticks(system: u64) -> u64 {
    system * 3 + AGENT_TICK_ORIGIN
}

impl Fake {
    fn new_handle(&mut self) -> u64 {
        self.next_handle += 1;
        0x10_0000 + self.next_handle
    }

    /// The GPU whose agent (or ISA, or pool: pass the base) is `handle`.
    fn gpu_at(&self, handle: u64, base: u64) -> Option<&FakeGpu> {
        self.gpus
            .get(usize::try_from(handle.checked_sub(base)?).ok()?)
    }

    /// (segment, global flags, runtime may allocate, size) of a pool.
    fn pool(&self, pool: u64) -> Option<(u32, u32, bool, usize)> {
        let fine = global_flag::FINE_GRAINED;
        match pool {
            FINE_POOL => Some((segment::GLOBAL, fine, true, HOST_MEMORY)),
            KERNARG_POOL => Some((
                segment::GLOBAL,
                fine | global_flag::KERNARG_INIT,
                true,
                HOST_MEMORY,
            )),
            _ => {
                if let Some(gpu) = self.gpu_at(pool, COARSE_POOL) {
                    return Some((
                        segment::GLOBAL,
                        global_flag::COARSE_GRAINED,
                        true,
                        gpu.memory,
                    ));
                }
                self.gpu_at(pool, LDS_POOL)
                    .map(|_| (segment::GROUP, 0, false, 64 << 10))
            }
        }
    }

    /// Whether the GPU's copy engine reaches `[address, address + bytes)`: a live allocation,
    /// a locked host range or a global of a loaded code object.
    fn reachable(&self, address: u64, bytes: usize) -> bool {
        let end = address + bytes as u64;
        let within =
            |(&start, &size): (&u64, &usize)| start <= address && end <= start + size as u64;
        self.allocs.iter().map(|(a, (_, s))| (a, s)).any(within)
            || self.locked.iter().any(within)
            || self
                .executables
                .values()
                .flat_map(|e| e.globals.values())
                .any(|(a, s)| within((a, s)))
    }

    fn global(&self, executable: u64, name: &str) -> Option<(u64, usize)> {
        self.executables
            .get(&executable)?
            .globals
            .get(name)
            .copied()
    }

    fn queue(&mut self, queue: usize) -> Option<&mut FakeQueue> {
        self.queues.iter_mut().find(|q| q.queue == queue)
    }

    /// The packet processor's (or copy engine's) "done": a signal's value drops by one.
    fn complete(&mut self, signal: u64) {
        if let Some(value) = self.signals.get_mut(&signal) {
            *value -= 1;
        }
        if let Some(stamp) = self.stamps.get_mut(&signal) {
            stamp.1 = system_ticks();
        }
    }

    /// A signal's value; a "calls_host" kernel finishes once its call was served.
    fn load(&mut self, signal: u64) -> SignalValue {
        if let Some((waiting, port)) = self.host_call_pending {
            // SAFETY: the port is the plugin's host allocation, alive while the image is loaded;
            // its state is only accessed atomically.
            let state =
                unsafe { AtomicU32::from_ptr(&raw mut (*(port as *mut HostCallPort)).state) };
            if waiting == signal && state.load(Ordering::Acquire) == host_call_state::DONE {
                self.host_call_pending = None;
                self.host_calls_completed += 1;
                self.complete(signal);
            }
        }
        self.signals.get(&signal).copied().unwrap_or(0)
    }
}

static FAKE: Mutex<Option<Fake>> = Mutex::new(None);
/// Tests share the fake runtime (and the process's stdout): one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn with<T>(f: impl FnOnce(&mut Fake) -> T) -> T {
    let mut fake = FAKE.lock().unwrap_or_else(|e| e.into_inner());
    f(fake.as_mut().expect("fake runtime installed"))
}

/// `Some(status)` when the test asked `call` to fail now (once).
fn failing(call: &'static str) -> Option<Status> {
    with(|f| match f.fail {
        Some((c, status)) if c == call => {
            f.fail = None;
            Some(status)
        }
        _ => None,
    })
}

/// Fails the entry point now when the test asked for it (see [`failing`]).
macro_rules! fail_point {
    ($call:literal) => {
        if let Some(status) = failing($call) {
            return status;
        }
    };
}

/// Success, or `error` when the handle was not the runtime's.
fn outcome(known: bool, error: Status) -> Status {
    if known {
        STATUS_SUCCESS
    } else {
        error
    }
}

/// Fake memory: 8-byte aligned host memory of at least `bytes`, never moved.
fn leak(bytes: usize) -> u64 {
    Box::leak(vec![0u64; bytes.div_ceil(8).max(1)].into_boxed_slice()).as_mut_ptr() as u64
}

/// # Safety
/// `address` came from `leak(bytes)` and is not used afterwards.
unsafe fn unleak(address: u64, bytes: usize) {
    let words = bytes.div_ceil(8).max(1);
    // SAFETY: the caller's contract: the pointer and length `leak` produced.
    drop(unsafe {
        Box::from_raw(std::ptr::slice_from_raw_parts_mut(
            address as *mut u64,
            words,
        ))
    });
}

/// # Safety
/// `address` is readable for `len` bytes.
unsafe fn bytes_at(address: u64, len: usize) -> Vec<u8> {
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(address as *const u8, len) }.to_vec()
}

/// One answer of an `*_get_info` query, in the type the headers document for the attribute.
enum Info {
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    Size(usize),
    Name([u8; 64]),
    Dims16([u16; 3]),
    Dims32([u32; 3]),
}

fn fixed_name(text: &str) -> Info {
    let mut name = [0u8; 64];
    name[..text.len()].copy_from_slice(text.as_bytes());
    Info::Name(name)
}

/// Writes `info` to the caller's `out`, or says the attribute is unknown.
///
/// # Safety
/// `out` is valid for a write of the type of the attribute queried.
unsafe fn answer(info: Option<Info>, out: *mut c_void) -> Status {
    let Some(info) = info else {
        return STATUS_ERROR_INVALID_ARGUMENT;
    };
    // SAFETY: the caller's contract; the plugin passes a live value of the attribute's type.
    unsafe {
        match info {
            Info::U8(v) => out.cast::<u8>().write(v),
            Info::U16(v) => out.cast::<u16>().write(v),
            Info::U32(v) => out.cast::<u32>().write(v),
            Info::U64(v) => out.cast::<u64>().write(v),
            Info::Size(v) => out.cast::<usize>().write(v),
            Info::Name(v) => out.cast::<[u8; 64]>().write(v),
            Info::Dims16(v) => out.cast::<[u16; 3]>().write(v),
            Info::Dims32(v) => out.cast::<[u32; 3]>().write(v),
        }
    }
    STATUS_SUCCESS
}

/// Hands `value` out through the caller's `out`, or returns the error.
///
/// # Safety
/// `out` is valid for a write of `T`.
unsafe fn give<T>(out: *mut T, value: std::result::Result<T, Status>) -> Status {
    match value {
        Ok(value) => {
            // SAFETY: the caller's contract.
            unsafe { out.write(value) };
            STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

/// Calls `callback(item, data)` for each item, stopping at the first status but success (an
/// HSA iterator).
///
/// # Safety
/// `callback` and `data` are the plugin's, valid for items of type `T`.
unsafe fn iterate<T: Copy>(
    items: Vec<T>,
    callback: Option<unsafe extern "C" fn(T, *mut c_void) -> Status>,
    data: *mut c_void,
) -> Status {
    let Some(callback) = callback else {
        return STATUS_ERROR_INVALID_ARGUMENT;
    };
    for item in items {
        // SAFETY: the caller's contract.
        let status = unsafe { callback(item, data) };
        if status != STATUS_SUCCESS {
            return status;
        }
    }
    STATUS_SUCCESS
}

// ---------------------------------------------------------------------------------------------
// Entry points: system, agents, ISAs, pools
// ---------------------------------------------------------------------------------------------

unsafe extern "C" fn hsa_init() -> Status {
    fail_point!("hsa_init");
    with(|f| f.inits += 1);
    STATUS_SUCCESS
}

unsafe extern "C" fn hsa_shut_down() -> Status {
    STATUS_SUCCESS
}

unsafe extern "C" fn hsa_status_string(status: Status, out: *mut *const c_char) -> Status {
    let text: &'static CStr = match status {
        STATUS_ERROR_OUT_OF_RESOURCES => c"HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.",
        STATUS_ERROR_INVALID_ARGUMENT => c"HSA_STATUS_ERROR_INVALID_ARGUMENT: One of the actual arguments does not meet a precondition.",
        STATUS_ERROR_EXCEPTION => c"HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception.",
        _ => return STATUS_ERROR_INVALID_ARGUMENT,
    };
    // SAFETY: the plugin passes a live out-pointer.
    unsafe { out.write(text.as_ptr()) };
    STATUS_SUCCESS
}

unsafe extern "C" fn hsa_system_get_info(attribute: u32, out: *mut c_void) -> Status {
    fail_point!("hsa_system_get_info");
    let info = match attribute {
        system_info::TIMESTAMP_FREQUENCY => Some(Info::U64(TIMESTAMP_FREQUENCY)),
        system_info::TIMESTAMP => Some(Info::U64(system_ticks())),
        system_info::VERSION_MAJOR => Some(Info::U16(1)),
        system_info::VERSION_MINOR => Some(Info::U16(14)),
        _ => None,
    };
    // SAFETY: the plugin passes a value of the attribute's type.
    unsafe { answer(info, out) }
}

unsafe extern "C" fn hsa_iterate_agents(callback: AgentCallback, data: *mut c_void) -> Status {
    fail_point!("hsa_iterate_agents");
    let agents = with(|f| {
        (0..f.gpus.len() as u64).map(|i| Agent {
            handle: GPU_AGENT + i,
        })
    });
    let agents = std::iter::once(Agent { handle: CPU_AGENT })
        .chain(agents)
        .collect();
    // SAFETY: the plugin's callback and data.
    unsafe { iterate(agents, callback, data) }
}

unsafe extern "C" fn hsa_agent_get_info(agent: Agent, attribute: u32, out: *mut c_void) -> Status {
    fail_point!("hsa_agent_get_info");
    let info = with(|f| {
        if agent.handle == CPU_AGENT {
            return match attribute {
                agent_info::DEVICE => Some(Info::U32(device_type::CPU)),
                agent_info::FEATURE => Some(Info::U32(0)),
                _ => None,
            };
        }
        let gpu = f.gpu_at(agent.handle, GPU_AGENT)?;
        Some(match attribute {
            agent_info::DEVICE => Info::U32(device_type::GPU),
            agent_info::FEATURE => Info::U32(agent_feature::KERNEL_DISPATCH),
            agent_info::NAME => fixed_name(gpu.name),
            amd_agent_info::PRODUCT_NAME => fixed_name(gpu.product),
            agent_info::WAVEFRONT_SIZE => Info::U32(64),
            agent_info::WORKGROUP_MAX_DIM => Info::Dims16([1024; 3]),
            agent_info::GRID_MAX_DIM => Info::Dims32([u32::MAX; 3]),
            agent_info::QUEUE_MAX_SIZE => Info::U32(QUEUE_MAX_SIZE),
            amd_agent_info::COMPUTE_UNIT_COUNT => Info::U32(gpu.compute_units),
            amd_agent_info::MAX_WAVES_PER_CU => Info::U32(gpu.waves_per_cu),
            _ => return None,
        })
    });
    // SAFETY: the plugin passes a value of the attribute's type.
    unsafe { answer(info, out) }
}

unsafe extern "C" fn hsa_agent_iterate_isas(
    agent: Agent,
    callback: IsaCallback,
    data: *mut c_void,
) -> Status {
    fail_point!("hsa_agent_iterate_isas");
    let isas = with(|f| {
        f.gpu_at(agent.handle, GPU_AGENT).map(|_| Isa {
            handle: agent.handle - GPU_AGENT + GPU_ISA,
        })
    });
    // SAFETY: the plugin's callback and data.
    unsafe { iterate(isas.into_iter().collect(), callback, data) }
}

unsafe extern "C" fn hsa_isa_get_info_alt(isa: Isa, attribute: u32, out: *mut c_void) -> Status {
    fail_point!("hsa_isa_get_info_alt");
    let Some(name) = with(|f| f.gpu_at(isa.handle, GPU_ISA).map(|g| g.isa)) else {
        return STATUS_ERROR_INVALID_ISA;
    };
    match attribute {
        isa_info::NAME_LENGTH => {
            // SAFETY: the plugin passes a u32.
            unsafe { answer(Some(Info::U32(name.len() as u32)), out) }
        }
        isa_info::NAME => {
            // SAFETY: the plugin's buffer holds NAME_LENGTH bytes; no NUL is written.
            unsafe { std::ptr::copy_nonoverlapping(name.as_ptr(), out as *mut u8, name.len()) };
            STATUS_SUCCESS
        }
        _ => STATUS_ERROR_INVALID_ARGUMENT,
    }
}

unsafe extern "C" fn hsa_amd_agent_iterate_memory_pools(
    agent: Agent,
    callback: MemoryPoolCallback,
    data: *mut c_void,
) -> Status {
    fail_point!("hsa_amd_agent_iterate_memory_pools");
    let pools = match agent.handle {
        CPU_AGENT => vec![FINE_POOL, KERNARG_POOL],
        gpu => vec![gpu - GPU_AGENT + LDS_POOL, gpu - GPU_AGENT + COARSE_POOL],
    };
    // SAFETY: the plugin's callback and data.
    unsafe {
        iterate(
            pools
                .into_iter()
                .map(|handle| MemoryPool { handle })
                .collect(),
            callback,
            data,
        )
    }
}

unsafe extern "C" fn hsa_amd_memory_pool_get_info(
    pool: MemoryPool,
    attribute: u32,
    out: *mut c_void,
) -> Status {
    fail_point!("hsa_amd_memory_pool_get_info");
    let info =
        with(|f| f.pool(pool.handle)).and_then(
            |(segment, flags, allocatable, size)| match attribute {
                pool_info::SEGMENT => Some(Info::U32(segment)),
                pool_info::GLOBAL_FLAGS => Some(Info::U32(flags)),
                pool_info::RUNTIME_ALLOC_ALLOWED => Some(Info::U8(u8::from(allocatable))),
                pool_info::SIZE => Some(Info::Size(size)),
                _ => None,
            },
        );
    // SAFETY: the plugin passes a value of the attribute's type.
    unsafe { answer(info, out) }
}

// ---------------------------------------------------------------------------------------------
// Entry points: memory
// ---------------------------------------------------------------------------------------------

unsafe extern "C" fn hsa_amd_memory_pool_allocate(
    pool: MemoryPool,
    bytes: usize,
    _flags: u32,
    out: *mut *mut c_void,
) -> Status {
    fail_point!("hsa_amd_memory_pool_allocate");
    let address = with(|f| match f.pool(pool.handle) {
        Some((_, _, true, _)) => {
            let address = leak(bytes);
            f.allocs.insert(address, (pool.handle, bytes));
            f.allocated.push((pool.handle, bytes));
            Ok(address as *mut c_void)
        }
        _ => Err(STATUS_ERROR_INVALID_ARGUMENT),
    });
    // SAFETY: the plugin passes a live out-pointer.
    unsafe { give(out, address) }
}

unsafe extern "C" fn hsa_amd_memory_pool_free(address: *mut c_void) -> Status {
    fail_point!("hsa_amd_memory_pool_free");
    match with(|f| f.allocs.remove(&(address as u64))) {
        Some((_, bytes)) => {
            // SAFETY: allocated by `leak(bytes)`, removed from the live table above.
            unsafe { unleak(address as u64, bytes) };
            STATUS_SUCCESS
        }
        None => STATUS_ERROR_INVALID_ARGUMENT,
    }
}

unsafe extern "C" fn hsa_amd_agents_allow_access(
    count: u32,
    agents: *const Agent,
    _flags: *const u32,
    address: *const c_void,
) -> Status {
    fail_point!("hsa_amd_agents_allow_access");
    // SAFETY: the plugin passes `count` agents.
    let agents = unsafe { std::slice::from_raw_parts(agents, count as usize) }
        .iter()
        .map(|a| a.handle)
        .collect();
    with(|f| {
        if !f.allocs.contains_key(&(address as u64)) {
            return STATUS_ERROR_INVALID_ARGUMENT;
        }
        f.allowed.push((agents, address as u64));
        STATUS_SUCCESS
    })
}

unsafe extern "C" fn hsa_amd_memory_lock(
    host: *mut c_void,
    bytes: usize,
    _agents: *mut Agent,
    _count: c_int,
    agent_address: *mut *mut c_void,
) -> Status {
    fail_point!("hsa_amd_memory_lock");
    if with(|f| f.lock_fails) {
        return STATUS_ERROR;
    }
    with(|f| {
        f.locked.insert(host as u64, bytes);
        f.locks.push(host as u64);
    });
    // SAFETY: the plugin passes a live out-pointer; the GPU sees host memory at its address.
    unsafe { agent_address.write(host) };
    STATUS_SUCCESS
}

unsafe extern "C" fn hsa_amd_profiling_set_profiler_enabled(
    _queue: *mut Queue,
    enable: c_int,
) -> Status {
    fail_point!("hsa_amd_profiling_set_profiler_enabled");
    with(|f| f.profiled_dispatches = enable != 0);
    STATUS_SUCCESS
}

unsafe extern "C" fn hsa_amd_profiling_async_copy_enable(enable: bool) -> Status {
    fail_point!("hsa_amd_profiling_async_copy_enable");
    with(|f| f.profiled_copies = enable);
    STATUS_SUCCESS
}

/// Zeros for a dispatch run while profiling was off, as ROCr's.
unsafe extern "C" fn hsa_amd_profiling_get_dispatch_time(
    _agent: Agent,
    signal: Signal,
    time: *mut ProfilingTime,
) -> Status {
    fail_point!("hsa_amd_profiling_get_dispatch_time");
    let (start, end) = with(|f| f.stamps.get(&signal.handle).copied()).unwrap_or((0, 0));
    let ticks = |t: u64| if t == 0 { 0 } else { agent_ticks(t) };
    // SAFETY: the plugin's out-value.
    unsafe {
        *time = ProfilingTime {
            start: ticks(start),
            end: ticks(end),
        }
    };
    STATUS_SUCCESS
}

unsafe extern "C" fn hsa_amd_profiling_get_async_copy_time(
    signal: Signal,
    time: *mut ProfilingTime,
) -> Status {
    fail_point!("hsa_amd_profiling_get_async_copy_time");
    let (start, end) = with(|f| f.stamps.get(&signal.handle).copied()).unwrap_or((0, 0));
    // SAFETY: the plugin's out-value.
    unsafe { *time = ProfilingTime { start, end } };
    STATUS_SUCCESS
}

unsafe extern "C" fn hsa_amd_profiling_convert_tick_to_system_domain(
    _agent: Agent,
    tick: u64,
    system: *mut u64,
) -> Status {
    // SAFETY: the plugin's out-value.
    unsafe { *system = tick.saturating_sub(AGENT_TICK_ORIGIN) / 3 };
    STATUS_SUCCESS
}

/// As ROCr answers: LOCKED inside a locked range, HSA inside an allocation of one of its pools
/// (host pools reached at the same address by host and GPU), UNKNOWN (and success) elsewhere.
unsafe extern "C" fn hsa_amd_pointer_info(
    address: *const c_void,
    info: *mut PointerInfo,
    _alloc: Option<unsafe extern "C" fn(usize) -> *mut c_void>,
    _count: *mut u32,
    _accessible: *mut *mut Agent,
) -> Status {
    fail_point!("hsa_amd_pointer_info");
    let address = address as u64;
    let holding = |start: u64, bytes: usize| address >= start && address < start + bytes as u64;
    let found = with(|f| {
        if let Some((&start, &bytes)) = f.locked.iter().find(|(&a, &n)| holding(a, n)) {
            return Some((pointer_type::LOCKED, start, bytes, true));
        }
        f.allocs
            .iter()
            .find(|(&a, &(_, n))| holding(a, n))
            .map(|(&start, &(pool, bytes))| {
                let host = matches!(pool, FINE_POOL | KERNARG_POOL);
                (pointer_type::HSA, start, bytes, host)
            })
    });
    // SAFETY: the plugin passes a live, sized structure.
    let info = unsafe { &mut *info };
    info.kind = pointer_type::UNKNOWN;
    if let Some((kind, start, bytes, host)) = found {
        info.kind = kind;
        info.agent_base_address = start as *mut c_void;
        info.host_base_address = if host {
            start as *mut c_void
        } else {
            std::ptr::null_mut()
        };
        info.size_in_bytes = bytes;
    }
    STATUS_SUCCESS
}

unsafe extern "C" fn hsa_amd_memory_unlock(host: *mut c_void) -> Status {
    fail_point!("hsa_amd_memory_unlock");
    let known = with(|f| f.locked.remove(&(host as u64)).is_some());
    outcome(known, STATUS_ERROR_INVALID_ARGUMENT)
}

#[allow(
    clippy::too_many_arguments,
    reason = "hsa_amd_memory_async_copy's own signature"
)]
unsafe extern "C" fn hsa_amd_memory_async_copy(
    dst: *mut c_void,
    dst_agent: Agent,
    src: *const c_void,
    src_agent: Agent,
    bytes: usize,
    _dependencies: u32,
    _depends_on: *const Signal,
    signal: Signal,
) -> Status {
    fail_point!("hsa_amd_memory_async_copy");
    let (dst, src) = (dst as u64, src as u64);
    let reachable = with(|f| {
        f.reachable(dst, bytes) && f.reachable(src, bytes) && f.signals.contains_key(&signal.handle)
    });
    if !reachable {
        return STATUS_ERROR_INVALID_ARGUMENT;
    }
    with(|f| {
        if f.profiled_copies {
            f.stamps.insert(signal.handle, (system_ticks(), 0));
        }
    });
    // SAFETY: both ranges are fake device memory, locked or allocated host memory (checked).
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
    with(|f| {
        f.copies.push(Transfer {
            dst,
            dst_agent: dst_agent.handle,
            src,
            src_agent: src_agent.handle,
            bytes,
        });
        f.complete(signal.handle);
    });
    STATUS_SUCCESS
}

// ---------------------------------------------------------------------------------------------
// Entry points: signals and queues; the packet processor
// ---------------------------------------------------------------------------------------------

unsafe extern "C" fn hsa_signal_create(
    initial: SignalValue,
    _consumers: u32,
    _agents: *const Agent,
    out: *mut Signal,
) -> Status {
    fail_point!("hsa_signal_create");
    let handle = with(|f| {
        let handle = f.new_handle();
        f.signals.insert(handle, initial);
        Ok(Signal { handle })
    });
    // SAFETY: the plugin passes a live out-pointer.
    unsafe { give(out, handle) }
}

unsafe extern "C" fn hsa_signal_destroy(signal: Signal) -> Status {
    fail_point!("hsa_signal_destroy");
    let known = with(|f| f.signals.remove(&signal.handle).is_some());
    outcome(known, STATUS_ERROR_INVALID_SIGNAL)
}

/// A store; on a queue's doorbell, the packet processor runs every packet up to `value`.
fn store(signal: Signal, value: SignalValue) {
    let queue = with(|f| {
        if let Some(v) = f.signals.get_mut(&signal.handle) {
            *v = value;
        }
        f.queues
            .iter()
            .find(|q| q.doorbell == signal.handle)
            .copied()
    });
    let Some(queue) = queue else {
        return;
    };
    while let Some(read) =
        with(|f| f.queue(queue.queue).map(|q| q.read)).filter(|&read| read <= value as u64)
    {
        // SAFETY: a live fake queue; the plugin rang its doorbell for the slots up to `value`.
        if !unsafe { process(queue, read) } {
            break;
        }
    }
}

unsafe extern "C" fn hsa_signal_store_relaxed(signal: Signal, value: SignalValue) {
    store(signal, value);
}

unsafe extern "C" fn hsa_signal_store_screlease(signal: Signal, value: SignalValue) {
    store(signal, value);
}

unsafe extern "C" fn hsa_signal_load_scacquire(signal: Signal) -> SignalValue {
    with(|f| f.load(signal.handle))
}

unsafe extern "C" fn hsa_signal_wait_scacquire(
    signal: Signal,
    condition: u32,
    compare: SignalValue,
    _timeout: u64,
    _state: u32,
) -> SignalValue {
    let holds = |value: SignalValue| match condition {
        signal_condition::EQ => value == compare,
        signal_condition::NE => value != compare,
        signal_condition::LT => value < compare,
        _ => value >= compare,
    };
    let value = with(|f| f.load(signal.handle));
    if holds(value) {
        return value;
    }
    let gave_up = with(|f| {
        f.waits += 1;
        if f.waits < WATCHDOG_WAITS {
            return false;
        }
        f.watchdog_fired = true;
        f.signals.insert(signal.handle, 0);
        true
    });
    if !gave_up {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    with(|f| f.load(signal.handle))
}

#[allow(
    clippy::too_many_arguments,
    reason = "hsa_queue_create's own signature"
)]
unsafe extern "C" fn hsa_queue_create(
    agent: Agent,
    size: u32,
    kind: u32,
    on_error: QueueErrorCallback,
    data: *mut c_void,
    _private_segment_size: u32,
    _group_segment_size: u32,
    out: *mut *mut Queue,
) -> Status {
    fail_point!("hsa_queue_create");
    let is_gpu = with(|f| f.gpu_at(agent.handle, GPU_AGENT).is_some());
    if !is_gpu || !size.is_power_of_two() || size > QUEUE_MAX_SIZE {
        return STATUS_ERROR_INVALID_ARGUMENT;
    }
    let idle = KernelDispatchPacket {
        header: packet::PACKET_TYPE_INVALID,
        ..Default::default()
    };
    let ring = Box::leak(vec![idle; size as usize].into_boxed_slice()).as_mut_ptr();
    let queue = with(|f| {
        let doorbell = f.new_handle();
        f.signals.insert(doorbell, 0);
        let queue = Box::into_raw(Box::new(Queue {
            type_: kind,
            features: 1,
            base_address: ring as *mut c_void,
            doorbell_signal: Signal { handle: doorbell },
            size,
            reserved1: 0,
            id: f.queues_created.len() as u64,
        }));
        f.queues.push(FakeQueue {
            queue: queue as usize,
            ring: ring as usize,
            size,
            doorbell,
            write: 0,
            read: 0,
            on_error,
            data: data as usize,
        });
        f.queues_created.push((agent.handle, size, kind));
        queue
    });
    // SAFETY: the plugin passes a live out-pointer.
    unsafe { out.write(queue) };
    STATUS_SUCCESS
}

unsafe extern "C" fn hsa_queue_destroy(queue: *mut Queue) -> Status {
    fail_point!("hsa_queue_destroy");
    let Some(q) = with(|f| {
        let index = f.queues.iter().position(|q| q.queue == queue as usize)?;
        let q = f.queues.remove(index);
        f.signals.remove(&q.doorbell);
        Some(q)
    }) else {
        return STATUS_ERROR_INVALID_QUEUE;
    };
    // SAFETY: made in `hsa_queue_create` as a leaked box and a leaked slice of `size` packets,
    // removed from the table above.
    unsafe {
        drop(Box::from_raw(queue));
        drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
            q.ring as *mut KernelDispatchPacket,
            q.size as usize,
        )));
    }
    STATUS_SUCCESS
}

unsafe extern "C" fn hsa_queue_add_write_index_relaxed(queue: *const Queue, value: u64) -> u64 {
    with(|f| {
        f.queue(queue as usize).map_or(0, |q| {
            q.write += value;
            q.write - value
        })
    })
}

unsafe extern "C" fn hsa_queue_load_read_index_scacquire(queue: *const Queue) -> u64 {
    with(|f| f.queue(queue as usize).map_or(0, |q| q.read))
}

/// The packet processor: runs the packet at `index` of `queue` if the plugin published it
/// (its header says kernel dispatch). Returns whether it consumed one.
///
/// # Safety
/// `queue` is a live fake queue.
unsafe fn process(queue: FakeQueue, index: u64) -> bool {
    let slot = (queue.ring as *mut KernelDispatchPacket)
        .wrapping_add((index % u64::from(queue.size)) as usize);
    // SAFETY: a slot of the live ring; the plugin publishes its header and setup atomically.
    let header = unsafe { AtomicU32::from_ptr(slot as *mut u32) };
    if header.load(Ordering::Acquire) & 0xff != u32::from(packet::PACKET_TYPE_KERNEL_DISPATCH) {
        return false;
    }
    // SAFETY: a published packet: its body was written before its header.
    let packet = unsafe { slot.read() };
    header.store(u32::from(packet::PACKET_TYPE_INVALID), Ordering::Release);
    let kernel = with(|f| {
        if let Some(q) = f.queue(queue.queue) {
            q.read = index + 1;
        }
        f.kernel_objects.get(&packet.kernel_object).cloned()
    });
    let Some((executable, spec)) = kernel else {
        return true;
    };
    with(|f| {
        if f.profiled_dispatches {
            f.stamps
                .insert(packet.completion_signal.handle, (system_ticks(), 0));
        }
    });
    // SAFETY: the plugin's kernel-argument buffer holds the kernel's segment.
    let kernarg = unsafe { bytes_at(packet.kernarg_address, spec.kernarg_size() as usize) };
    // SAFETY: the first explicit argument is the launch environment, 16 bytes of device memory.
    let launch_env = (spec.explicit_args > 0).then(|| unsafe { bytes_at(u64_at(&kernarg, 0), 16) });
    with(|f| {
        f.dispatches.push(Dispatch {
            kernel: spec.name.clone(),
            packet,
            kernarg,
            launch_env,
        })
    });
    let signal = packet.completion_signal.handle;
    match spec.name.as_str() {
        // SAFETY: the image's printf buffer, fake device memory.
        "prints" => unsafe { print_to_buffer(executable) },
        "calls_host" => {
            // SAFETY: the image's port, the plugin's host allocation.
            unsafe { post_host_call(executable, signal) };
            return true;
        }
        "faults" => {
            // A hardware exception: the runtime reports it through the queue's error callback and
            // the packet never completes.
            if let Some(on_error) = queue.on_error {
                // SAFETY: the plugin's callback with the data it registered for this queue.
                unsafe {
                    on_error(
                        STATUS_ERROR_EXCEPTION,
                        queue.queue as *mut Queue,
                        queue.data as *mut c_void,
                    )
                };
            }
            return true;
        }
        _ => {}
    }
    with(|f| f.complete(signal));
    true
}

/// The device runtime's `printf`: appends [`PRINTED`] to `__rustomp_printf_buffer` (u32
/// cursor, u32 truncated count, then the text).
///
/// # Safety
/// The executable's globals are live fake device memory.
unsafe fn print_to_buffer(executable: u64) {
    let Some((address, size)) = with(|f| f.global(executable, "__rustomp_printf_buffer")) else {
        return;
    };
    let text = PRINTED.as_bytes();
    // SAFETY: the global holds `size` bytes: the 8-byte header and the text area.
    unsafe {
        let cursor = (address as *const u32).read() as usize;
        let end = (cursor + text.len()).min(size - 8);
        std::ptr::copy_nonoverlapping(
            text.as_ptr(),
            (address as *mut u8).add(8 + cursor),
            end - cursor,
        );
        (address as *mut u32).write(end as u32);
    }
}

/// The host side's `add_pair(data)`: the sum of two u64.
unsafe extern "C" fn add_pair(data: *mut c_void) -> u64 {
    // SAFETY: the fake kernel passes two u64.
    let pair = unsafe { *(data as *const [u64; 2]) };
    pair[0] + pair[1]
}

/// The device side of `__llvm_omp_host_call`: posts `add_pair(20, 22)` to the port the plugin
/// published; the kernel completes once the plugin served it (see [`Fake::load`]).
///
/// # Safety
/// The executable's port pointer is 0 or the plugin's live port.
unsafe fn post_host_call(executable: u64, signal: u64) {
    let Some((pointer, _)) = with(|f| f.global(executable, "__rustomp_host_call_port")) else {
        return;
    };
    // SAFETY: an 8-byte global of fake device memory.
    let port = unsafe { (pointer as *const u64).read() } as *mut HostCallPort;
    if port.is_null() {
        return;
    }
    // SAFETY: the plugin's port (host memory); the request is written before it is posted.
    unsafe {
        (*port).function = add_pair as unsafe extern "C" fn(*mut c_void) -> u64 as usize as u64;
        (*port).size = 16;
        let data = &mut (*port).data;
        data[..8].copy_from_slice(&20u64.to_ne_bytes());
        data[8..16].copy_from_slice(&22u64.to_ne_bytes());
        AtomicU32::from_ptr(&raw mut (*port).state)
            .store(host_call_state::REQUEST, Ordering::Release);
    }
    with(|f| f.host_call_pending = Some((signal, port as u64)));
}

// ---------------------------------------------------------------------------------------------
// Entry points: code objects, executables, symbols
// ---------------------------------------------------------------------------------------------

unsafe extern "C" fn hsa_code_object_reader_create_from_memory(
    bytes: *const c_void,
    size: usize,
    out: *mut CodeObjectReader,
) -> Status {
    fail_point!("hsa_code_object_reader_create_from_memory");
    // SAFETY: the plugin passes `size` readable bytes.
    if size < 4 || unsafe { std::slice::from_raw_parts(bytes as *const u8, 4) } != b"\x7fELF" {
        return STATUS_ERROR_INVALID_CODE_OBJECT;
    }
    let handle = with(|f| {
        let handle = f.new_handle();
        let spec = f.next_module.clone();
        f.readers.insert(handle, spec);
        f.readers_created += 1;
        Ok(CodeObjectReader { handle })
    });
    // SAFETY: the plugin passes a live out-pointer.
    unsafe { give(out, handle) }
}

unsafe extern "C" fn hsa_code_object_reader_destroy(reader: CodeObjectReader) -> Status {
    fail_point!("hsa_code_object_reader_destroy");
    let known = with(|f| f.readers.remove(&reader.handle).is_some());
    outcome(known, STATUS_ERROR_INVALID_CODE_OBJECT_READER)
}

unsafe extern "C" fn hsa_executable_create_alt(
    _profile: u32,
    _rounding: u32,
    _options: *const c_char,
    out: *mut Executable,
) -> Status {
    fail_point!("hsa_executable_create_alt");
    let handle = with(|f| {
        let handle = f.new_handle();
        f.executables.insert(handle, FakeExecutable::default());
        Ok(Executable { handle })
    });
    // SAFETY: the plugin passes a live out-pointer.
    unsafe { give(out, handle) }
}

/// Loads the reader's module: its globals become fake device memory with their initial
/// contents, its kernels get kernel objects.
unsafe extern "C" fn hsa_executable_load_agent_code_object(
    executable: Executable,
    agent: Agent,
    reader: CodeObjectReader,
    _options: *const c_char,
    out: *mut LoadedCodeObject,
) -> Status {
    fail_point!("hsa_executable_load_agent_code_object");
    let loaded = with(|f| {
        let spec = f
            .readers
            .get(&reader.handle)
            .cloned()
            .ok_or(STATUS_ERROR_INVALID_CODE_OBJECT_READER)?;
        match f.executables.get(&executable.handle) {
            None => return Err(STATUS_ERROR_INVALID_EXECUTABLE),
            Some(e) if e.frozen => return Err(STATUS_ERROR_FROZEN_EXECUTABLE),
            Some(_) => {}
        }
        let mut kernels = HashMap::new();
        for k in spec.kernels {
            let object = f.new_handle() << 8;
            kernels.insert(k.name.clone(), object);
            f.kernel_objects.insert(object, (executable.handle, k));
        }
        let handle = f.new_handle();
        let e = f
            .executables
            .get_mut(&executable.handle)
            .expect("checked above");
        for (name, contents) in spec.globals {
            let address = leak(contents.len());
            // SAFETY: `leak` returned at least contents.len() bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(contents.as_ptr(), address as *mut u8, contents.len())
            };
            e.globals.insert(name, (address, contents.len()));
        }
        e.kernels = kernels;
        e.agent = agent.handle;
        Ok(LoadedCodeObject { handle })
    });
    // SAFETY: the plugin passes a live out-pointer.
    unsafe { give(out, loaded) }
}

unsafe extern "C" fn hsa_executable_freeze(
    executable: Executable,
    _options: *const c_char,
) -> Status {
    fail_point!("hsa_executable_freeze");
    with(|f| match f.executables.get_mut(&executable.handle) {
        Some(e) => {
            e.frozen = true;
            STATUS_SUCCESS
        }
        None => STATUS_ERROR_INVALID_EXECUTABLE,
    })
}

unsafe extern "C" fn hsa_executable_destroy(executable: Executable) -> Status {
    fail_point!("hsa_executable_destroy");
    let Some(e) = with(|f| {
        let e = f.executables.remove(&executable.handle)?;
        f.kernel_objects
            .retain(|_, (owner, _)| *owner != executable.handle);
        f.executables_destroyed += 1;
        Some(e)
    }) else {
        return STATUS_ERROR_INVALID_EXECUTABLE;
    };
    for (address, size) in e.globals.into_values() {
        // SAFETY: made by `leak(size)` at load; the executable is gone.
        unsafe { unleak(address, size) };
    }
    STATUS_SUCCESS
}

/// Variables by name, kernels by `<name>.kd`; a name the executable lacks is an invalid
/// symbol name, as HSA says.
unsafe extern "C" fn hsa_executable_get_symbol_by_name(
    executable: Executable,
    name: *const c_char,
    agent: *const Agent,
    out: *mut ExecutableSymbol,
) -> Status {
    fail_point!("hsa_executable_get_symbol_by_name");
    // SAFETY: the plugin passes a NUL-terminated name and its agent (or null).
    let (name, agent) = unsafe {
        (
            CStr::from_ptr(name).to_string_lossy().into_owned(),
            agent.as_ref().map(|a| a.handle),
        )
    };
    let found = with(|f| {
        f.symbol_lookups.push(name.clone());
        let e = f
            .executables
            .get(&executable.handle)
            .ok_or(STATUS_ERROR_INVALID_EXECUTABLE)?;
        if agent != Some(e.agent) {
            return Err(STATUS_ERROR_INVALID_AGENT);
        }
        let kernel = name
            .strip_suffix(".kd")
            .and_then(|k| e.kernels.get(k))
            .map(|&object| FakeSymbol::Kernel { object });
        let variable = e
            .globals
            .get(&name)
            .map(|&(address, size)| FakeSymbol::Variable { address, size });
        let symbol = kernel
            .or(variable)
            .ok_or(STATUS_ERROR_INVALID_SYMBOL_NAME)?;
        let handle = f.new_handle();
        f.symbols.insert(handle, symbol);
        Ok(ExecutableSymbol { handle })
    });
    // SAFETY: the plugin passes a live out-pointer.
    unsafe { give(out, found) }
}

unsafe extern "C" fn hsa_executable_symbol_get_info(
    symbol: ExecutableSymbol,
    attribute: u32,
    out: *mut c_void,
) -> Status {
    fail_point!("hsa_executable_symbol_get_info");
    let info = with(|f| match *f.symbols.get(&symbol.handle)? {
        FakeSymbol::Variable { address, size } => match attribute {
            symbol_info::TYPE => Some(Info::U32(symbol_kind::VARIABLE)),
            symbol_info::VARIABLE_ADDRESS => Some(Info::U64(address)),
            symbol_info::VARIABLE_SIZE => Some(Info::U32(size as u32)),
            _ => None,
        },
        FakeSymbol::Kernel { object } => {
            let (_, k) = f.kernel_objects.get(&object)?;
            match attribute {
                symbol_info::TYPE => Some(Info::U32(symbol_kind::KERNEL)),
                symbol_info::KERNEL_OBJECT => Some(Info::U64(object)),
                symbol_info::KERNEL_KERNARG_SEGMENT_SIZE => Some(Info::U32(k.kernarg_size())),
                symbol_info::KERNEL_GROUP_SEGMENT_SIZE => Some(Info::U32(k.group)),
                symbol_info::KERNEL_PRIVATE_SEGMENT_SIZE => Some(Info::U32(k.private)),
                symbol_info::KERNEL_DYNAMIC_CALLSTACK => Some(Info::U8(u8::from(k.dynamic_stack))),
                _ => None,
            }
        }
    });
    // SAFETY: the plugin passes a value of the attribute's type.
    unsafe { answer(info, out) }
}

fn api() -> &'static Api {
    static API: Api = Api {
        init: hsa_init,
        shut_down: hsa_shut_down,
        status_string: hsa_status_string,
        system_get_info: hsa_system_get_info,
        iterate_agents: hsa_iterate_agents,
        agent_get_info: hsa_agent_get_info,
        agent_iterate_isas: hsa_agent_iterate_isas,
        isa_get_info_alt: hsa_isa_get_info_alt,
        amd_agent_iterate_memory_pools: hsa_amd_agent_iterate_memory_pools,
        amd_memory_pool_get_info: hsa_amd_memory_pool_get_info,
        amd_memory_pool_allocate: hsa_amd_memory_pool_allocate,
        amd_memory_pool_free: hsa_amd_memory_pool_free,
        amd_agents_allow_access: hsa_amd_agents_allow_access,
        amd_memory_async_copy: hsa_amd_memory_async_copy,
        amd_memory_lock: hsa_amd_memory_lock,
        amd_memory_unlock: hsa_amd_memory_unlock,
        amd_pointer_info: hsa_amd_pointer_info,
        amd_profiling_set_profiler_enabled: hsa_amd_profiling_set_profiler_enabled,
        amd_profiling_async_copy_enable: hsa_amd_profiling_async_copy_enable,
        amd_profiling_get_dispatch_time: hsa_amd_profiling_get_dispatch_time,
        amd_profiling_get_async_copy_time: hsa_amd_profiling_get_async_copy_time,
        amd_profiling_convert_tick_to_system_domain:
            hsa_amd_profiling_convert_tick_to_system_domain,
        signal_create: hsa_signal_create,
        signal_destroy: hsa_signal_destroy,
        signal_store_screlease: hsa_signal_store_screlease,
        signal_store_relaxed: hsa_signal_store_relaxed,
        signal_load_scacquire: hsa_signal_load_scacquire,
        signal_wait_scacquire: hsa_signal_wait_scacquire,
        queue_create: hsa_queue_create,
        queue_destroy: hsa_queue_destroy,
        queue_add_write_index_relaxed: hsa_queue_add_write_index_relaxed,
        queue_load_read_index_scacquire: hsa_queue_load_read_index_scacquire,
        code_object_reader_create_from_memory: hsa_code_object_reader_create_from_memory,
        code_object_reader_destroy: hsa_code_object_reader_destroy,
        executable_create_alt: hsa_executable_create_alt,
        executable_load_agent_code_object: hsa_executable_load_agent_code_object,
        executable_freeze: hsa_executable_freeze,
        executable_destroy: hsa_executable_destroy,
        executable_get_symbol_by_name: hsa_executable_get_symbol_by_name,
        executable_symbol_get_info: hsa_executable_symbol_get_info,
    };
    &API
}

// ---------------------------------------------------------------------------------------------
// Test helpers
// ---------------------------------------------------------------------------------------------

/// Installs a fresh fake runtime with these GPU agents (and one CPU agent) for one test.
fn install(gpus: &[FakeGpu]) -> MutexGuard<'static, ()> {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    *FAKE.lock().unwrap_or_else(|e| e.into_inner()) = Some(Fake {
        gpus: gpus.to_vec(),
        ..Fake::default()
    });
    serial
}

fn plugin() -> AmdgpuPlugin {
    AmdgpuPlugin::new(AmdgpuDriver::with_api(api()))
}

/// A minimal complete code object (one loadable segment, an empty `.dynamic`) with these
/// `e_flags`.
fn code_object(flags: u32) -> Vec<u8> {
    testing::elf_with_symbols(machine::AMDGPU, flags, &[])
}

fn image<'a>(bytes: &'a [u8], triple: &str) -> ImageInfo<'a> {
    ImageInfo {
        bytes,
        triple: triple.into(),
        arch: String::new(),
    }
}

/// Opens the first GPU as device `global` of `total` and loads a gfx90a code object of `module`.
fn load(
    module: ModuleSpec,
    global: usize,
    total: usize,
) -> (Box<dyn Device>, Box<dyn LoadedImage>) {
    with(|f| f.next_module = module);
    let device = plugin().open_device(0, global, total).unwrap();
    let loaded = device
        .load_image(&image(&code_object(GFX90A), TRIPLE_AMDGCN))
        .unwrap();
    (device, loaded)
}

/// Launches `kernel` of `image` with these argument values.
fn launch(image: &dyn LoadedImage, kernel: &str, args: &[u64], config: LaunchConfig) -> Result<()> {
    let symbol = image.kernel(kernel)?.expect("a kernel of the image");
    let args: Vec<*mut c_void> = args.iter().map(|&a| a as *mut c_void).collect();
    // SAFETY: the fake kernels never dereference their arguments.
    unsafe { image.launch(symbol, &args, &config) }
}

fn teams(num_teams: u32, thread_limit: u32) -> LaunchConfig {
    LaunchConfig {
        num_teams,
        thread_limit,
        ..Default::default()
    }
}

fn to_device(device: &dyn Device, address: u64, bytes: &[u8]) -> Result<()> {
    // SAFETY: callers pass an allocation of this device holding `bytes.len()` bytes.
    unsafe {
        device.copy_to_device(
            address as *mut c_void,
            bytes.as_ptr() as *const c_void,
            bytes.len(),
        )
    }
}

fn from_device(device: &dyn Device, out: &mut [u8], address: u64) -> Result<()> {
    // SAFETY: callers pass an allocation of this device holding `out.len()` bytes.
    unsafe {
        device.copy_from_device(
            out.as_mut_ptr() as *mut c_void,
            address as *const c_void,
            out.len(),
        )
    }
}

fn u32_at(bytes: &[u8], offset: usize) -> u32 {
    u32::from_le_bytes(bytes[offset..offset + 4].try_into().unwrap())
}

fn u64_at(bytes: &[u8], offset: usize) -> u64 {
    u64::from_le_bytes(bytes[offset..offset + 8].try_into().unwrap())
}

fn put(bytes: &mut [u8], offset: usize, value: &[u8]) {
    bytes[offset..offset + value.len()].copy_from_slice(value);
}

/// The contents of a global of the (one) loaded code object.
fn global_bytes(name: &str) -> Vec<u8> {
    let global = with(|f| {
        f.executables
            .values()
            .find_map(|e| e.globals.get(name).copied())
    });
    let (address, size) = global.expect("a loaded code object with the global");
    // SAFETY: fake globals are host memory of `size` bytes.
    unsafe { bytes_at(address, size) }
}

fn kernel_object(name: &str) -> u64 {
    let object = with(|f| {
        f.kernel_objects
            .iter()
            .find(|(_, (_, k))| k.name == name)
            .map(|(&o, _)| o)
    });
    object.expect("a loaded kernel")
}

/// The last dispatch of kernel `name`, and how many it had.
fn last_dispatch(name: &str) -> (Dispatch, usize) {
    let all: Vec<Dispatch> = with(|f| {
        f.dispatches
            .iter()
            .filter(|d| d.kernel == name)
            .cloned()
            .collect()
    });
    (
        all.last().expect("a dispatch of the kernel").clone(),
        all.len(),
    )
}

/// Live allocations of `pool`: (address, bytes).
fn live_in(pool: u64) -> Vec<(u64, usize)> {
    with(|f| {
        f.allocs
            .iter()
            .filter(|(_, (p, _))| *p == pool)
            .map(|(&a, &(_, s))| (a, s))
            .collect()
    })
}

/// A kernel-argument segment as the plugin should fill it: the explicit values, then the
/// implicit block with block counts, group sizes, grid dimensions and dynamic LDS size at
/// their code object v5 offsets (0, 12, 64, 120), the rest zero.
fn expected_kernarg(
    explicit: &[u64],
    blocks: [u32; 3],
    threads: [u16; 3],
    dims: u16,
    lds: u32,
) -> Vec<u8> {
    let mut bytes = vec![0u8; explicit.len() * 8 + IMPLICIT_ARGS];
    for (i, value) in explicit.iter().enumerate() {
        put(&mut bytes, i * 8, &value.to_le_bytes());
    }
    let base = explicit.len() * 8;
    for (d, (count, size)) in blocks.iter().zip(threads).enumerate() {
        put(&mut bytes, base + 4 * d, &count.to_le_bytes());
        put(&mut bytes, base + 12 + 2 * d, &size.to_le_bytes());
    }
    put(&mut bytes, base + 64, &dims.to_le_bytes());
    put(&mut bytes, base + 120, &lds.to_le_bytes());
    bytes
}

/// A `<kernel>_kernel_environment` global for `mode` (no teams reduction).
fn kernel_environment(mode: u8) -> Vec<u8> {
    let mut b = vec![0u8; 48];
    b[2] = mode;
    b
}

/// The device runtime's globals, the constructor kernels and kernels of each mode.
fn standard_module() -> ModuleSpec {
    let globals = [
        ("__omp_rtl_device_environment", vec![0; 48]),
        ("__omp_offloading_fptr_map_p", vec![0; 8]),
        ("__omp_offloading_fptr_map_size", vec![0; 8]),
        ("__rustomp_indirect_call_table", vec![0; 8]),
        (
            "spmd_kernel_environment",
            kernel_environment(exec_mode::SPMD),
        ),
        (
            "gspmd_kernel_environment",
            kernel_environment(exec_mode::GENERIC_SPMD),
        ),
        (
            "generic_kernel_environment",
            kernel_environment(exec_mode::GENERIC),
        ),
        ("counter", 7u32.to_le_bytes().to_vec()),
    ];
    ModuleSpec {
        globals: globals
            .into_iter()
            .map(|(n, b)| (n.to_string(), b))
            .collect(),
        kernels: vec![
            kernel("amdgcn.device.init", 0),
            kernel("amdgcn.device.fini", 0),
            KernelSpec {
                group: 8192,
                private: 64,
                ..kernel("spmd", 3)
            },
            kernel("gspmd", 1),
            kernel("generic", 1),
            // No kernel environment: launched bare; its call stack is dynamic.
            KernelSpec {
                private: 32,
                dynamic_stack: true,
                ..kernel("bare", 1)
            },
        ],
    }
}

/// The standard module plus an SPMD kernel `name` with one explicit argument and `globals`.
fn module_with(name: &str, globals: &[(&str, usize)]) -> ModuleSpec {
    let mut module = standard_module();
    module.globals.push((
        format!("{name}_kernel_environment"),
        kernel_environment(exec_mode::SPMD),
    ));
    module.globals.extend(
        globals
            .iter()
            .map(|&(n, size)| (n.to_string(), vec![0; size])),
    );
    module.kernels.push(kernel(name, 1));
    module
}

/// Runs `f` with the process's fd 1 redirected to a file; returns what was written there.
fn capture_stdout(f: impl FnOnce()) -> String {
    use std::os::fd::AsRawFd;
    /// Puts the saved fd 1 back, even when `f` panics.
    struct Restore(c_int);
    impl Drop for Restore {
        fn drop(&mut self) {
            // SAFETY: flushes the C streams, then restores and closes the fd `dup` returned.
            unsafe {
                libc::fflush(std::ptr::null_mut());
                libc::dup2(self.0, 1);
                libc::close(self.0);
            }
        }
    }
    let path =
        std::env::temp_dir().join(format!("rustomp-amdgpu-stdout-{}.txt", std::process::id()));
    let file = std::fs::File::create(&path).unwrap();
    // SAFETY: flushes every C stream, then points fd 1 at the file (undone by `Restore`).
    let saved = unsafe {
        libc::fflush(std::ptr::null_mut());
        let saved = libc::dup(1);
        assert!(
            saved >= 0 && libc::dup2(file.as_raw_fd(), 1) == 1,
            "redirecting stdout"
        );
        saved
    };
    drop((Restore(saved), f()));
    drop(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    text
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[test]
fn agents_are_discovered_and_images_matched_to_their_isa() {
    let _serial = install(&[MI210, MI300X]);
    let plugin = plugin();
    let objects = [GFX90A, GFX90A_XNACK_ON, GFX942].map(code_object);
    let [gfx90a, xnack_on, gfx942] = objects.each_ref().map(|b| image(b, TRIPLE_AMDGCN));
    let cubin = testing::elf(machine::CUDA, 8, 90 << 8 | 4);
    let cubin = image(&cubin, TRIPLE_NVPTX);

    // Decided from the image alone, before the runtime is initialized.
    assert!(plugin.is_compatible(&gfx90a));
    assert!(plugin.is_compatible(&image(gfx90a.bytes, "")));
    assert!(
        !plugin.is_compatible(&image(gfx90a.bytes, TRIPLE_NVPTX)),
        "another target's container"
    );
    assert!(!plugin.is_compatible(&cubin));
    assert!(!plugin.is_compatible(&image(&testing::elf(machine::X86_64, 0, 0), TRIPLE_X86_64)));
    assert_eq!(with(|f| f.inits), 0, "nothing initialized yet");

    assert_eq!(
        (plugin.number_of_devices(), plugin.unavailable_reason()),
        (2, None)
    );
    assert_eq!(with(|f| f.inits), 1);
    assert_eq!(plugin.device_compatibility(0, &gfx90a), Ok(()));
    assert_eq!(
        plugin.device_compatibility(0, &xnack_on),
        Err("the image needs xnack+, this GPU has gfx90a:sramecc+:xnack-".into())
    );
    assert_eq!(
        plugin.device_compatibility(0, &gfx942),
        Err(
            "an image for gfx942 runs only on gfx942 GPUs, this one is gfx90a:sramecc+:xnack-"
                .into()
        )
    );
    assert_eq!(plugin.device_compatibility(1, &gfx942), Ok(()));
    assert_eq!(
        plugin.device_compatibility(1, &gfx90a),
        Err(
            "an image for gfx90a runs only on gfx90a GPUs, this one is gfx942:sramecc+:xnack-"
                .into()
        )
    );
    assert_eq!(
        plugin.device_compatibility(2, &gfx90a),
        Err("the amdgpu plugin has no device 2".into())
    );
    assert_eq!(
        plugin.device_compatibility(0, &cubin),
        Err("not an image the amdgpu plugin runs".into())
    );

    let devices = [
        plugin.open_device(0, 0, 2).unwrap(),
        plugin.open_device(1, 1, 2).unwrap(),
    ];
    assert_eq!(
        devices.each_ref().map(|d| d.describe()),
        [
            "device 0: amdgpu plugin device 0 (Fake MI210, gfx90a:sramecc+:xnack-, 104 compute units, wavefront 64, 65536 MiB, HSA runtime 1.14)",
            "device 1: amdgpu plugin device 1 (Fake MI300X, gfx942:sramecc+:xnack-, 304 compute units, wavefront 64, 196608 MiB, HSA runtime 1.14)",
        ]
    );
    // What rustomp-info lists: the generic layer's facts, then the runtime's line.
    let properties = devices[0].properties();
    let value = |label: &str| {
        properties
            .iter()
            .find(|(l, _)| *l == label)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(value("Kind"), Some("GPU"));
    assert_eq!(value("Name"), Some("Fake MI210"));
    assert_eq!(value("Architecture"), Some("gfx90a:sramecc+:xnack-"));
    assert_eq!(value("Memory"), Some("65536 MiB"));
    assert_eq!(value("Warp size"), Some("64"));
    assert_eq!(
        value("Driver"),
        Some("104 compute units, wavefront 64, 65536 MiB, HSA runtime 1.14")
    );
    let multi = queue_type::MULTI;
    assert_eq!(
        with(|f| f.queues_created.clone()),
        [(GPU_AGENT, 512, multi), (GPU_AGENT + 1, 512, multi)],
        "one queue of LLVM's default size each"
    );
    drop(devices);
    assert!(
        with(|f| f.queues.is_empty() && f.signals.is_empty()),
        "queues and doorbells go with the devices"
    );
}

#[test]
fn a_missing_runtime_a_failing_init_or_no_gpu_mean_zero_devices() {
    let _serial = install(&[MI210]);
    let absent = AmdgpuPlugin::new(AmdgpuDriver::with_library(
        "/nonexistent/libhsa-runtime64.so.1",
    ));
    assert_eq!(absent.number_of_devices(), 0);
    let why = absent.unavailable_reason().unwrap();
    let expected = "no HSA runtime (amdgcn-amd-amdhsa images need libhsa-runtime64.so.1): /nonexistent/libhsa-runtime64.so.1";
    assert!(why.starts_with(expected), "{why}");
    let e = absent.open_device(0, 0, 1).err().unwrap();
    assert_eq!(
        (e.kind, e.message),
        (
            ErrorKind::DeviceUnavailable,
            format!("device 0 (amdgpu plugin): {why}")
        )
    );

    // Each plugin initializes the runtime once: a fresh plugin per case.
    let reason = |fail: Option<(&'static str, Status)>| {
        with(|f| f.fail = fail);
        let plugin = plugin();
        assert_eq!(plugin.number_of_devices(), 0);
        plugin.unavailable_reason().unwrap()
    };
    assert_eq!(
        reason(Some(("hsa_init", STATUS_ERROR_OUT_OF_RESOURCES))),
        "the HSA runtime (<injected HSA runtime>) does not initialize: hsa_init failed: HSA_STATUS_ERROR_OUT_OF_RESOURCES \
         (The runtime failed to allocate the necessary resources.) (no /dev/kfd or no permission to use it?)"
    );
    assert_eq!(
        reason(Some(("hsa_iterate_agents", STATUS_ERROR_NOT_INITIALIZED))),
        "the HSA runtime cannot list its agents: hsa_iterate_agents failed: HSA_STATUS_ERROR_NOT_INITIALIZED"
    );
    with(|f| f.gpus.clear());
    assert_eq!(
        reason(None),
        "no AMD GPU: the HSA runtime (<injected HSA runtime>) reports no GPU agent"
    );

    with(|f| f.gpus = vec![MI210]);
    with(|f| f.fail = Some(("hsa_queue_create", STATUS_ERROR_INVALID_QUEUE_CREATION)));
    let e = plugin().open_device(0, 0, 1).err().unwrap();
    assert_eq!(e.kind, ErrorKind::DeviceUnavailable);
    assert_eq!(e.message, "device 0 (amdgpu plugin): cannot open the device: hsa_queue_create failed: HSA_STATUS_ERROR_INVALID_QUEUE_CREATION");
}

#[test]
fn loading_publishes_the_environment_runs_constructors_and_destroys_the_executable() {
    let _serial = install(&[MI210]);
    let (device, loaded) = load(standard_module(), 5, 7);

    let env = global_bytes("__omp_rtl_device_environment");
    // debug kind, number of devices, device number, dynamic memory
    assert_eq!([0, 4, 8, 12].map(|at| u32_at(&env, at)), [0, 7, 5, 0]);
    assert_eq!(u64_at(&env, 16), TIMESTAMP_FREQUENCY, "clock frequency");
    assert_eq!(
        (u64_at(&env, 24), u64_at(&env, 32)),
        (0, 0),
        "no indirect table yet"
    );
    assert_eq!(
        u64_at(&env, 40),
        104 * 32,
        "hardware parallelism: CUs x waves per CU"
    );

    // The constructors' kernel ran once on one work-item, with only implicit arguments.
    let (init, count) = last_dispatch("amdgcn.device.init");
    let p = init.packet;
    assert_eq!(count, 1);
    assert_eq!(
        (
            p.setup,
            p.workgroup_size_x,
            p.workgroup_size_y,
            p.workgroup_size_z
        ),
        (1, 1, 1, 1)
    );
    assert_eq!(
        (p.grid_size_x, p.grid_size_y, p.grid_size_z, p.kernel_object),
        (1, 1, 1, kernel_object("amdgcn.device.init"))
    );
    assert_eq!(
        init.kernarg,
        expected_kernarg(&[], [1, 1, 1], [1, 1, 1], 1, 0)
    );
    assert_eq!(with(|f| f.dispatches.len()), 1, "no destructors yet");
    // Its arguments lived in the kernarg pool, visible to the GPU, until it finished.
    with(|f| {
        assert_eq!(
            f.allocated
                .iter()
                .filter(|a| a.0 == KERNARG_POOL)
                .collect::<Vec<_>>(),
            [&(KERNARG_POOL, 256)]
        );
        assert!(f.allowed.contains(&(vec![GPU_AGENT], p.kernarg_address)));
    });
    assert!(live_in(KERNARG_POOL).is_empty());

    let entry = |host, device| FptrMapEntry { host, device };
    let table = IndirectTable::new(vec![
        entry(0x300, 0xc),
        entry(0x100, 0xa),
        entry(0x200, 0xb),
    ]);
    loaded.set_indirect_table(&table).unwrap();
    let env = global_bytes("__omp_rtl_device_environment");
    let (address, size) = (u64_at(&env, 24), u64_at(&env, 32));
    assert_eq!(size, 3);
    assert_eq!(
        live_in(COARSE_POOL),
        [(address - 16, 64)],
        "the table (with its header) is device memory"
    );
    assert_eq!(
        u64_at(&global_bytes("__omp_offloading_fptr_map_p"), 0),
        address
    );
    assert_eq!(
        u64_at(&global_bytes("__omp_offloading_fptr_map_size"), 0),
        3
    );
    // Ours: one pointer to the block whose header holds the count, the entries right after.
    let block = u64_at(&global_bytes("__rustomp_indirect_call_table"), 0);
    assert_eq!(block + 16, address, "the entries follow the header");
    // SAFETY: the fake device block is host memory: the 16-byte header, then the entries.
    assert_eq!(u64_at(&unsafe { bytes_at(block, 16) }, 0), 3);
    // SAFETY: the fake device table is host memory of 3 entries.
    let uploaded = unsafe { bytes_at(address, 48) };
    let pairs: Vec<(u64, u64)> = (0..3)
        .map(|i| (u64_at(&uploaded, i * 16), u64_at(&uploaded, i * 16 + 8)))
        .collect();
    assert_eq!(
        pairs,
        [(0x100, 0xa), (0x200, 0xb), (0x300, 0xc)],
        "sorted by host address"
    );
    assert_eq!(
        (u32_at(&env, 4), u32_at(&env, 8), u64_at(&env, 16)),
        (7, 5, TIMESTAMP_FREQUENCY),
        "the rest kept"
    );

    // Globals and kernels by name.
    let counter = loaded.global("counter").unwrap().unwrap();
    let mut value = [0u8; 4];
    from_device(&*device, &mut value, counter.address as u64).unwrap();
    assert_eq!((counter.size, u32::from_le_bytes(value)), (4, 7));
    assert!(loaded.kernel("spmd").unwrap().is_some());
    assert!(loaded.kernel("missing").unwrap().is_none());
    assert!(loaded.global("missing").unwrap().is_none());

    drop(loaded);
    let (fini, count) = last_dispatch("amdgcn.device.fini");
    assert_eq!(count, 1, "destructors run at unload");
    assert_eq!(
        fini.kernarg,
        expected_kernarg(&[], [1, 1, 1], [1, 1, 1], 1, 0)
    );
    assert_eq!(
        with(|f| (
            f.executables.len(),
            f.readers.len(),
            f.executables_destroyed
        )),
        (0, 0, 1)
    );
    assert!(
        live_in(COARSE_POOL).is_empty(),
        "the table is freed with the image"
    );
}

#[test]
fn a_load_that_fails_destroys_what_it_created() {
    let _serial = install(&[MI210]);
    with(|f| f.next_module = standard_module());
    let device = plugin().open_device(0, 0, 1).unwrap();
    let bytes = code_object(GFX90A);
    with(|f| f.fail = Some(("hsa_executable_freeze", STATUS_ERROR_INVALID_CODE_OBJECT)));
    let e = device
        .load_image(&image(&bytes, TRIPLE_AMDGCN))
        .err()
        .unwrap();
    assert_eq!(e.kind, ErrorKind::InvalidImage);
    let expected = "device 0 (amdgpu plugin): cannot load the gfx90a code object: hsa_executable_freeze failed: HSA_STATUS_ERROR_INVALID_CODE_OBJECT";
    assert_eq!(e.message, expected);
    assert_eq!(
        with(|f| (
            f.readers_created,
            f.readers.len(),
            f.executables.len(),
            f.executables_destroyed
        )),
        (1, 0, 0, 1)
    );

    // A truncated code object never reaches the runtime.
    let e = device
        .load_image(&image(&bytes[..40], TRIPLE_AMDGCN))
        .err()
        .unwrap();
    assert_eq!(
        (e.kind, with(|f| f.readers_created)),
        (ErrorKind::InvalidImage, 1)
    );
}

#[test]
fn launches_dispatch_aql_packets_with_code_object_v5_implicit_arguments() {
    let _serial = install(&[MI210]);
    let (_device, loaded) = load(standard_module(), 0, 1);

    let four_teams = LaunchConfig {
        dyn_shared_bytes: 512,
        ..teams(4, 64)
    };
    launch(&*loaded, "spmd", &[0x1111, 42], four_teams).unwrap();
    let (d, _) = last_dispatch("spmd");
    let p = d.packet;
    assert_eq!(
        p.header,
        2 | 2 << 9 | 2 << 11,
        "kernel dispatch with system-scope acquire and release fences"
    );
    assert_eq!(p.setup, 1, "one dimension");
    assert_eq!(
        (p.workgroup_size_x, p.workgroup_size_y, p.workgroup_size_z),
        (64, 1, 1)
    );
    assert_eq!(
        (p.grid_size_x, p.grid_size_y, p.grid_size_z),
        (256, 1, 1),
        "the grid counts work-items"
    );
    assert_eq!(
        p.group_segment_size,
        8192 + 512,
        "static LDS plus the dynamic part"
    );
    assert_eq!(
        (p.private_segment_size, p.kernel_object),
        (64, kernel_object("spmd"))
    );
    assert_ne!(p.completion_signal.handle, 0);
    let environment = u64_at(&d.kernarg, 0);
    assert_eq!(
        d.launch_env,
        Some(vec![0; 16]),
        "a zeroed launch environment"
    );
    assert_eq!(
        with(|f| f.allocs.get(&environment).copied()),
        Some((COARSE_POOL, 16)),
        "in device memory"
    );
    assert_eq!(
        d.kernarg,
        expected_kernarg(&[environment, 0x1111, 42], [4, 1, 1], [64, 1, 1], 1, 512)
    );
    assert!(
        live_in(KERNARG_POOL).is_empty(),
        "kernel arguments freed after the launch"
    );
    assert_eq!(
        with(|f| f.signals.len()),
        1,
        "completion signals destroyed; the doorbell stays"
    );

    // No clauses: LLVM's AMDGPU defaults, 4 teams per CU of 256 threads.
    launch(&*loaded, "spmd", &[0x1111, 42], LaunchConfig::default()).unwrap();
    launch(&*loaded, "gspmd", &[], LaunchConfig::default()).unwrap();
    for (name, explicit) in [
        ("spmd", vec![environment, 0x1111, 42]),
        ("gspmd", vec![environment]),
    ] {
        let (d, _) = last_dispatch(name);
        assert_eq!(
            (d.packet.workgroup_size_x, d.packet.grid_size_x),
            (256, 416 * 256),
            "{name}"
        );
        assert_eq!(
            d.kernarg,
            expected_kernarg(&explicit, [416, 1, 1], [256, 1, 1], 1, 0),
            "{name}"
        );
    }

    // Generic mode: the thread limit plus a wavefront for the main thread.
    launch(&*loaded, "generic", &[], teams(2, 64)).unwrap();
    let (d, _) = last_dispatch("generic");
    assert_eq!(
        (d.packet.workgroup_size_x, d.packet.grid_size_x),
        (128, 256)
    );
    assert_eq!(
        d.kernarg,
        expected_kernarg(&[environment], [2, 1, 1], [128, 1, 1], 1, 0)
    );

    // A bare kernel in two dimensions, with a dynamic call stack.
    launch(
        &*loaded,
        "bare",
        &[],
        LaunchConfig {
            teams_yz: [3, 0],
            threads_yz: [2, 0],
            ..teams(2, 32)
        },
    )
    .unwrap();
    let (d, _) = last_dispatch("bare");
    let p = d.packet;
    assert_eq!(p.setup, 2, "two dimensions");
    assert_eq!(
        (p.workgroup_size_x, p.workgroup_size_y, p.workgroup_size_z),
        (32, 2, 1)
    );
    assert_eq!((p.grid_size_x, p.grid_size_y, p.grid_size_z), (64, 6, 1));
    assert_eq!(
        p.private_segment_size,
        16 * 1024,
        "LLVM's default stack for a dynamic call stack"
    );
    assert_eq!(
        d.kernarg,
        expected_kernarg(&[environment], [2, 3, 1], [32, 2, 1], 2, 0)
    );
    assert_eq!(with(|f| f.dispatches.len()), 6, "init and five launches");
}

#[test]
fn memory_comes_from_the_right_pools_and_copies_lock_or_stage_host_memory() {
    let _serial = install(&[MI210]);
    let device = plugin().open_device(0, 2, 3).unwrap();
    let device = &*device;
    let [d, d2, h, s] = [
        AllocKind::Device,
        AllocKind::Device,
        AllocKind::Host,
        AllocKind::Shared,
    ]
    .map(|k| device.alloc(64, k).unwrap() as u64);
    with(|f| {
        let pools = [d, d2, h, s].map(|a| f.allocs[&a].0);
        assert_eq!(pools, [COARSE_POOL, COARSE_POOL, FINE_POOL, FINE_POOL]);
        assert_eq!(
            f.allowed,
            [(vec![GPU_AGENT], h), (vec![GPU_AGENT], s)],
            "host memory is made visible to the GPU"
        );
    });
    let allocations = with(|f| f.allocated.len());

    // Host memory locked for each copy.
    let input: Vec<u8> = (0..64).collect();
    let mut output = vec![0u8; 64];
    to_device(device, d, &input).unwrap();
    // SAFETY: two 64-byte allocations of this device.
    unsafe { device.copy_within_device(d2 as *mut c_void, d as *const c_void, 64) }.unwrap();
    from_device(device, &mut output, d2).unwrap();
    assert_eq!(input, output);
    let (input_at, output_at) = (input.as_ptr() as u64, output.as_ptr() as u64);
    with(|f| {
        assert_eq!(
            (&f.locks[..], f.locked.len()),
            (&[input_at, output_at][..], 0),
            "locked, then unlocked"
        );
        assert_eq!(f.allocated.len(), allocations, "nothing staged");
        let copy = |dst, dst_agent, src, src_agent| Transfer {
            dst,
            dst_agent,
            src,
            src_agent,
            bytes: 64,
        };
        let (gpu, cpu) = (GPU_AGENT, CPU_AGENT);
        assert_eq!(
            f.copies,
            [
                copy(d, gpu, input_at, cpu),
                copy(d2, gpu, d, gpu),
                copy(output_at, cpu, d2, gpu)
            ]
        );
        f.copies.clear();
        f.lock_fails = true;
    });

    // The runtime cannot lock: staged through fine-grained memory.
    let input: Vec<u8> = (100..164).collect();
    to_device(device, d, &input).unwrap();
    from_device(device, &mut output, d).unwrap();
    assert_eq!(input, output);
    with(|f| {
        assert_eq!(
            f.allocated[allocations..],
            [(FINE_POOL, 64), (FINE_POOL, 64)],
            "one staging buffer per copy"
        );
        let ends: Vec<_> = f
            .copies
            .iter()
            .map(|c| (c.dst == d, c.dst_agent, c.src == d, c.src_agent))
            .collect();
        assert_eq!(
            ends,
            [
                (true, GPU_AGENT, false, CPU_AGENT),
                (false, CPU_AGENT, true, GPU_AGENT)
            ]
        );
        let user = [input.as_ptr() as u64, output.as_ptr() as u64];
        assert!(
            f.copies
                .iter()
                .all(|c| !user.contains(&c.src) && !user.contains(&c.dst)),
            "unlocked memory never copied"
        );
        assert_eq!(f.allocs.len(), 4, "staging buffers freed");
        f.lock_fails = false;
    });

    // A failing copy still unlocks.
    with(|f| f.fail = Some(("hsa_amd_memory_async_copy", STATUS_ERROR_INVALID_ARGUMENT)));
    let e = to_device(device, d, &input).unwrap_err();
    assert_eq!(e.kind, ErrorKind::TransferFailed);
    let expected = format!(
        "device 2 (amdgpu plugin): copy of 64 bytes from host {:p} to {:#x}: hsa_amd_memory_async_copy failed: \
         HSA_STATUS_ERROR_INVALID_ARGUMENT (One of the actual arguments does not meet a precondition.)",
        input.as_ptr(),
        d
    );
    assert_eq!((e.message, with(|f| f.locked.len())), (expected, 0));

    // Allocation failures.
    with(|f| {
        f.fail = Some((
            "hsa_amd_memory_pool_allocate",
            STATUS_ERROR_OUT_OF_RESOURCES,
        ))
    });
    let e = device.alloc(1 << 40, AllocKind::Device).unwrap_err();
    assert_eq!(e.kind, ErrorKind::OutOfMemory);
    assert_eq!(
        e.message,
        "device 2 (amdgpu plugin): cannot allocate 1099511627776 bytes of device memory: hsa_amd_memory_pool_allocate failed: \
         HSA_STATUS_ERROR_OUT_OF_RESOURCES (The runtime failed to allocate the necessary resources.)"
    );
    with(|f| f.fail = Some(("hsa_amd_agents_allow_access", STATUS_ERROR)));
    let e = device.alloc(64, AllocKind::Host).unwrap_err();
    assert_eq!(e.kind, ErrorKind::OutOfMemory);
    let expected = "device 2 (amdgpu plugin): cannot allocate 64 bytes of pinned host memory: hsa_amd_agents_allow_access failed: HSA_STATUS_ERROR";
    assert_eq!(
        (e.message.as_str(), with(|f| f.allocs.len())),
        (expected, 4),
        "memory the GPU cannot reach is given back"
    );

    for (address, kind) in [
        (d, AllocKind::Device),
        (d2, AllocKind::Device),
        (h, AllocKind::Host),
        (s, AllocKind::Shared),
    ] {
        // SAFETY: each allocation of this device freed once, with its kind.
        unsafe { device.free(address as *mut c_void, kind) }.unwrap();
    }
    assert!(with(|f| f.allocs.is_empty()));
    // SAFETY: null is allowed.
    unsafe { device.free(std::ptr::null_mut(), AllocKind::Device) }.unwrap();
    // SAFETY: not an allocation, but the fake runtime only looks the address up in its table.
    let e = unsafe { device.free(0x1234 as *mut c_void, AllocKind::Host) }.unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    let expected = "device 2 (amdgpu plugin): cannot free pinned host memory at 0x1234: hsa_amd_memory_pool_free failed";
    assert!(e.message.starts_with(expected), "{}", e.message);
}

#[test]
fn device_printf_output_reaches_stdout_once_and_the_buffer_is_emptied() {
    let _serial = install(&[MI210]);
    let (_device, loaded) = load(
        module_with("prints", &[("__rustomp_printf_buffer", 8 + 256)]),
        0,
        1,
    );
    let printed = capture_stdout(|| launch(&*loaded, "prints", &[], teams(1, 1)).unwrap());
    assert_eq!(printed.matches(PRINTED).count(), 1, "{printed:?}");
    assert_eq!(
        global_bytes("__rustomp_printf_buffer")[..8],
        [0; 8],
        "cursor and truncation count reset"
    );
    let quiet = capture_stdout(|| launch(&*loaded, "spmd", &[0, 0], teams(1, 1)).unwrap());
    assert_eq!(
        quiet.matches(PRINTED).count(),
        0,
        "printed once only: {quiet:?}"
    );
}

#[test]
fn kernels_call_host_functions_while_they_run() {
    let _serial = install(&[MI210]);
    let (_device, loaded) = load(
        module_with("calls_host", &[("__rustomp_host_call_port", 8)]),
        0,
        1,
    );
    let port = u64_at(&global_bytes("__rustomp_host_call_port"), 0);
    with(|f| {
        assert_eq!(
            f.allocs.get(&port),
            Some(&(FINE_POOL, std::mem::size_of::<HostCallPort>())),
            "fine-grained host memory"
        );
        assert!(f.allowed.contains(&(vec![GPU_AGENT], port)));
    });
    launch(&*loaded, "calls_host", &[], LaunchConfig::default()).unwrap();
    // SAFETY: the port lives while the image is loaded.
    let served = unsafe { &*(port as *const HostCallPort) };
    assert_eq!(
        (served.state, served.result),
        (host_call_state::DONE, 42),
        "add_pair(20, 22) served"
    );
    let completed = with(|f| {
        (
            f.host_call_pending,
            f.host_calls_completed,
            f.watchdog_fired,
        )
    });
    assert_eq!(
        completed,
        (None, 1, false),
        "the kernel finished after its call was served"
    );
    drop(loaded);
    assert!(
        !with(|f| f.allocs.contains_key(&port)),
        "the port is freed with the image"
    );
}

#[test]
fn a_faulting_kernel_fails_its_launch_instead_of_hanging() {
    let _serial = install(&[MI210]);
    let (_device, loaded) = load(module_with("faults", &[]), 0, 1);
    let e = launch(&*loaded, "faults", &[], teams(1, 64)).unwrap_err();
    assert_eq!(e.kind, ErrorKind::LaunchFailed);
    assert_eq!(
        e.message,
        "device 0 (amdgpu plugin): kernel faults (1 blocks of 64 threads, SPMD mode, 0 bytes of dynamic shared memory): \
         failure while running: the GPU queue failed: HSA_STATUS_ERROR_EXCEPTION \
         (An HSAIL operation resulted in a hardware exception.); the queue of Fake MI210 is unusable"
    );
    assert!(
        !with(|f| f.watchdog_fired),
        "the queue error ended the wait"
    );
    assert!(live_in(KERNARG_POOL).is_empty(), "kernel arguments freed");
    assert_eq!(
        with(|f| f.signals.len()),
        1,
        "the completion signal destroyed"
    );
}

#[test]
fn closing_a_device_after_a_launch_destroys_its_queue_and_frees_its_memory() {
    let _serial = install(&[MI210]);
    let (device, loaded) = load(standard_module(), 0, 1);
    launch(&*loaded, "spmd", &[1, 2], teams(4, 64)).unwrap();
    assert_eq!(
        live_in(COARSE_POOL).len(),
        1,
        "the idle launch environment, kept by the device"
    );
    drop(loaded);
    drop(device);
    assert!(with(|f| f.queues.is_empty()), "hsa_queue_destroy ran");
    assert!(
        live_in(COARSE_POOL).is_empty(),
        "the launch environment was freed with the device"
    );
    assert!(live_in(FINE_POOL).is_empty() && live_in(KERNARG_POOL).is_empty());
}

#[test]
fn real_runtime_without_a_gpu_reports_no_devices() {
    let installed =
        std::path::Path::new("/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1").exists();
    if installed && !std::path::Path::new("/dev/kfd").exists() {
        let real = AmdgpuPlugin::new(AmdgpuDriver::new());
        assert_eq!(real.number_of_devices(), 0);
        let why = real.unavailable_reason().unwrap();
        assert!(
            why.contains("hsa_init") && why.contains("libhsa-runtime64.so.1"),
            "{why}"
        );
    }
    let absent = AmdgpuPlugin::new(AmdgpuDriver::with_library(
        "/nonexistent/libhsa-runtime64.so.1",
    ));
    assert_eq!(absent.number_of_devices(), 0);
    let why = absent.unavailable_reason().unwrap();
    assert!(
        why.starts_with("no HSA runtime") && why.contains("libhsa-runtime64.so.1"),
        "{why}"
    );
}

#[test]
fn kernels_and_variables_are_looked_up_by_kind() {
    let _serial = install(&[MI210]);
    let (_device, loaded) = load(standard_module(), 0, 1);
    let _ = with(|f| std::mem::take(&mut f.symbol_lookups));
    assert!(loaded.kernel("spmd").unwrap().is_some());
    assert!(loaded.global("counter").unwrap().is_some());
    assert!(
        loaded.global("spmd").unwrap().is_none(),
        "a kernel is no variable"
    );
    assert!(
        loaded.kernel("counter").unwrap().is_none(),
        "a variable is no kernel"
    );
    assert_eq!(
        with(|f| f.symbol_lookups.clone()),
        ["spmd.kd", "counter", "spmd", "counter.kd"],
        "kernels by their descriptor's name only"
    );
    // Any other failure of the lookup is an error with the runtime's words.
    with(|f| {
        f.fail = Some((
            "hsa_executable_get_symbol_by_name",
            STATUS_ERROR_INVALID_EXECUTABLE,
        ))
    });
    let e = loaded.global("counter").unwrap_err();
    assert!(
        e.message.contains("hsa_executable_get_symbol_by_name"),
        "{}",
        e.message
    );
}

#[test]
fn memory_the_runtime_has_pinned_is_copied_without_locking_it_again() {
    let _serial = install(&[MI210]);
    let device = plugin().open_device(0, 2, 3).unwrap();
    let device = &*device;
    let d = device.alloc(4096, AllocKind::Device).unwrap() as u64;
    let h = device.alloc(4096, AllocKind::Host).unwrap() as u64;
    let input: Vec<u8> = (0..=255).cycle().take(4096).collect();
    let mut output = vec![0u8; 4096];
    // Locked through the runtime (what libomp's pinned allocator asks for): one lock, and the
    // copies use it as it is.
    let user = input.as_ptr() as *mut c_void;
    // SAFETY: `input` lives until it is unlocked below.
    let locked = unsafe { device.lock_host(user, input.len()) }.unwrap();
    assert_eq!(locked, user);
    to_device(device, d, &input).unwrap();
    to_device(device, d + 100, &input[100..200]).unwrap();
    // Host memory of the runtime's own pool: copied as it is.
    // SAFETY: `h` holds 4096 bytes.
    unsafe { device.copy_from_device(h as *mut c_void, d as *const c_void, 4096) }.unwrap();
    from_device(device, &mut output, d).unwrap();
    assert!(input == output, "the data survives the round trip");
    with(|f| {
        assert_eq!(
            f.locks,
            [input.as_ptr() as u64, output.as_ptr() as u64],
            "locked once by lock_host; only the pageable output is locked for its copy"
        );
        assert_eq!(
            f.copies.iter().map(|c| c.src).take(2).collect::<Vec<_>>(),
            [input.as_ptr() as u64, input.as_ptr() as u64 + 100],
            "the locked range is the copy's source, at the chunk's offset"
        );
        assert_eq!(f.copies[2].dst, h, "the pool's memory is the copy's target");
    });
    // SAFETY: locked above; no copy uses it now.
    unsafe { device.unlock_host(user) }.unwrap();
    assert!(with(|f| f.locked.is_empty()), "unlocked by the last unlock");
    // SAFETY: allocations of this device, freed once.
    unsafe {
        device.free(d as *mut c_void, AllocKind::Device).unwrap();
        device.free(h as *mut c_void, AllocKind::Host).unwrap();
    }
}

#[test]
fn a_traced_kernel_and_copy_carry_the_devices_timestamps() {
    let _serial = install(&[MI210]);
    let (device, loaded) = load(standard_module(), 0, 1);
    let d = device.alloc(64, AllocKind::Device).unwrap() as u64;
    let input = [9u8; 64];
    use rustomp_plugin::op_times;

    // Untraced: the runtime is asked for nothing, nothing is recorded.
    to_device(&*device, d, &input).unwrap();
    launch(&*loaded, "spmd", &[0x1111, 42], LaunchConfig::default()).unwrap();
    assert_eq!(op_times::take(), None);
    assert!(with(|f| !f.profiled_dispatches && !f.profiled_copies));

    op_times::set_wanted(true);
    let before = rustomp_plugin::monotonic_ns();
    to_device(&*device, d, &input).unwrap();
    let copy = op_times::take();
    launch(&*loaded, "spmd", &[0x1111, 42], LaunchConfig::default()).unwrap();
    let kernel = op_times::take();
    let after = rustomp_plugin::monotonic_ns();
    op_times::set_wanted(false);
    assert!(with(|f| f.profiled_dispatches && f.profiled_copies));
    for (what, times) in [("copy", copy), ("kernel", kernel)] {
        let (start, end) = times.unwrap_or_else(|| panic!("the {what} recorded no device times"));
        // System ticks are 10 ns here and the pairing with the host's clock is one reading:
        // the times land inside the host's, give or take that.
        let slack = 2_000_000;
        assert!(
            before - slack <= start && start <= end && end <= after + slack,
            "{what}: device times {start}..{end}, host {before}..{after}"
        );
    }
    // SAFETY: allocated above.
    unsafe { device.free(d as *mut c_void, AllocKind::Device) }.unwrap();
}
