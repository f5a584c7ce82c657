//! Binary layouts shared by clang-22's generated code, the host runtime (`libomptarget.so.22.1`,
//! its plugins) and the device runtime (`devicertl`).
//!
//! Contract: every type here is `#[repr(C)]` and mirrors one structure clang-22 emits or reads
//! (see `llvm/Frontend/OpenMP/OMPConstants.h`, `llvm/Object/OffloadBinary.h` and the IR clang
//! produces). Each carries compile-time size and offset assertions, so a layout drift fails the
//! build instead of corrupting memory. The crate is `no_std` and holds data only: no validation
//! beyond what a constructor documents; callers check pointers before dereferencing.
//!
//! The structures the plugins copy to or from device memory as bytes derive `zerocopy`'s
//! `IntoBytes` (written) or `FromBytes` (read): the derives refuse padding in what is written and
//! any field that is not plain bytes, such as a raw pointer (its provenance cannot round-trip
//! through bytes), so those byte images need no hand-written offsets.
#![no_std]

pub mod fortran_output;
pub mod ompt;

use core::ffi::{c_char, c_void};
use core::mem::{offset_of, size_of};
use static_assertions::const_assert_eq;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `ident_t`: source location of a construct. `psource` is `";file;function;line;column;;"`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Ident {
    pub reserved_1: i32,
    pub flags: i32,
    pub reserved_2: i32,
    pub reserved_3: i32,
    pub psource: *const c_char,
}
const_assert_eq!(size_of::<Ident>(), 24);
const_assert_eq!(offset_of!(Ident, psource), 16);

/// The LLVM 20+ `__tgt_offload_entry` (section `llvm_offload_entries`), 56 bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct OffloadEntry {
    pub reserved: u64,
    pub version: u16,
    pub kind: u16,
    pub flags: u32,
    pub address: *mut c_void,
    pub symbol_name: *const c_char,
    pub size: u64,
    pub data: u64,
    pub aux_address: *mut c_void,
}
const_assert_eq!(size_of::<OffloadEntry>(), 56);
const_assert_eq!(offset_of!(OffloadEntry, flags), 12);
const_assert_eq!(offset_of!(OffloadEntry, address), 16);
const_assert_eq!(offset_of!(OffloadEntry, symbol_name), 24);
const_assert_eq!(offset_of!(OffloadEntry, size), 32);
const_assert_eq!(offset_of!(OffloadEntry, data), 40);
const_assert_eq!(offset_of!(OffloadEntry, aux_address), 48);

/// `OffloadEntry::kind` of entries produced for OpenMP (`object::OFK_OpenMP`).
pub const OFFLOAD_KIND_OPENMP: u16 = 1;

bitflags::bitflags! {
    /// `OffloadEntry::flags` of OpenMP entries (`OMPTargetGlobalVarEntryKind` and
    /// `OMPTargetRegionEntryKind`). A kernel has size 0; a global has its size.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct EntryFlags: u32 {
        /// `declare target link`: the device holds a pointer to the host variable's mapping.
        const LINK = 0x1;
        /// For functions, a constructor to run once on load; for globals, `enter`.
        const CTOR_OR_ENTER = 0x2;
        /// A destructor to run at unload.
        const DTOR = 0x4;
        /// `declare target indirect` function (size 8: the device global holds its address).
        const INDIRECT = 0x8;
        /// `requires` clauses; `OffloadEntry::data` carries the `RequiresFlags`.
        const REQUIRES = 0x10;
        /// `declare target indirect` C++ vtable.
        const INDIRECT_VTABLE = 0x20;
    }
}

bitflags::bitflags! {
    /// The `requires` directive flags (`OpenMPOffloadingRequiresDirFlags`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct RequiresFlags: u64 {
        const UNSPECIFIED = 0x1;
        const REVERSE_OFFLOAD = 0x2;
        const UNIFIED_ADDRESS = 0x4;
        const UNIFIED_SHARED_MEMORY = 0x8;
        const DYNAMIC_ALLOCATORS = 0x10;
        const _ = !0;
    }
}

