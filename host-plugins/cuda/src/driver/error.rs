//! Driver errors: the call that failed, the `CUresult`, and the driver's own name and text for
//! it; and the one mapping from CUDA codes onto the plugin's stable [`ErrorKind`]s.

use super::sys::CUresult;
use rustomp_plugin::{ErrorKind, OffloadError};
use std::fmt;

/// A failed driver call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverError {
    /// The driver entry point, e.g. `cuMemAlloc_v2`.
    pub call: &'static str,
    pub code: CUresult,
    /// `cuGetErrorName`'s answer (or ours when the driver has none), e.g. `CUDA_ERROR_OUT_OF_MEMORY`.
    pub name: String,
    /// `cuGetErrorString`'s answer, e.g. "out of memory"; may be empty.
    pub description: String,
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.call, self.name)?;
        if !self.description.is_empty() {
            write!(f, " ({})", self.description)?;
        }
        Ok(())
    }
}

impl std::error::Error for DriverError {}

impl DriverError {
    /// The plugin error for this failure: the driver code decides the kind when it says
    /// something specific (out of memory, bad image, faulted kernel), `fallback` otherwise.
    pub fn error(&self, fallback: ErrorKind) -> OffloadError {
        OffloadError::new(kind_of(self.code).unwrap_or(fallback), self.to_string())
    }
}

/// The class of a driver error code, when the code alone says which.
pub fn kind_of(code: CUresult) -> Option<ErrorKind> {
    Some(match code {
        // CUDA_ERROR_OUT_OF_MEMORY
        2 => ErrorKind::OutOfMemory,
        // NOT_INITIALIZED, DEINITIALIZED, STUB_LIBRARY, DEVICE_UNAVAILABLE, NO_DEVICE,
        // INVALID_DEVICE, DEVICE_NOT_LICENSED, ECC_UNCORRECTABLE, NVLINK_UNCORRECTABLE,
        // SYSTEM_NOT_READY .. MPS/CDP errors, EXTERNAL_DEVICE
        3 | 4 | 34 | 46 | 100..=102 | 214 | 220 | 802 | 803 | 805..=812 | 911 => {
            ErrorKind::DeviceUnavailable
        }
        // INVALID_IMAGE, NO_BINARY_FOR_GPU, INVALID_PTX, JIT_COMPILER_NOT_FOUND,
        // UNSUPPORTED_PTX_VERSION, JIT_COMPILATION_DISABLED, INVALID_SOURCE, FILE_NOT_FOUND,
        // SHARED_OBJECT_SYMBOL_NOT_FOUND, SHARED_OBJECT_INIT_FAILED
        200 | 209 | 218 | 221..=223 | 300..=303 => ErrorKind::InvalidImage,
        // CUDA_ERROR_NOT_FOUND (a symbol)
        500 => ErrorKind::SymbolNotFound,
        // ILLEGAL_ADDRESS .. TENSOR_MEMORY_LEAK: a kernel faulted or could not start; the
        // context is unusable afterwards for the sticky ones.
        700..=721 => ErrorKind::LaunchFailed,
        // CALL_REQUIRES_NEWER_DRIVER, UNSUPPORTED_LIMIT, PEER_ACCESS_UNSUPPORTED,
        // UNSUPPORTED_EXEC_AFFINITY, UNSUPPORTED_DEVSIDE_SYNC, NOT_SUPPORTED, COMPAT_NOT_SUPPORTED_ON_DEVICE
        36 | 215 | 217 | 224 | 225 | 801 | 804 => ErrorKind::Unsupported,
        // INVALID_VALUE, INVALID_CONTEXT, CONTEXT_ALREADY_CURRENT, INVALID_HANDLE, ILLEGAL_STATE
        1 | 201 | 202 | 400 | 401 => ErrorKind::InvalidArgument,
        _ => return None,
    })
}

