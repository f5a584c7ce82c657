//! Raw HSA runtime declarations: the handle types, the two shared structures the plugin reads or
//! writes directly (the queue and the kernel dispatch packet), the enum values it passes, and the
//! table of entry points resolved from `libhsa-runtime64.so.1` when the plugin first needs it.
//!
//! Values and signatures are those of ROCm 5.2's `hsa.h` and `hsa_ext_amd.h` for a 64-bit,
//! little-endian host (`HSA_LARGE_MODEL`): pointers are 8 bytes and a signal value is an `i64`.
//! C enums travel as `u32`. Where the header offers both a memory-order-suffixed name and a
//! deprecated plain one, the suffixed name (`_scacquire`, `_screlease`, `_relaxed`) is used; every
//! resolved name is exported by the library.

use core::ffi::{c_char, c_int, c_void};
use core::mem::{offset_of, size_of};

use static_assertions::const_assert_eq;

macro_rules! handles {
    ($($(#[$doc:meta])* $name:ident;)*) => {
        $(
            $(#[$doc])*
            #[repr(C)]
            #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
            pub struct $name {
                pub handle: u64,
            }
        )*
    };
}

handles! {
    /// `hsa_agent_t`: a CPU or GPU the runtime knows about.
    Agent;
    /// `hsa_signal_t`: a 64-bit value in shared memory that packets and the host wait on.
    /// Handle 0 means "no signal" in a packet's completion field.
    Signal;
    /// `hsa_amd_memory_pool_t`: a region of memory an agent can allocate from.
    MemoryPool;
    /// `hsa_isa_t`: an instruction set an agent supports.
    Isa;
    /// `hsa_executable_t`: a set of code objects loaded and linked for some agents.
    Executable;
    /// `hsa_code_object_reader_t`: a code object (ELF image) the runtime has been handed.
    CodeObjectReader;
    /// `hsa_loaded_code_object_t`: one code object loaded into an executable.
    LoadedCodeObject;
    /// `hsa_executable_symbol_t`: a kernel or variable found in a frozen executable.
    ExecutableSymbol;
}

/// `hsa_signal_value_t` on a 64-bit host.
pub type SignalValue = i64;

/// `hsa_status_t`: [`STATUS_SUCCESS`], [`STATUS_INFO_BREAK`] or an error code.
pub type Status = u32;

macro_rules! statuses {
    ($($(#[$doc:meta])* $name:ident = $value:literal,)*) => {
        $($(#[$doc])* pub const $name: Status = $value;)*

        /// The C enumerator name of `s` (`"HSA_STATUS_ERROR_OUT_OF_RESOURCES"`), or
        /// `"HSA_STATUS_UNKNOWN"` for a value neither header defines.
        pub fn status_name(s: Status) -> &'static str {
            match s {
                $($name => concat!("HSA_", stringify!($name)),)*
                _ => "HSA_STATUS_UNKNOWN",
            }
        }
    };
}

statuses! {
    /// The call did what was asked.
    STATUS_SUCCESS = 0x0,
    /// Not an error: an iteration callback returns this to stop early, and the iterating
    /// function then returns it unchanged.
    STATUS_INFO_BREAK = 0x1,
    /// A generic failure.
    STATUS_ERROR = 0x1000,
    STATUS_ERROR_INVALID_ARGUMENT = 0x1001,
    STATUS_ERROR_INVALID_QUEUE_CREATION = 0x1002,
    STATUS_ERROR_INVALID_ALLOCATION = 0x1003,
    STATUS_ERROR_INVALID_AGENT = 0x1004,
    STATUS_ERROR_INVALID_REGION = 0x1005,
    STATUS_ERROR_INVALID_SIGNAL = 0x1006,
    STATUS_ERROR_INVALID_QUEUE = 0x1007,
    STATUS_ERROR_OUT_OF_RESOURCES = 0x1008,
    STATUS_ERROR_INVALID_PACKET_FORMAT = 0x1009,
    STATUS_ERROR_RESOURCE_FREE = 0x100A,
    /// The runtime has not been initialised (or was shut down).
    STATUS_ERROR_NOT_INITIALIZED = 0x100B,
    STATUS_ERROR_REFCOUNT_OVERFLOW = 0x100C,
    STATUS_ERROR_INCOMPATIBLE_ARGUMENTS = 0x100D,
    STATUS_ERROR_INVALID_INDEX = 0x100E,
    STATUS_ERROR_INVALID_ISA = 0x100F,
    STATUS_ERROR_INVALID_CODE_OBJECT = 0x1010,
    STATUS_ERROR_INVALID_EXECUTABLE = 0x1011,
    STATUS_ERROR_FROZEN_EXECUTABLE = 0x1012,
    STATUS_ERROR_INVALID_SYMBOL_NAME = 0x1013,
    STATUS_ERROR_VARIABLE_ALREADY_DEFINED = 0x1014,
    STATUS_ERROR_VARIABLE_UNDEFINED = 0x1015,
    STATUS_ERROR_EXCEPTION = 0x1016,
    STATUS_ERROR_INVALID_ISA_NAME = 0x1017,
    STATUS_ERROR_INVALID_CODE_SYMBOL = 0x1018,
    STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL = 0x1019,
    STATUS_ERROR_INVALID_FILE = 0x1020,
    STATUS_ERROR_INVALID_CODE_OBJECT_READER = 0x1021,
    STATUS_ERROR_INVALID_CACHE = 0x1022,
    STATUS_ERROR_INVALID_WAVEFRONT = 0x1023,
    STATUS_ERROR_INVALID_SIGNAL_GROUP = 0x1024,
    STATUS_ERROR_INVALID_RUNTIME_STATE = 0x1025,
    STATUS_ERROR_FATAL = 0x1026,
    // AMD extension codes (`hsa_ext_amd.h`); the last three reach the queue error callback.
    STATUS_ERROR_INVALID_MEMORY_POOL = 40,
    STATUS_ERROR_MEMORY_APERTURE_VIOLATION = 41,
    STATUS_ERROR_ILLEGAL_INSTRUCTION = 42,
    STATUS_ERROR_MEMORY_FAULT = 43,
    /// Not an error: a queue's compute-unit mask was only partly applied.
    STATUS_CU_MASK_REDUCED = 44,
}

/// `hsa_queue_t`: the runtime-owned header of a user-mode AQL queue. The plugin only reads it,
/// through the pointer `hsa_queue_create` returns.
#[repr(C)]
#[derive(Debug)]
pub struct Queue {
    /// A [`queue_type`] value.
    pub type_: u32,
    /// Bit set of `hsa_queue_feature_t` values.
    pub features: u32,
    /// The ring of `size` 64-byte packets.
    pub base_address: *mut c_void,
    /// Written with a packet's index once that packet is ready.
    pub doorbell_signal: Signal,
    /// Capacity in packets, a power of two.
    pub size: u32,
    pub reserved1: u32,
    pub id: u64,
}

const_assert_eq!(size_of::<Queue>(), 40);
const_assert_eq!(offset_of!(Queue, base_address), 8);
const_assert_eq!(offset_of!(Queue, doorbell_signal), 16);
const_assert_eq!(offset_of!(Queue, size), 24);

/// `hsa_amd_pointer_info_t` (`hsa_ext_amd.h`): what the runtime knows of an address. The
/// caller sets `size`; the runtime fills the members that fit in it (and lowers `size` if it
/// knows fewer).
#[repr(C)]
#[derive(Debug)]
pub struct PointerInfo {
    pub size: u32,
    /// An `hsa_amd_pointer_type_t` ([`pointer_type`]).
    pub kind: u32,
    /// Where agents reach the allocation, and where the host does.
    pub agent_base_address: *mut c_void,
    pub host_base_address: *mut c_void,
    pub size_in_bytes: usize,
    pub user_data: *mut c_void,
    pub agent_owner: Agent,
    pub global_flags: u32,
    pub registered: bool,
}

const_assert_eq!(size_of::<PointerInfo>(), 56);
const_assert_eq!(offset_of!(PointerInfo, kind), 4);
const_assert_eq!(offset_of!(PointerInfo, agent_base_address), 8);
const_assert_eq!(offset_of!(PointerInfo, host_base_address), 16);
const_assert_eq!(offset_of!(PointerInfo, size_in_bytes), 24);
const_assert_eq!(offset_of!(PointerInfo, agent_owner), 40);
const_assert_eq!(offset_of!(PointerInfo, registered), 52);

/// `hsa_amd_profiling_dispatch_time_t` and `hsa_amd_profiling_async_copy_time_t`: when the
/// device started and finished the work (agent ticks for a dispatch, system ticks for a copy).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ProfilingTime {
    pub start: u64,
    pub end: u64,
}

const_assert_eq!(size_of::<ProfilingTime>(), 16);

/// `hsa_amd_pointer_type_t` values.
pub mod pointer_type {
    /// Memory the runtime does not know (pageable host memory).
    pub const UNKNOWN: u32 = 0;
    /// Allocated from one of the runtime's pools.
    pub const HSA: u32 = 1;
    /// Host memory locked for agents (`hsa_amd_memory_lock`).
    pub const LOCKED: u32 = 2;
}

/// `hsa_kernel_dispatch_packet_t`: one 64-byte AQL packet launching a kernel. The header is
/// written last (atomically, with release ordering) to hand the packet to the GPU.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct KernelDispatchPacket {
    /// Packet type, barrier bit and fence scopes (see [`packet`]).
    pub header: u16,
    /// Number of grid dimensions, shifted by [`packet::KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS`].
    pub setup: u16,
    pub workgroup_size_x: u16,
    pub workgroup_size_y: u16,
    pub workgroup_size_z: u16,
    pub reserved0: u16,
    /// Grid size in work-items (not work-groups).
    pub grid_size_x: u32,
    pub grid_size_y: u32,
    pub grid_size_z: u32,
    /// Bytes of scratch per work-item.
    pub private_segment_size: u32,
    /// Bytes of LDS per work-group.
    pub group_segment_size: u32,
    /// [`symbol_info::KERNEL_OBJECT`] of the kernel symbol.
    pub kernel_object: u64,
    /// Address of the argument buffer (a `void*` in C).
    pub kernarg_address: u64,
    pub reserved2: u64,
    /// Decremented when the kernel finishes; handle 0 for none.
    pub completion_signal: Signal,
}

const_assert_eq!(size_of::<KernelDispatchPacket>(), 64);
const_assert_eq!(offset_of!(KernelDispatchPacket, header), 0);
const_assert_eq!(offset_of!(KernelDispatchPacket, setup), 2);
const_assert_eq!(offset_of!(KernelDispatchPacket, workgroup_size_x), 4);
const_assert_eq!(offset_of!(KernelDispatchPacket, workgroup_size_y), 6);
const_assert_eq!(offset_of!(KernelDispatchPacket, workgroup_size_z), 8);
const_assert_eq!(offset_of!(KernelDispatchPacket, reserved0), 10);
const_assert_eq!(offset_of!(KernelDispatchPacket, grid_size_x), 12);
const_assert_eq!(offset_of!(KernelDispatchPacket, grid_size_y), 16);
const_assert_eq!(offset_of!(KernelDispatchPacket, grid_size_z), 20);
const_assert_eq!(offset_of!(KernelDispatchPacket, private_segment_size), 24);
const_assert_eq!(offset_of!(KernelDispatchPacket, group_segment_size), 28);
const_assert_eq!(offset_of!(KernelDispatchPacket, kernel_object), 32);
const_assert_eq!(offset_of!(KernelDispatchPacket, kernarg_address), 40);
const_assert_eq!(offset_of!(KernelDispatchPacket, reserved2), 48);
const_assert_eq!(offset_of!(KernelDispatchPacket, completion_signal), 56);

/// `hsa_system_info_t` values (`hsa_system_get_info`).
pub mod system_info {
    /// `u16`.
    pub const VERSION_MAJOR: u32 = 0;
    /// `u16`.
    pub const VERSION_MINOR: u32 = 1;
    /// `u64`, in ticks of `TIMESTAMP_FREQUENCY`.
    pub const TIMESTAMP: u32 = 2;
    /// `u64`, in Hz.
    pub const TIMESTAMP_FREQUENCY: u32 = 3;
    /// `u64`, in timestamp ticks.
    pub const SIGNAL_MAX_WAIT: u32 = 4;
    pub const ENDIANNESS: u32 = 5;
    pub const MACHINE_MODEL: u32 = 6;
}

/// `hsa_agent_info_t` values (`hsa_agent_get_info`), with the type each one writes.
pub mod agent_info {
    /// `[c_char; 64]`, NUL-terminated (`"gfx90a"` for a GPU).
    pub const NAME: u32 = 0;
    /// `[c_char; 64]`, NUL-terminated.
    pub const VENDOR_NAME: u32 = 1;
    /// `u32` bit set of [`super::agent_feature`] values.
    pub const FEATURE: u32 = 2;
    pub const MACHINE_MODEL: u32 = 3;
    /// `u32`, a [`super::profile`] value.
    pub const PROFILE: u32 = 4;
    pub const DEFAULT_FLOAT_ROUNDING_MODE: u32 = 5;
    /// `u32`.
    pub const WAVEFRONT_SIZE: u32 = 6;
    /// `[u16; 3]`.
    pub const WORKGROUP_MAX_DIM: u32 = 7;
    /// `u32`.
    pub const WORKGROUP_MAX_SIZE: u32 = 8;
    /// `[u32; 3]` (`hsa_dim3_t`).
    pub const GRID_MAX_DIM: u32 = 9;
    /// `u32`.
    pub const GRID_MAX_SIZE: u32 = 10;
    /// `u32`.
    pub const QUEUES_MAX: u32 = 12;
    /// `u32`.
    pub const QUEUE_MIN_SIZE: u32 = 13;
    /// `u32`.
    pub const QUEUE_MAX_SIZE: u32 = 14;
    /// `u32`, a [`super::queue_type`] value.
    pub const QUEUE_TYPE: u32 = 15;
    /// `u32`.
    pub const NODE: u32 = 16;
    /// `u32`, a [`super::device_type`] value.
    pub const DEVICE: u32 = 17;
    /// `[u32; 4]`, bytes per cache level.
    pub const CACHE_SIZE: u32 = 18;
    /// [`super::Isa`] (deprecated; prefer `hsa_agent_iterate_isas`).
    pub const ISA: u32 = 19;
    /// `u16`.
    pub const VERSION_MAJOR: u32 = 21;
    /// `u16`.
    pub const VERSION_MINOR: u32 = 22;
}

/// `hsa_amd_agent_info_t` values, also passed to `hsa_agent_get_info`.
pub mod amd_agent_info {
    /// `u32`.
    pub const CHIP_ID: u32 = 0xA000;
    /// `u32`.
    pub const CACHELINE_SIZE: u32 = 0xA001;
    /// `u32`.
    pub const COMPUTE_UNIT_COUNT: u32 = 0xA002;
    /// `u32`, in MHz.
    pub const MAX_CLOCK_FREQUENCY: u32 = 0xA003;
    /// `u32`.
    pub const DRIVER_NODE_ID: u32 = 0xA004;
    /// `u32`, PCI bus/device/function.
    pub const BDFID: u32 = 0xA006;
    /// `u32`, in MHz.
    pub const MEMORY_MAX_FREQUENCY: u32 = 0xA008;
    /// `[c_char; 64]`, the marketing name.
    pub const PRODUCT_NAME: u32 = 0xA009;
    /// `u32`.
    pub const MAX_WAVES_PER_CU: u32 = 0xA00A;
    /// `u32`.
    pub const NUM_SIMDS_PER_CU: u32 = 0xA00B;
    /// `u32`.
    pub const NUM_SHADER_ENGINES: u32 = 0xA00C;
    /// `[c_char; 21]`, NUL-terminated (`"GPU-..."`).
    pub const UUID: u32 = 0xA011;
}

/// `hsa_device_type_t`.
pub mod device_type {
    pub const CPU: u32 = 0;
    pub const GPU: u32 = 1;
    pub const DSP: u32 = 2;
}

/// `hsa_agent_feature_t` bits.
pub mod agent_feature {
    pub const KERNEL_DISPATCH: u32 = 1;
    pub const AGENT_DISPATCH: u32 = 2;
}

/// `hsa_profile_t`.
pub mod profile {
    pub const BASE: u32 = 0;
    pub const FULL: u32 = 1;
}

/// `hsa_default_float_rounding_mode_t`.
pub mod float_rounding_mode {
    pub const DEFAULT: u32 = 0;
    pub const ZERO: u32 = 1;
    pub const NEAR: u32 = 2;
}

/// `hsa_isa_info_t` values (`hsa_isa_get_info_alt`).
pub mod isa_info {
    /// `u32`, excluding any NUL.
    pub const NAME_LENGTH: u32 = 0;
    /// `NAME_LENGTH` chars, not NUL-terminated (`"amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"`).
    pub const NAME: u32 = 1;
}

/// `hsa_amd_memory_pool_info_t` values (`hsa_amd_memory_pool_get_info`).
pub mod pool_info {
    /// `u32`, a [`super::segment`] value.
    pub const SEGMENT: u32 = 0;
    /// `u32` bit set of [`super::global_flag`] values (global segment only).
    pub const GLOBAL_FLAGS: u32 = 1;
    /// `usize`.
    pub const SIZE: u32 = 2;
    /// `bool`.
    pub const RUNTIME_ALLOC_ALLOWED: u32 = 5;
    /// `usize`.
    pub const RUNTIME_ALLOC_GRANULE: u32 = 6;
    /// `usize`.
    pub const RUNTIME_ALLOC_ALIGNMENT: u32 = 7;
    /// `bool`.
    pub const ACCESSIBLE_BY_ALL: u32 = 15;
    /// `usize`.
    pub const ALLOC_MAX_SIZE: u32 = 16;
}

/// `hsa_amd_segment_t`.
pub mod segment {
    pub const GLOBAL: u32 = 0;
    pub const READONLY: u32 = 1;
    pub const PRIVATE: u32 = 2;
    pub const GROUP: u32 = 3;
}

/// `hsa_amd_memory_pool_global_flag_t` bits.
pub mod global_flag {
    /// The pool can hold kernel arguments.
    pub const KERNARG_INIT: u32 = 1;
    pub const FINE_GRAINED: u32 = 2;
    pub const COARSE_GRAINED: u32 = 4;
}

/// `hsa_symbol_kind_t`.
pub mod symbol_kind {
    pub const VARIABLE: u32 = 0;
    pub const KERNEL: u32 = 1;
    pub const INDIRECT_FUNCTION: u32 = 2;
}

/// `hsa_executable_symbol_info_t` values (`hsa_executable_symbol_get_info`).
pub mod symbol_info {
    /// `u32`, a [`super::symbol_kind`] value.
    pub const TYPE: u32 = 0;
    /// `u32`.
    pub const NAME_LENGTH: u32 = 1;
    /// `NAME_LENGTH` chars, not NUL-terminated.
    pub const NAME: u32 = 2;
    /// [`super::Agent`].
    pub const AGENT: u32 = 20;
    /// `u64`, the device address of a variable.
    pub const VARIABLE_ADDRESS: u32 = 21;
    /// `u32`.
    pub const VARIABLE_ALIGNMENT: u32 = 8;
    /// `u32`, in bytes.
    pub const VARIABLE_SIZE: u32 = 9;
    /// `u64`, the value for a dispatch packet's `kernel_object`.
    pub const KERNEL_OBJECT: u32 = 22;
    /// `u32`, in bytes.
    pub const KERNEL_KERNARG_SEGMENT_SIZE: u32 = 11;
    /// `u32`, in bytes.
    pub const KERNEL_KERNARG_SEGMENT_ALIGNMENT: u32 = 12;
    /// `u32`, bytes of LDS.
    pub const KERNEL_GROUP_SEGMENT_SIZE: u32 = 13;
    /// `u32`, bytes of scratch per work-item.
    pub const KERNEL_PRIVATE_SEGMENT_SIZE: u32 = 14;
    /// `bool`: the private size above is only a lower bound.
    pub const KERNEL_DYNAMIC_CALLSTACK: u32 = 15;
}

/// AQL packet header and setup fields (`hsa_packet_type_t`, `hsa_fence_scope_t`,
/// `hsa_packet_header_t`, `hsa_kernel_dispatch_packet_setup_t`).
pub mod packet {
    pub const PACKET_TYPE_VENDOR_SPECIFIC: u16 = 0;
    /// What every slot holds until a producer publishes a packet there.
    pub const PACKET_TYPE_INVALID: u16 = 1;
    pub const PACKET_TYPE_KERNEL_DISPATCH: u16 = 2;
    pub const PACKET_TYPE_BARRIER_AND: u16 = 3;

    pub const FENCE_SCOPE_NONE: u16 = 0;
    pub const FENCE_SCOPE_AGENT: u16 = 1;
    pub const FENCE_SCOPE_SYSTEM: u16 = 2;

    /// Bit offsets within `header`; the type takes 8 bits, the barrier 1, each scope 2.
    pub const HEADER_TYPE: u32 = 0;
    pub const HEADER_BARRIER: u32 = 8;
    pub const HEADER_SCACQUIRE_FENCE_SCOPE: u32 = 9;
    pub const HEADER_SCRELEASE_FENCE_SCOPE: u32 = 11;

    /// Bit offset of the dimension count (2 bits) within `setup`.
    pub const KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS: u32 = 0;
}

/// `hsa_queue_type_t`.
pub mod queue_type {
    pub const MULTI: u32 = 0;
    pub const SINGLE: u32 = 1;
}

/// `hsa_signal_condition_t`.
pub mod signal_condition {
    pub const EQ: u32 = 0;
    pub const NE: u32 = 1;
    pub const LT: u32 = 2;
    pub const GTE: u32 = 3;
}

/// `hsa_wait_state_t`: how a waiting host thread should wait.
pub mod wait_state {
    /// Sleep in the kernel driver.
    pub const BLOCKED: u32 = 0;
    /// Spin.
    pub const ACTIVE: u32 = 1;
}

/// Callback of `hsa_iterate_agents`; return [`STATUS_INFO_BREAK`] to stop.
pub type AgentCallback = Option<unsafe extern "C" fn(Agent, *mut c_void) -> Status>;
/// Callback of `hsa_agent_iterate_isas`.
pub type IsaCallback = Option<unsafe extern "C" fn(Isa, *mut c_void) -> Status>;
/// Callback of `hsa_amd_agent_iterate_memory_pools`.
pub type MemoryPoolCallback = Option<unsafe extern "C" fn(MemoryPool, *mut c_void) -> Status>;
/// Error callback of `hsa_queue_create`, called on a runtime thread when the queue faults.
pub type QueueErrorCallback = Option<unsafe extern "C" fn(Status, *mut Queue, *mut c_void)>;

/// The shared object the runtime ships as.
pub const RUNTIME_LIBRARY: &str = "libhsa-runtime64.so.1";

macro_rules! hsa_api {
    ($($field:ident = $symbol:literal: fn($($ty:ty),* $(,)?) $(-> $ret:ty)?;)*) => {
        /// The runtime entry points the plugin calls, resolved once from the loaded library.
        ///
        /// Plain function pointers, hence `Send + Sync`; tests build one from fake functions to
        /// run the plugin without a GPU.
        pub struct Api {
            $(pub $field: unsafe extern "C" fn($($ty),*) $(-> $ret)?,)*
        }

        impl Api {
            /// Looks every entry point up in `handle`; the first missing one is the error, which
            /// names `library`.
            ///
            /// # Safety
            /// `handle` is a live `dlopen` handle of the HSA runtime, never closed afterwards
            /// (the pointers in the table point into it).
            pub unsafe fn resolve(handle: *mut c_void, library: &str) -> Result<Self, String> {
                Ok(Self {
                    $($field: {
                        let name = concat!($symbol, "\0");
                        // SAFETY: a live handle (caller) and a NUL-terminated name.
                        let address = unsafe { libc::dlsym(handle, name.as_ptr() as *const c_char) };
                        if address.is_null() {
                            return Err(format!(
                                "{} has no entry point {} (runtime too old?)",
                                library, $symbol
                            ));
                        }
                        // SAFETY: the runtime exports this symbol with the signature the headers
                        // declare, which the field type repeats.
                        unsafe {
                            core::mem::transmute::<*mut c_void, unsafe extern "C" fn($($ty),*) $(-> $ret)?>(address)
                        }
                    },)*
                })
            }
        }
    };
}

hsa_api! {
    init = "hsa_init": fn() -> Status;
    shut_down = "hsa_shut_down": fn() -> Status;
    status_string = "hsa_status_string": fn(Status, *mut *const c_char) -> Status;
    system_get_info = "hsa_system_get_info": fn(u32, *mut c_void) -> Status;
    iterate_agents = "hsa_iterate_agents": fn(AgentCallback, *mut c_void) -> Status;
    agent_get_info = "hsa_agent_get_info": fn(Agent, u32, *mut c_void) -> Status;
    agent_iterate_isas = "hsa_agent_iterate_isas": fn(Agent, IsaCallback, *mut c_void) -> Status;
    isa_get_info_alt = "hsa_isa_get_info_alt": fn(Isa, u32, *mut c_void) -> Status;
    amd_agent_iterate_memory_pools = "hsa_amd_agent_iterate_memory_pools":
        fn(Agent, MemoryPoolCallback, *mut c_void) -> Status;
    amd_memory_pool_get_info = "hsa_amd_memory_pool_get_info":
        fn(MemoryPool, u32, *mut c_void) -> Status;
    amd_memory_pool_allocate = "hsa_amd_memory_pool_allocate":
        fn(MemoryPool, usize, u32, *mut *mut c_void) -> Status;
    amd_memory_pool_free = "hsa_amd_memory_pool_free": fn(*mut c_void) -> Status;
    amd_agents_allow_access = "hsa_amd_agents_allow_access":
        fn(u32, *const Agent, *const u32, *const c_void) -> Status;
    amd_memory_async_copy = "hsa_amd_memory_async_copy": fn(
        *mut c_void, Agent, *const c_void, Agent, usize, u32, *const Signal, Signal,
    ) -> Status;
    amd_memory_lock = "hsa_amd_memory_lock":
        fn(*mut c_void, usize, *mut Agent, c_int, *mut *mut c_void) -> Status;
    amd_memory_unlock = "hsa_amd_memory_unlock": fn(*mut c_void) -> Status;
    amd_profiling_set_profiler_enabled = "hsa_amd_profiling_set_profiler_enabled":
        fn(*mut Queue, c_int) -> Status;
    amd_profiling_async_copy_enable = "hsa_amd_profiling_async_copy_enable": fn(bool) -> Status;
    amd_profiling_get_dispatch_time = "hsa_amd_profiling_get_dispatch_time":
        fn(Agent, Signal, *mut ProfilingTime) -> Status;
    amd_profiling_get_async_copy_time = "hsa_amd_profiling_get_async_copy_time":
        fn(Signal, *mut ProfilingTime) -> Status;
    amd_profiling_convert_tick_to_system_domain =
        "hsa_amd_profiling_convert_tick_to_system_domain": fn(Agent, u64, *mut u64) -> Status;
    amd_pointer_info = "hsa_amd_pointer_info": fn(
        *const c_void, *mut PointerInfo, Option<unsafe extern "C" fn(usize) -> *mut c_void>,
        *mut u32, *mut *mut Agent,
    ) -> Status;
    signal_create = "hsa_signal_create":
        fn(SignalValue, u32, *const Agent, *mut Signal) -> Status;
    signal_destroy = "hsa_signal_destroy": fn(Signal) -> Status;
    signal_store_screlease = "hsa_signal_store_screlease": fn(Signal, SignalValue);
    signal_store_relaxed = "hsa_signal_store_relaxed": fn(Signal, SignalValue);
    signal_load_scacquire = "hsa_signal_load_scacquire": fn(Signal) -> SignalValue;
    signal_wait_scacquire = "hsa_signal_wait_scacquire":
        fn(Signal, u32, SignalValue, u64, u32) -> SignalValue;
    queue_create = "hsa_queue_create": fn(
        Agent, u32, u32, QueueErrorCallback, *mut c_void, u32, u32, *mut *mut Queue,
    ) -> Status;
    queue_destroy = "hsa_queue_destroy": fn(*mut Queue) -> Status;
    queue_add_write_index_relaxed = "hsa_queue_add_write_index_relaxed":
        fn(*const Queue, u64) -> u64;
    queue_load_read_index_scacquire = "hsa_queue_load_read_index_scacquire":
        fn(*const Queue) -> u64;
    code_object_reader_create_from_memory = "hsa_code_object_reader_create_from_memory":
        fn(*const c_void, usize, *mut CodeObjectReader) -> Status;
    code_object_reader_destroy = "hsa_code_object_reader_destroy":
        fn(CodeObjectReader) -> Status;
    executable_create_alt = "hsa_executable_create_alt":
        fn(u32, u32, *const c_char, *mut Executable) -> Status;
    executable_load_agent_code_object = "hsa_executable_load_agent_code_object":
        fn(Executable, Agent, CodeObjectReader, *const c_char, *mut LoadedCodeObject) -> Status;
    executable_freeze = "hsa_executable_freeze": fn(Executable, *const c_char) -> Status;
    executable_destroy = "hsa_executable_destroy": fn(Executable) -> Status;
    executable_get_symbol_by_name = "hsa_executable_get_symbol_by_name":
        fn(Executable, *const c_char, *const Agent, *mut ExecutableSymbol) -> Status;
    executable_symbol_get_info = "hsa_executable_symbol_get_info":
        fn(ExecutableSymbol, u32, *mut c_void) -> Status;
}

// The table holds only function pointers, so it may be shared across threads without any
// `unsafe impl`; this keeps it that way.
static_assertions::assert_impl_all!(Api: Send, Sync);

/// Opens the runtime library at `library` and resolves [`Api`]. The handle is never closed.
pub fn load(library: &str) -> Result<&'static Api, String> {
    let c_path = std::ffi::CString::new(library)
        .map_err(|_| format!("runtime path {library:?} contains a NUL byte"))?;
    // SAFETY: a valid C string; dlopen reports failure with null.
    let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        // dlerror names the library: "libhsa-runtime64.so.1: cannot open shared object file: ...".
        return Err(rustomp_plugin::last_dl_error());
    }
    // SAFETY: a live handle that stays open for the life of the process.
    let api = unsafe { Api::resolve(handle, library) }?;
    Ok(Box::leak(Box::new(api)))
}