/// `__tgt_device_image`: one embedded image and the entries it provides.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DeviceImage {
    pub image_start: *mut c_void,
    pub image_end: *mut c_void,
    pub entries_begin: *mut OffloadEntry,
    pub entries_end: *mut OffloadEntry,
}
const_assert_eq!(size_of::<DeviceImage>(), 32);

/// `__tgt_bin_desc`: what `__tgt_register_lib` receives for one executable or shared object.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct BinDesc {
    pub num_device_images: i32,
    pub device_images: *mut DeviceImage,
    pub host_entries_begin: *mut OffloadEntry,
    pub host_entries_end: *mut OffloadEntry,
}
const_assert_eq!(size_of::<BinDesc>(), 32);
const_assert_eq!(offset_of!(BinDesc, device_images), 8);

/// `OffloadBinary::Header`: the container (`0x10FF10AD`) around a device image.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct OffloadBinaryHeader {
    pub magic: [u8; 4],
    pub version: u32,
    pub size: u64,
    pub entry_offset: u64,
    pub entry_size: u64,
}
const_assert_eq!(size_of::<OffloadBinaryHeader>(), 32);
pub const OFFLOAD_BINARY_MAGIC: [u8; 4] = [0x10, 0xFF, 0x10, 0xAD];

/// `OffloadBinary::Entry`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct OffloadBinaryEntry {
    pub image_kind: u16,
    pub offload_kind: u16,
    pub flags: u32,
    pub string_offset: u64,
    pub num_strings: u64,
    pub image_offset: u64,
    pub image_size: u64,
}
const_assert_eq!(size_of::<OffloadBinaryEntry>(), 40);

/// `OffloadBinary::StringEntry`: offsets of a NUL-terminated key and value.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct OffloadBinaryStringEntry {
    pub key_offset: u64,
    pub value_offset: u64,
}
const_assert_eq!(size_of::<OffloadBinaryStringEntry>(), 16);

/// `OffloadBinary` image kinds (`IMG_*`).
pub mod image_kind {
    pub const OBJECT: u16 = 1;
    pub const BITCODE: u16 = 2;
    pub const CUBIN: u16 = 3;
    pub const FATBINARY: u16 = 4;
    pub const PTX: u16 = 5;
}

bitflags::bitflags! {
    /// `KernelArgs::flags`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct KernelArgsFlags: u64 {
        const NO_WAIT = 0x1;
        const IS_CUDA = 0x2;
        const _ = !0;
    }
}

/// `__tgt_kernel_arguments`, version 3, as clang-22 fills it for `__tgt_target_kernel`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KernelArgs {
    pub version: u32,
    pub num_args: u32,
    pub arg_base_ptrs: *mut *mut c_void,
    pub arg_ptrs: *mut *mut c_void,
    pub arg_sizes: *mut i64,
    pub arg_types: *mut i64,
    pub arg_names: *mut *const c_char,
    pub arg_mappers: *mut *mut c_void,
    pub tripcount: u64,
    pub flags: u64,
    pub num_teams: [u32; 3],
    pub thread_limit: [u32; 3],
    pub dyn_cgroup_mem: u32,
}
const_assert_eq!(size_of::<KernelArgs>(), 104);
const_assert_eq!(offset_of!(KernelArgs, tripcount), 56);
const_assert_eq!(offset_of!(KernelArgs, num_teams), 72);
const_assert_eq!(offset_of!(KernelArgs, thread_limit), 84);
const_assert_eq!(offset_of!(KernelArgs, dyn_cgroup_mem), 96);
pub const KERNEL_ARGS_VERSION: u32 = 3;