/// `CUresult` names from `cuda.h`, for drivers whose `cuGetErrorName` does not know a code.
pub fn code_name(code: CUresult) -> Option<&'static str> {
    Some(match code {
        0 => "CUDA_SUCCESS",
        1 => "CUDA_ERROR_INVALID_VALUE",
        2 => "CUDA_ERROR_OUT_OF_MEMORY",
        3 => "CUDA_ERROR_NOT_INITIALIZED",
        4 => "CUDA_ERROR_DEINITIALIZED",
        34 => "CUDA_ERROR_STUB_LIBRARY",
        36 => "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER",
        46 => "CUDA_ERROR_DEVICE_UNAVAILABLE",
        100 => "CUDA_ERROR_NO_DEVICE",
        101 => "CUDA_ERROR_INVALID_DEVICE",
        102 => "CUDA_ERROR_DEVICE_NOT_LICENSED",
        200 => "CUDA_ERROR_INVALID_IMAGE",
        201 => "CUDA_ERROR_INVALID_CONTEXT",
        209 => "CUDA_ERROR_NO_BINARY_FOR_GPU",
        215 => "CUDA_ERROR_UNSUPPORTED_LIMIT",
        218 => "CUDA_ERROR_INVALID_PTX",
        221 => "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
        222 => "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
        223 => "CUDA_ERROR_JIT_COMPILATION_DISABLED",
        300 => "CUDA_ERROR_INVALID_SOURCE",
        302 => "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND",
        400 => "CUDA_ERROR_INVALID_HANDLE",
        500 => "CUDA_ERROR_NOT_FOUND",
        600 => "CUDA_ERROR_NOT_READY",
        700 => "CUDA_ERROR_ILLEGAL_ADDRESS",
        701 => "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
        702 => "CUDA_ERROR_LAUNCH_TIMEOUT",
        710 => "CUDA_ERROR_ASSERT",
        714 => "CUDA_ERROR_HARDWARE_STACK_ERROR",
        715 => "CUDA_ERROR_ILLEGAL_INSTRUCTION",
        716 => "CUDA_ERROR_MISALIGNED_ADDRESS",
        717 => "CUDA_ERROR_INVALID_ADDRESS_SPACE",
        718 => "CUDA_ERROR_INVALID_PC",
        719 => "CUDA_ERROR_LAUNCH_FAILED",
        801 => "CUDA_ERROR_NOT_SUPPORTED",
        803 => "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
        999 => "CUDA_ERROR_UNKNOWN",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_onto_stable_kinds() {
        assert_eq!(kind_of(2), Some(ErrorKind::OutOfMemory));
        assert_eq!(kind_of(100), Some(ErrorKind::DeviceUnavailable));
        assert_eq!(kind_of(34), Some(ErrorKind::DeviceUnavailable));
        assert_eq!(kind_of(200), Some(ErrorKind::InvalidImage));
        assert_eq!(kind_of(209), Some(ErrorKind::InvalidImage));
        assert_eq!(kind_of(218), Some(ErrorKind::InvalidImage));
        assert_eq!(kind_of(500), Some(ErrorKind::SymbolNotFound));
        assert_eq!(kind_of(700), Some(ErrorKind::LaunchFailed));
        assert_eq!(kind_of(701), Some(ErrorKind::LaunchFailed));
        assert_eq!(kind_of(719), Some(ErrorKind::LaunchFailed));
        assert_eq!(kind_of(801), Some(ErrorKind::Unsupported));
        assert_eq!(kind_of(1), Some(ErrorKind::InvalidArgument));
        assert_eq!(kind_of(999), None);
        assert_eq!(kind_of(0), None);
    }

    #[test]
    fn every_named_error_code_except_generic_ones_has_a_kind() {
        // Codes that say nothing about the failure (and success) are left to the call site.
        let generic = [0, 600, 999];
        for code in 0..1000 {
            if let Some(name) = code_name(code) {
                assert!(name.starts_with("CUDA_"), "{code}: {name}");
                if !generic.contains(&code) {
                    assert!(kind_of(code).is_some(), "{name} ({code}) has no error kind");
                }
            }
        }
    }

    #[test]
    fn message_names_call_code_and_description() {
        let e = DriverError {
            call: "cuMemAlloc_v2",
            code: 2,
            name: "CUDA_ERROR_OUT_OF_MEMORY".into(),
            description: "out of memory".into(),
        };
        let o = e
            .error(ErrorKind::TransferFailed)
            .context("device 1: cannot allocate 64 bytes");
        assert_eq!(o.kind, ErrorKind::OutOfMemory);
        assert_eq!(
            o.message,
            "device 1: cannot allocate 64 bytes: cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"
        );
        let unknown = DriverError {
            call: "cuLaunchKernel",
            code: 999,
            name: "CUDA_ERROR_UNKNOWN".into(),
            description: String::new(),
        };
        assert_eq!(
            unknown.error(ErrorKind::LaunchFailed).kind,
            ErrorKind::LaunchFailed
        );
        assert_eq!(
            unknown.to_string(),
            "cuLaunchKernel failed: CUDA_ERROR_UNKNOWN"
        );
    }
}
