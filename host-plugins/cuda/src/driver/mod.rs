//! The CUDA driver API in three layers: `sys` (declarations and the entry points resolved at
//! run time), `result` (one checked function per call), `safe` (owning types released on drop);
//! `error` holds the error type and the mapping of CUDA codes onto the plugin's error kinds.

pub mod error;
pub mod result;
pub mod safe;
pub mod sys;