bitflags::bitflags! {
    /// Map-type bits of one list item (`OpenMPOffloadMappingFlags`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct MapType: u64 {
        const TO = 0x01;
        const FROM = 0x02;
        const ALWAYS = 0x04;
        const DELETE = 0x08;
        const PTR_AND_OBJ = 0x10;
        const TARGET_PARAM = 0x20;
        const RETURN_PARAM = 0x40;
        const PRIVATE = 0x80;
        const LITERAL = 0x100;
        const IMPLICIT = 0x200;
        const CLOSE = 0x400;
        const PRESENT = 0x1000;
        const OMPX_HOLD = 0x2000;
        const ATTACH = 0x4000;
        const NON_CONTIG = 0x1000_0000_0000;
        const MEMBER_OF = 0xffff_0000_0000_0000;
        const _ = !0;
    }
}

impl MapType {
    /// The 1-based index of the parent struct entry from the `MEMBER_OF` field, if any.
    pub fn member_of(self) -> Option<usize> {
        let field = (self.bits() & Self::MEMBER_OF.bits()) >> 48;
        (field != 0 && field != 0xffff).then(|| field as usize - 1)
    }
}

/// `__tgt_target_non_contig`: one dimension of a non-contiguous `target update`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NonContigDim {
    pub offset: i64,
    pub count: i64,
    pub stride: i64,
}
const_assert_eq!(size_of::<NonContigDim>(), 24);

/// `ConfigurationEnvironmentTy`: compile-time facts about one kernel. Read from device memory
/// only (a padding byte follows `exec_mode`, so it has no `IntoBytes`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, FromBytes, Immutable, KnownLayout)]
pub struct ConfigurationEnvironment {
    pub use_generic_state_machine: u8,
    pub may_use_nested_parallelism: u8,
    pub exec_mode: u8,
    pub min_threads: i32,
    pub max_threads: i32,
    pub min_teams: i32,
    pub max_teams: i32,
    pub reduction_data_size: i32,
    pub reduction_buffer_length: i32,
}
const_assert_eq!(size_of::<ConfigurationEnvironment>(), 28);
const_assert_eq!(offset_of!(ConfigurationEnvironment, min_threads), 4);
const_assert_eq!(
    offset_of!(ConfigurationEnvironment, reduction_buffer_length),
    24
);

/// `OMPTgtExecModeFlags`.
pub mod exec_mode {
    pub const BARE: u8 = 0;
    pub const GENERIC: u8 = 1;
    pub const SPMD: u8 = 2;
    pub const GENERIC_SPMD: u8 = 3;
    pub const SPMD_NO_LOOP: u8 = 6;

    /// Whether all threads of a team run the region body (everything but pure generic).
    pub const fn is_spmd(mode: u8) -> bool {
        mode & SPMD != 0
    }
}

/// `DynamicEnvironmentTy`: per-kernel mutable state the compiler allocates.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct DynamicEnvironment {
    pub debug_indention_level: u16,
}
const_assert_eq!(size_of::<DynamicEnvironment>(), 2);

/// `KernelEnvironmentTy`: the `<kernel>_kernel_environment` global clang emits per kernel.
/// The plugin reads it from device memory as bytes; the device runtime reads `configuration`.
#[repr(C)]
#[derive(Debug, Clone, Copy, FromBytes, Immutable, KnownLayout)]
pub struct KernelEnvironment {
    pub configuration: ConfigurationEnvironment,
    /// Device address of the kernel's `ident_t` (C: `IdentTy *`; no one here dereferences it).
    pub ident: u64,
    /// Device address of the kernel's `DynamicEnvironmentTy` (C: `DynamicEnvironmentTy *`; no
    /// one here dereferences it).
    pub dynamic_env: u64,
}
const_assert_eq!(size_of::<KernelEnvironment>(), 48);
const_assert_eq!(offset_of!(KernelEnvironment, ident), 32);
const_assert_eq!(offset_of!(KernelEnvironment, dynamic_env), 40);

