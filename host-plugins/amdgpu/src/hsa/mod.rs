//! The HSA runtime, loaded at run time, in cudarc's layers: raw declarations in [`sys`], one thin
//! checked function per call the plugin makes in [`result`], and here the error type and the
//! helpers they share (a status becomes a `Result`; `unsafe` stays in this module, in `sys` and
//! at the edges of the backend's owning types).

pub mod result;
pub mod sys;

use core::ffi::{c_char, c_void};
use rustomp_plugin::{ErrorKind, OffloadError};
use std::ffi::CStr;
use std::fmt;
use sys::*;

/// A failed runtime call: the entry point, the status, its name and the runtime's text for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HsaError {
    pub call: &'static str,
    pub status: Status,
    pub text: String,
}

impl fmt::Display for HsaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.call, status_name(self.status))?;
        if !self.text.is_empty() {
            write!(f, " ({})", self.text)?;
        }
        Ok(())
    }
}

impl HsaError {
    /// The plugin error for this failure: the status decides the kind when it says something
    /// specific, `fallback` otherwise.
    pub fn error(&self, fallback: ErrorKind) -> OffloadError {
        let kind = match self.status {
            STATUS_ERROR_OUT_OF_RESOURCES | STATUS_ERROR_INVALID_ALLOCATION => {
                ErrorKind::OutOfMemory
            }
            STATUS_ERROR_INVALID_CODE_OBJECT
            | STATUS_ERROR_INVALID_ISA
            | STATUS_ERROR_INVALID_EXECUTABLE
            | STATUS_ERROR_VARIABLE_UNDEFINED => ErrorKind::InvalidImage,
            STATUS_ERROR_NOT_INITIALIZED | STATUS_ERROR_INVALID_AGENT => {
                ErrorKind::DeviceUnavailable
            }
            STATUS_ERROR_EXCEPTION => ErrorKind::LaunchFailed,
            _ => fallback,
        };
        OffloadError::new(kind, self.to_string())
    }
}

/// A failure as a plugin error (see [`HsaError::error`]).
pub fn failed(fallback: ErrorKind) -> impl Fn(HsaError) -> OffloadError {
    move |e| e.error(fallback)
}

pub type HsaResult<T> = Result<T, HsaError>;

/// Turns a status into `Ok(())` or the error, with the runtime's text for it.
pub fn check(api: &Api, call: &'static str, status: Status) -> HsaResult<()> {
    if status == STATUS_SUCCESS || status == STATUS_INFO_BREAK {
        return Ok(());
    }
    let mut text: *const c_char = std::ptr::null();
    // SAFETY: the runtime writes a pointer to a static NUL-terminated string or fails.
    let known =
        unsafe { (api.status_string)(status, &mut text) } == STATUS_SUCCESS && !text.is_null();
    let text = if known {
        // SAFETY: non-null static string from the runtime, see above.
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .trim()
            .to_string()
    } else {
        String::new()
    };
    // The runtime's text repeats the name ("HSA_STATUS_ERROR_...: The runtime failed ...").
    let name = status_name(status);
    let text = text.strip_prefix(name).map_or(text.clone(), |rest| {
        rest.trim_start_matches([':', ' ']).to_string()
    });
    Err(HsaError { call, status, text })
}

/// Reports a failed release: nothing can be done about it in `Drop` or on a cleanup path that
/// already returns another error, but it is traced.
pub fn released(what: &str, result: HsaResult<()>) {
    if let Err(e) = result {
        rustomp_plugin::diag::debug("amdgpu", format_args!("releasing {what}: {e}"));
    }
}

/// Reads one `T` of an info query: `query(attribute, out)` is one of the `*_get_info` calls,
/// which writes exactly the type the attribute documents.
///
/// # Safety
/// `T` is the type the runtime writes for `attribute` (plain data: integers, arrays of them).
pub unsafe fn info<T: Default>(
    api: &Api,
    call: &'static str,
    query: impl FnOnce(*mut c_void) -> Status,
) -> HsaResult<T> {
    let mut value = T::default();
    check(api, call, query(&mut value as *mut T as *mut c_void))?;
    Ok(value)
}

/// The `char[64]` agent and product names are written into.
#[derive(Clone, Copy)]
pub struct FixedName(pub [u8; 64]);

impl Default for FixedName {
    fn default() -> Self {
        Self([0; 64])
    }
}

/// A NUL-padded fixed-size name the runtime wrote.
pub fn name_of(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).trim().to_string()
}

/// Calls `visit` for every item an HSA iteration function yields (agents, ISAs, pools); the
/// iteration's own status is the result.
///
/// # Safety
/// `iterate(callback, data)` is an HSA iterator that calls `callback(item, data)` for each item
/// before returning, and `T` is the item type it passes.
pub unsafe fn collect<T: Copy>(
    api: &Api,
    call: &'static str,
    iterate: impl FnOnce(Option<unsafe extern "C" fn(T, *mut c_void) -> Status>, *mut c_void) -> Status,
) -> HsaResult<Vec<T>> {
    unsafe extern "C" fn push<T: Copy>(item: T, data: *mut c_void) -> Status {
        // SAFETY: `data` is the `Vec<T>` passed below, alive during the iteration.
        unsafe { (*(data as *mut Vec<T>)).push(item) };
        STATUS_SUCCESS
    }
    let mut items: Vec<T> = Vec::new();
    check(
        api,
        call,
        iterate(Some(push::<T>), &mut items as *mut Vec<T> as *mut c_void),
    )?;
    Ok(items)
}
