//! The OMPT device-tracing records (`omp-tools.h` of clang-22): what the runtime writes into a
//! tool's trace buffers and a tool reads back, with the constants both sides name.

use core::ffi::{c_int, c_void};
use core::mem::{offset_of, size_of};
use static_assertions::const_assert_eq;

/// `ompt_record_ompt_t`: 104 bytes, the union at 32 (clang-22's `omp-tools.h`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Record {
    pub kind: c_int,
    pub time: u64,
    pub thread_id: u64,
    pub target_id: u64,
    pub record: RecordBody,
}

/// The union's members this runtime writes.
#[repr(C)]
#[derive(Clone, Copy)]
pub union RecordBody {
    pub target: TargetRecord,
    pub data_op: DataOpRecord,
    pub kernel: KernelRecord,
    /// The union's size: its largest member (`ompt_record_target_data_op_t`, 72 bytes).
    raw: [u64; 9],
}

/// `ompt_record_target_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TargetRecord {
    pub kind: c_int,
    pub endpoint: c_int,
    pub device_num: c_int,
    pub task_id: u64,
    pub target_id: u64,
    pub codeptr_ra: *const c_void,
}

/// `ompt_record_target_data_op_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct DataOpRecord {
    pub host_op_id: u64,
    pub optype: c_int,
    pub src_addr: *mut c_void,
    pub src_device_num: c_int,
    pub dest_addr: *mut c_void,
    pub dest_device_num: c_int,
    pub bytes: usize,
    pub end_time: u64,
    pub codeptr_ra: *const c_void,
}

/// `ompt_record_target_kernel_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct KernelRecord {
    pub host_op_id: u64,
    pub requested_num_teams: u32,
    pub granted_num_teams: u32,
    pub end_time: u64,
}

const_assert_eq!(size_of::<Record>(), 104);
const_assert_eq!(offset_of!(Record, time), 8);
const_assert_eq!(offset_of!(Record, record), 32);
const_assert_eq!(size_of::<TargetRecord>(), 40);
const_assert_eq!(offset_of!(TargetRecord, task_id), 16);
const_assert_eq!(offset_of!(TargetRecord, codeptr_ra), 32);
const_assert_eq!(size_of::<DataOpRecord>(), 72);
const_assert_eq!(offset_of!(DataOpRecord, optype), 8);
const_assert_eq!(offset_of!(DataOpRecord, src_device_num), 24);
const_assert_eq!(offset_of!(DataOpRecord, dest_device_num), 40);
const_assert_eq!(offset_of!(DataOpRecord, end_time), 56);
const_assert_eq!(size_of::<KernelRecord>(), 24);
const_assert_eq!(offset_of!(KernelRecord, granted_num_teams), 12);
const_assert_eq!(offset_of!(KernelRecord, end_time), 16);

/// Bytes of one record in a buffer.
pub const RECORD_BYTES: usize = size_of::<Record>();

/// `ompt_set_result_t` values.
pub const SET_ERROR: c_int = 0;
pub const SET_NEVER: c_int = 1;
pub const SET_ALWAYS: c_int = 5;
/// `ompt_record_t`: `ompt_record_ompt`, `ompt_record_invalid`.
pub const RECORD_OMPT: c_int = 1;
pub const RECORD_INVALID: c_int = 3;

/// The record types (`ompt_callbacks_t` codes) a trace holds.
pub mod kind {
    pub const TARGET: i32 = 8;
    pub const DATA_OP: i32 = 9;
    pub const SUBMIT: i32 = 10;
}
/// An EMI callback's code is its record type's plus this (`ompt_callback_target_emi` = 33).
pub const EMI_OFFSET: i32 = 25;

/// `ompt_scope_endpoint_t`.
pub const SCOPE_BEGIN: c_int = 1;
pub const SCOPE_END: c_int = 2;