/// `KernelLaunchEnvironmentTy`: the kernel's first parameter, filled by the plugin per launch.
///
/// No `zerocopy` derives: `reduction_buffer` stays a pointer because the device runtime hands
/// it out as one (`__kmpc_reduction_get_fixed_buffer`) and the CPU plugin and the emulation tests
/// store host pointers in it; as a `u64` the device code would gain an integer-to-pointer cast.
/// The GPU plugins write its 16 bytes with `rustomp_plugin::layout::launch_environment_bytes`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KernelLaunchEnvironment {
    /// Teams that finished their part of a teams reduction (atomically incremented).
    pub reduction_cnt: u32,
    /// Round counter for reductions whose buffer holds fewer slots than there are teams.
    pub reduction_iter_cnt: u32,
    /// `ReductionDataSize * ReductionBufferLength` bytes of device memory, or null.
    pub reduction_buffer: *mut c_void,
}
const_assert_eq!(size_of::<KernelLaunchEnvironment>(), 16);
const_assert_eq!(offset_of!(KernelLaunchEnvironment, reduction_buffer), 8);

/// Bytes of argument data one `__llvm_omp_host_call` may pass.
pub const HOST_CALL_DATA_BYTES: usize = 4096;

/// The port of `__llvm_omp_host_call`: in memory the device and the host both reach while a
/// kernel runs; the device runtime finds it through `__rustomp_host_call_port`.
#[repr(C)]
pub struct HostCallPort {
    /// One of [`host_call_state`]. The device only stores it (release) and loads it (acquire):
    /// no read-modify-write of host memory crosses the bus; the host may compare-exchange it.
    pub state: u32,
    pub reserved: u32,
    /// Host address of `u64 function(void *data)`.
    pub function: u64,
    /// Bytes of `data` in use.
    pub size: u64,
    /// The function's return value, posted by the host.
    pub result: u64,
    pub data: [u8; HOST_CALL_DATA_BYTES],
}
const_assert_eq!(offset_of!(HostCallPort, function), 8);
const_assert_eq!(offset_of!(HostCallPort, size), 16);
const_assert_eq!(offset_of!(HostCallPort, result), 24);
const_assert_eq!(offset_of!(HostCallPort, data), 32);
const_assert_eq!(size_of::<HostCallPort>(), 32 + HOST_CALL_DATA_BYTES);

/// [`HostCallPort::state`] values: a device thread that holds the device runtime's lock (in
/// device memory) fills the free port and posts a request; the host takes it (serving), calls,
/// and posts the result (done); the device reads it and frees the port.
pub mod host_call_state {
    pub const FREE: u32 = 0;
    /// Not written by the current device runtime (it claims the port through its own lock).
    pub const CLAIMED: u32 = 1;
    pub const REQUEST: u32 = 2;
    pub const SERVING: u32 = 3;
    pub const DONE: u32 = 4;
}

/// `DeviceEnvironmentTy`: the device-global `__omp_rtl_device_environment`, written by the
/// plugin when it loads an image.
///
/// Byte for byte LLVM 22's (`offload/include/Shared/Environment.h`: `uint32_t DeviceDebugKind,
/// NumDevices, DeviceNum, DynamicMemSize; uint64_t ClockFrequency; uintptr_t IndirectCallTable;
/// uint64_t IndirectCallTableSize, HardwareParallelism`), which LLVM 22's libomptarget writes in
/// `DeviceTy::loadBinary` (48 bytes, looked up by name with that size): the indirect-call table
/// is a device pointer to `{host, device}` pairs sorted by host address and its entry count.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, IntoBytes, FromBytes, Immutable, KnownLayout)]
pub struct DeviceEnvironment {
    pub debug_kind: u32,
    pub num_devices: u32,
    pub device_num: u32,
    pub dynamic_mem_size: u32,
    pub clock_frequency: u64,
    /// Device address of the sorted `[FptrMapEntry]` table, or 0.
    pub indirect_call_table: usize,
    pub indirect_call_table_size: u64,
    pub hardware_parallelism: u64,
}
const_assert_eq!(size_of::<DeviceEnvironment>(), 48);
const_assert_eq!(offset_of!(DeviceEnvironment, debug_kind), 0);
const_assert_eq!(offset_of!(DeviceEnvironment, num_devices), 4);
const_assert_eq!(offset_of!(DeviceEnvironment, device_num), 8);
const_assert_eq!(offset_of!(DeviceEnvironment, dynamic_mem_size), 12);
const_assert_eq!(offset_of!(DeviceEnvironment, clock_frequency), 16);
const_assert_eq!(offset_of!(DeviceEnvironment, indirect_call_table), 24);
const_assert_eq!(offset_of!(DeviceEnvironment, indirect_call_table_size), 32);
const_assert_eq!(offset_of!(DeviceEnvironment, hardware_parallelism), 40);

/// One `{host, device}` pair of the indirect-call table (`__omp_offloading_fptr_map_ty`),
/// kept sorted by `host`.
#[repr(C)]
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    IntoBytes,
    FromBytes,
    Immutable,
    KnownLayout,
)]
pub struct FptrMapEntry {
    pub host: u64,
    pub device: u64,
}
const_assert_eq!(size_of::<FptrMapEntry>(), 16);

/// What `__rustomp_indirect_call_table` points at: the entry count, then the sorted entries, in
/// one block that never changes once published. The device reads the pointer with one load and
/// gets a (table, size) pair that belongs together, which the device environment's two fields,
/// written separately while a kernel may run, cannot promise.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, IntoBytes, FromBytes, Immutable, KnownLayout)]
pub struct IndirectTableHeader {
    pub entries: u64,
    /// Keeps the entries 16-byte aligned.
    pub reserved: u64,
}
const_assert_eq!(size_of::<IndirectTableHeader>(), 16);
const_assert_eq!(offset_of!(IndirectTableHeader, entries), 0);

/// Names of device globals the plugins read or write by symbol lookup.
pub mod symbols {
    pub const DEVICE_ENVIRONMENT: &str = "__omp_rtl_device_environment";
    pub const FPTR_MAP_POINTER: &str = "__omp_offloading_fptr_map_p";
    pub const FPTR_MAP_SIZE: &str = "__omp_offloading_fptr_map_size";
    /// Ours: one pointer to an [`IndirectTableHeader`](super::IndirectTableHeader) block.
    pub const INDIRECT_CALL_TABLE: &str = "__rustomp_indirect_call_table";
    /// The device runtime's pointer to the `__llvm_omp_host_call` port.
    pub const HOST_CALL_PORT: &str = "__rustomp_host_call_port";
    /// Suffix of the per-kernel `KernelEnvironment` global.
    pub const KERNEL_ENVIRONMENT_SUFFIX: &str = "_kernel_environment";
}

/// Device ids with a special meaning in the host API.
pub mod device_id {
    /// "Use the default device" (`OMP_DEVICEID_UNDEF`).
    pub const UNDEFINED: i64 = -1;
}

/// Offload status codes the host entry points return (`tgt_map_type` results).
pub mod status {
    pub const SUCCESS: i32 = 0;
    pub const FAIL: i32 = !0;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_of_decodes_one_based_parent() {
        assert_eq!(
            MapType::from_bits_retain(0x0001_0000_0000_0003).member_of(),
            Some(0)
        );
        assert_eq!(
            MapType::from_bits_retain(0x0003_0000_0000_0000).member_of(),
            Some(2)
        );
        assert_eq!(MapType::TO.member_of(), None);
    }

    #[test]
    fn spmd_modes() {
        assert!(!exec_mode::is_spmd(exec_mode::GENERIC));
        assert!(exec_mode::is_spmd(exec_mode::SPMD));
        assert!(exec_mode::is_spmd(exec_mode::GENERIC_SPMD));
        assert!(exec_mode::is_spmd(exec_mode::SPMD_NO_LOOP));
    }
}

/// One launch on the virtual GPU (`librustomp_vgpu.so`'s `rustomp_vgpu_launch`): the geometry,
/// and the function every emulated device thread calls with `context` (the plugin's call of the
/// kernel with its arguments). `blocks` and `threads` are the totals, `grid` and `block` their
/// three dimensions (an `ompx_bare` launch's; `[n, 1, 1]` otherwise).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct VgpuLaunch {
    pub blocks: u32,
    pub threads: u32,
    pub warp: u32,
    pub dynamic_shared_bytes: u32,
    /// Stack of each emulated thread.
    pub stack_bytes: u64,
    /// A launch still running after this many milliseconds is reported and the process stopped.
    pub watchdog_ms: u64,
    /// NUL-terminated, for messages.
    pub kernel_name: *const core::ffi::c_char,
    pub thread_entry: unsafe extern "C" fn(context: *mut core::ffi::c_void),
    pub context: *mut core::ffi::c_void,
    /// What is checked of team memory (`VGPU_CHECK_*`).
    pub checks: u32,
    /// Whose hardware the image's device code was compiled for (`VGPU_FAMILY_*`): what the
    /// virtual GPU's reports call its barriers and cross-lane operations.
    pub family: u32,
    /// The image's team memory (its `__vgpu_shared_layout`), or null: nothing to check.
    pub shared_layout: *const VgpuSharedLayout,
    pub grid: [u32; 3],
    pub block: [u32; 3],
}
const_assert_eq!(size_of::<VgpuLaunch>(), 96);
const_assert_eq!(offset_of!(VgpuLaunch, grid), 72);
const_assert_eq!(offset_of!(VgpuLaunch, block), 84);
const_assert_eq!(offset_of!(VgpuLaunch, stack_bytes), 16);
const_assert_eq!(offset_of!(VgpuLaunch, kernel_name), 32);
const_assert_eq!(offset_of!(VgpuLaunch, context), 48);
const_assert_eq!(offset_of!(VgpuLaunch, checks), 56);
const_assert_eq!(offset_of!(VgpuLaunch, family), 60);
const_assert_eq!(offset_of!(VgpuLaunch, shared_layout), 64);

/// Device code compiled for nvptx64 (`--offload-arch=sm_XX`).
pub const VGPU_FAMILY_NVPTX: u32 = 0;
/// Device code compiled for amdgcn (`--offload-arch=gfxNNN`).
pub const VGPU_FAMILY_AMDGCN: u32 = 1;

/// Team memory is not checked.
pub const VGPU_CHECK_NONE: u32 = 0;
/// Races and out-of-bounds accesses of team memory fail the launch (after their report).
pub const VGPU_CHECK_FAIL: u32 = 1;
/// They are reported and the launch goes on.
pub const VGPU_CHECK_WARN: u32 = 2;

/// A virtual-GPU image's team memory, as its retargeted IR lays it out (`build-tools`'
/// `vgpu::shared_access`): the section of its `addrspace(3)` globals, and their table.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct VgpuSharedLayout {
    pub begin: *const u8,
    pub end: *const u8,
    pub objects: *const VgpuSharedObject,
    pub objects_end: *const VgpuSharedObject,
}
const_assert_eq!(size_of::<VgpuSharedLayout>(), 32);
const_assert_eq!(offset_of!(VgpuSharedLayout, objects), 16);

/// One `addrspace(3)` global of an image.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct VgpuSharedObject {
    pub address: *const u8,
    pub bytes: u64,
    /// NUL-terminated.
    pub name: *const core::ffi::c_char,
}
const_assert_eq!(size_of::<VgpuSharedObject>(), 24);
const_assert_eq!(offset_of!(VgpuSharedObject, name), 16);

/// Where a checked access is in the device code (`__vgpu_site.N` of the retargeted IR).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct VgpuAccessSite {
    /// NUL-terminated: the source function, or the IR function without debug lines.
    pub function: *const core::ffi::c_char,
    /// NUL-terminated, or null without debug lines.
    pub file: *const core::ffi::c_char,
    pub line: u32,
    pub column: u32,
}
const_assert_eq!(size_of::<VgpuAccessSite>(), 24);
const_assert_eq!(offset_of!(VgpuAccessSite, line), 16);
