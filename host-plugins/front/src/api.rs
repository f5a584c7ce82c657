//! The OpenMP device memory API (`omp_target_*`, `omp_get_*device*`) and LLVM's extensions.
//! The initial (host) device is number `omp_get_num_devices()`. Each export's `on_panic` value
//! is what LLVM returns when that call fails (see `export`).

use crate::diag;
use crate::export::exports;
use crate::target::OFFLOAD_FAIL;
use crate::runtime::{runtime, DeviceState};
use crate::tasks;
use crate::mapping::table::MapEntry;
use rustomp_plugin::AllocKind;
use std::ffi::{c_char, c_void};
use std::sync::Arc;

/// `omp_invalid_device` in clang-22's omp.h.
const OMP_INVALID_DEVICE: i32 = -2;

fn initial_device() -> i32 {
    runtime().num_devices() as i32
}

fn device(id: i32, what: &str) -> Option<Arc<DeviceState>> {
    if id < 0 {
        diag::error(&format!("{what}: device number {id} is not valid"));
        return None;
    }
    match runtime().device(id as usize) {
        Ok(d) => Some(d),
        Err(e) => {
            diag::error(&format!("{what}: {e}"));
            None
        }
    }
}

// Without a runtime there are no devices, and the host is device 0 (as in LLVM without plugins).
exports! {
    pub extern "C" fn omp_get_num_devices() -> i32 {
        on_panic: 0;
        initial_device()
    }
    pub extern "C" fn omp_get_initial_device() -> i32 {
        on_panic: 0;
        initial_device()
    }
    /// On the host, the executing device is the initial device.
    pub extern "C" fn omp_get_device_num() -> i32 {
        on_panic: 0;
        initial_device()
    }
}

const HOST_UID: &std::ffi::CStr = c"rustomp-host";

exports! {
    pub extern "C" fn omp_get_uid_from_device(device_num: i32) -> *const c_char {
        on_panic: std::ptr::null();
        static UIDS: std::sync::OnceLock<Vec<std::ffi::CString>> = std::sync::OnceLock::new();
        let uids = UIDS.get_or_init(|| {
            (0..runtime().num_devices())
                .map(|i| std::ffi::CString::new(format!("rustomp-device-{i}")).unwrap())
                .collect()
        });
        if device_num == initial_device() {
            return HOST_UID.as_ptr();
        }
        uids.get(device_num.max(0) as usize)
            .filter(|_| device_num >= 0)
            .map_or(std::ptr::null(), |u| u.as_ptr())
    }
    /// # Safety
    /// `uid` is null or a NUL-terminated string.
    pub unsafe extern "C" fn omp_get_device_from_uid(uid: *const c_char) -> i32 {
        on_panic: OMP_INVALID_DEVICE;
        if uid.is_null() {
            return OMP_INVALID_DEVICE;
        }
        // SAFETY: guaranteed by the caller.
        let uid = unsafe { std::ffi::CStr::from_ptr(uid) }.to_string_lossy();
        if uid == HOST_UID.to_string_lossy() {
            return initial_device();
        }
        uid.strip_prefix("rustomp-device-")
            .and_then(|n| n.parse().ok())
            .filter(|&n: &i32| (0..initial_device()).contains(&n))
            .unwrap_or(OMP_INVALID_DEVICE)
    }
}

fn alloc(size: usize, device_num: i32, kind: AllocKind) -> *mut c_void {
    if size == 0 {
        return std::ptr::null_mut(); // as the OpenMP spec and LLVM do for zero bytes
    }
    if device_num == initial_device() {
        // SAFETY: malloc accepts any size.
        return unsafe { libc::malloc(size) };
    }
    match device(device_num, "omp_target_alloc") {
        Some(d) => d.backend.alloc(size, kind).unwrap_or(std::ptr::null_mut()),
        None => std::ptr::null_mut(),
    }
}
/// # Safety
/// `ptr` is null or memory of `kind` that `alloc` returned for `device_num`, freed once.
unsafe fn free(ptr: *mut c_void, device_num: i32, kind: AllocKind) {
    if ptr.is_null() {
        return;
    }
    if device_num == initial_device() {
        // SAFETY: host allocations of omp_target_alloc come from malloc.
        unsafe { libc::free(ptr) };
        return;
    }
    if let Some(d) = device(device_num, "omp_target_free") {
        // SAFETY: guaranteed by the caller.
        if let Err(e) = unsafe { d.backend.free(ptr, kind) } {
            diag::error(&format!(
                "omp_target_free of {ptr:p} on device {device_num}: {e}"
            ));
        }
    }
}

exports! {
    pub extern "C" fn omp_target_alloc(size: usize, device_num: i32) -> *mut c_void {
        on_panic: std::ptr::null_mut();
        alloc(size, device_num, AllocKind::Device)
    }
    pub extern "C" fn llvm_omp_target_alloc_device(size: usize, device_num: i32) -> *mut c_void {
        on_panic: std::ptr::null_mut();
        alloc(size, device_num, AllocKind::Device)
    }
    pub extern "C" fn llvm_omp_target_alloc_host(size: usize, device_num: i32) -> *mut c_void {
        on_panic: std::ptr::null_mut();
        alloc(size, device_num, AllocKind::Host)
    }
    pub extern "C" fn llvm_omp_target_alloc_shared(size: usize, device_num: i32) -> *mut c_void {
        on_panic: std::ptr::null_mut();
        alloc(size, device_num, AllocKind::Shared)
    }
}

/// Exports that free memory of one kind.
macro_rules! free_exports {
    ($($name:ident => $kind:expr;)*) => {$(
        exports! {
            /// # Safety
            /// `ptr` is null or what the matching allocation returned for `device_num`, freed once.
            pub unsafe extern "C" fn $name(ptr: *mut c_void, device_num: i32) {
                on_panic: ();
                // SAFETY: guaranteed by the caller.
                unsafe { free(ptr, device_num, $kind) }
            }
        }
    )*};
}
free_exports! {
    omp_target_free => AllocKind::Device;
    llvm_omp_target_free_device => AllocKind::Device;
    llvm_omp_target_free_host => AllocKind::Host;
    llvm_omp_target_free_shared => AllocKind::Shared;
}

exports! {
    /// Host memory is already accessible to every device this runtime drives (page-locking is a
    /// GPU-plugin optimization): the pointer itself is the locked address.
    pub extern "C" fn llvm_omp_target_lock_mem(ptr: *mut c_void, _size: usize, _device_num: i32) -> *mut c_void {
        on_panic: std::ptr::null_mut();
        ptr
    }
    pub extern "C" fn llvm_omp_target_unlock_mem(_ptr: *mut c_void, _device_num: i32) {
        on_panic: ();
    }
    /// Only meaningful in device code; on the host there is no dynamic shared memory.
    pub extern "C" fn llvm_omp_target_dynamic_shared_alloc() -> *mut c_void {
        on_panic: std::ptr::null_mut();
        std::ptr::null_mut()
    }
}

/// Copies `len` bytes between any two of: the host, device `dst_dev`, device `src_dev`.
/// Returns 0 on success.
///
/// # Safety
/// `src` is readable and `dst` writable for `len` bytes, each in the memory of its device.
unsafe fn copy(dst: *mut c_void, src: *const c_void, len: usize, dst_dev: i32, src_dev: i32) -> i32 {
    if len == 0 {
        return 0;
    }
    let host = initial_device();
    let result = match (dst_dev == host, src_dev == host) {
        (true, true) => {
            // SAFETY: the caller's ranges are host memory of `len` bytes.
            unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len) };
            Ok(())
        }
        (false, true) => match device(dst_dev, "omp_target_memcpy") {
            // SAFETY: OpenMP requires valid ranges from the caller.
            Some(d) => unsafe { d.backend.copy_to_device(dst, src, len) },
            None => return -1,
        },
        (true, false) => match device(src_dev, "omp_target_memcpy") {
            // SAFETY: as above.
            Some(d) => unsafe { d.backend.copy_from_device(dst, src, len) },
            None => return -1,
        },
        (false, false) => {
            let (Some(d), Some(s)) = (
                device(dst_dev, "omp_target_memcpy"),
                device(src_dev, "omp_target_memcpy"),
            ) else {
                return -1;
            };
            if d.id == s.id || (d.backend.shares_host_memory() && s.backend.shares_host_memory()) {
                // SAFETY: as above.
                unsafe { d.backend.copy_within_device(dst, src, len) }
            } else {
                let mut staging = vec![0u8; len];
                // SAFETY: as above; staging holds `len` bytes.
                unsafe {
                    s.backend
                        .copy_from_device(staging.as_mut_ptr() as *mut c_void, src, len)
                        .and_then(|_| {
                            d.backend
                                .copy_to_device(dst, staging.as_ptr() as *const c_void, len)
                        })
                }
            }
        }
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            diag::error(&format!("omp_target_memcpy of {len} bytes ({src:p} on {src_dev} -> {dst:p} on {dst_dev}): {e}"));
            -1
        }
    }
}

exports! {
    /// # Safety
    /// `src + src_offset` is readable and `dst + dst_offset` writable for `length` bytes, each
    /// in the memory of its device.
    pub unsafe extern "C" fn omp_target_memcpy(
        dst: *mut c_void,
        src: *const c_void,
        length: usize,
        dst_offset: usize,
        src_offset: usize,
        dst_device: i32,
        src_device: i32,
    ) -> i32 {
        on_panic: OFFLOAD_FAIL;
        if dst.is_null() || src.is_null() {
            return OFFLOAD_FAIL;
        }
        // SAFETY: guaranteed by the caller.
        unsafe {
            copy(
                (dst as usize + dst_offset) as *mut c_void,
                (src as usize + src_offset) as *const c_void,
                length,
                dst_device,
                src_device,
            )
        }
    }
}

/// Whether `device_num` names the host or a device that exists (else says which call named it).
fn known_device(device_num: i32, what: &str) -> bool {
    device_num == initial_device() || device(device_num, what).is_some()
}

exports! {
    /// The copy runs as a task ordered by the depend objects (see `tasks`); `taskwait` completes it.
    ///
    /// # Safety
    /// As `omp_target_memcpy`, until the copy completes; `depobj_list` holds `depobj_count`
    /// depend objects.
    #[allow(clippy::too_many_arguments, reason = "OpenMP's C signature")]
    pub unsafe extern "C" fn omp_target_memcpy_async(
        dst: *mut c_void,
        src: *const c_void,
        length: usize,
        dst_offset: usize,
        src_offset: usize,
        dst_device: i32,
        src_device: i32,
        depobj_count: i32,
        depobj_list: *mut c_void,
    ) -> i32 {
        on_panic: OFFLOAD_FAIL;
        const WHAT: &str = "omp_target_memcpy_async";
        if dst.is_null()
            || src.is_null()
            || !known_device(dst_device, WHAT)
            || !known_device(src_device, WHAT)
        {
            return OFFLOAD_FAIL;
        }
        let (dst, src) = (dst as usize, src as usize);
        let work = Box::new(move || {
            // SAFETY: the caller keeps both ranges valid until the copy completes.
            unsafe {
                omp_target_memcpy(
                    dst as *mut c_void,
                    src as *const c_void,
                    length,
                    dst_offset,
                    src_offset,
                    dst_device,
                    src_device,
                )
            };
        });
        // SAFETY: the caller passes `depobj_count` depend objects.
        unsafe {
            tasks::spawn(
                WHAT,
                depobj_count,
                depobj_list as *const *const c_void,
                work,
            )
        }
    }
}

/// One dimension (`d`) of a rectangular copy, and the dimensions inside it.
///
/// # Safety
/// The ranges the copy touches lie in `dst` and `src` (as `omp_target_memcpy_rect` requires).
#[allow(clippy::too_many_arguments, reason = "the recursion carries omp_target_memcpy_rect's arguments")]
unsafe fn rect(
    dims: usize,
    d: usize,
    dst: usize,
    src: usize,
    elem: usize,
    v: &[usize],
    doff: &[usize],
    soff: &[usize],
    ddim: &[usize],
    sdim: &[usize],
    devs: (i32, i32),
) -> i32 {
    // Bytes of one step in dimension `d` = element size × the extents of the inner dims.
    let dst_stride: usize = elem * ddim[d + 1..].iter().product::<usize>();
    let src_stride: usize = elem * sdim[d + 1..].iter().product::<usize>();
    if d + 1 == dims {
        // SAFETY: the innermost row lies in the caller's ranges.
        return unsafe {
            copy(
                (dst + doff[d] * elem) as *mut c_void,
                (src + soff[d] * elem) as *const c_void,
                v[d] * elem,
                devs.0,
                devs.1,
            )
        };
    }
    for i in 0..v[d] {
        // SAFETY: as above.
        let rc = unsafe {
            rect(
                dims,
                d + 1,
                dst + (doff[d] + i) * dst_stride,
                src + (soff[d] + i) * src_stride,
                elem,
                v,
                doff,
                soff,
                ddim,
                sdim,
                devs,
            )
        };
        if rc != 0 {
            return rc;
        }
    }
    0
}

exports! {
    /// # Safety
    /// The arrays hold `num_dims` elements; the sub-volume lies in `dst` and `src`.
    #[allow(clippy::too_many_arguments, reason = "OpenMP's C signature")]
    pub unsafe extern "C" fn omp_target_memcpy_rect(
        dst: *mut c_void,
        src: *const c_void,
        element_size: usize,
        num_dims: i32,
        volume: *const usize,
        dst_offsets: *const usize,
        src_offsets: *const usize,
        dst_dimensions: *const usize,
        src_dimensions: *const usize,
        dst_device: i32,
        src_device: i32,
    ) -> i32 {
        on_panic: OFFLOAD_FAIL;
        if dst.is_null() && src.is_null() {
            return i32::MAX; // the number of dimensions supported
        }
        if dst.is_null() || src.is_null() || num_dims < 1 {
            return OFFLOAD_FAIL;
        }
        let n = num_dims as usize;
        // SAFETY: guaranteed by the caller.
        let (volume, dst_off, src_off, dst_dims, src_dims) = unsafe {
            (
                std::slice::from_raw_parts(volume, n),
                std::slice::from_raw_parts(dst_offsets, n),
                std::slice::from_raw_parts(src_offsets, n),
                std::slice::from_raw_parts(dst_dimensions, n),
                std::slice::from_raw_parts(src_dimensions, n),
            )
        };
        // SAFETY: guaranteed by the caller.
        unsafe {
            rect(
                n,
                0,
                dst as usize,
                src as usize,
                element_size,
                volume,
                dst_off,
                src_off,
                dst_dims,
                src_dims,
                (dst_device, src_device),
            )
        }
    }

    /// # Safety
    /// As `omp_target_memcpy_rect`, the ranges until the copy completes; the arrays are copied
    /// before this returns (as in LLVM), so the caller may release them at once.
    #[allow(clippy::too_many_arguments, reason = "OpenMP's C signature")]
    pub unsafe extern "C" fn omp_target_memcpy_rect_async(
        dst: *mut c_void,
        src: *const c_void,
        element_size: usize,
        num_dims: i32,
        volume: *const usize,
        dst_offsets: *const usize,
        src_offsets: *const usize,
        dst_dimensions: *const usize,
        src_dimensions: *const usize,
        dst_device: i32,
        src_device: i32,
        depobj_count: i32,
        depobj_list: *mut c_void,
    ) -> i32 {
        on_panic: OFFLOAD_FAIL;
        const WHAT: &str = "omp_target_memcpy_rect_async";
        if dst.is_null() && src.is_null() {
            return i32::MAX; // the number of dimensions supported
        }
        let arrays = [
            volume,
            dst_offsets,
            src_offsets,
            dst_dimensions,
            src_dimensions,
        ];
        if dst.is_null() || src.is_null() || num_dims < 1 || arrays.iter().any(|a| a.is_null()) {
            return OFFLOAD_FAIL;
        }
        if !known_device(dst_device, WHAT) || !known_device(src_device, WHAT) {
            return OFFLOAD_FAIL;
        }
        // SAFETY: each array holds `num_dims` elements (the caller's contract).
        let [volume, dst_offsets, src_offsets, dst_dimensions, src_dimensions] =
            arrays.map(|a| unsafe { std::slice::from_raw_parts(a, num_dims as usize) }.to_vec());
        let (dst, src) = (dst as usize, src as usize);
        let work = Box::new(move || {
            // SAFETY: the arrays are this closure's own copies of `num_dims` elements; the caller
            // keeps the ranges valid until the copy completes.
            unsafe {
                omp_target_memcpy_rect(
                    dst as *mut c_void,
                    src as *const c_void,
                    element_size,
                    num_dims,
                    volume.as_ptr(),
                    dst_offsets.as_ptr(),
                    src_offsets.as_ptr(),
                    dst_dimensions.as_ptr(),
                    src_dimensions.as_ptr(),
                    dst_device,
                    src_device,
                );
            }
        });
        // SAFETY: the caller passes `depobj_count` depend objects.
        unsafe {
            tasks::spawn(
                WHAT,
                depobj_count,
                depobj_list as *const *const c_void,
                work,
            )
        }
    }
}

// LLVM's omp_target_memset returns `ptr` whatever happens: so does a panic.
exports! {
    /// # Safety
    /// `ptr` is writable for `count` bytes in the memory of device `device_num`.
    pub unsafe extern "C" fn omp_target_memset(
        ptr: *mut c_void,
        value: i32,
        count: usize,
        device_num: i32,
    ) -> *mut c_void {
        on_panic: ptr;
        if ptr.is_null() || count == 0 {
            return ptr;
        }
        if device_num == initial_device() {
            // SAFETY: the caller's host range holds `count` bytes.
            unsafe { std::ptr::write_bytes(ptr as *mut u8, value as u8, count) };
            return ptr;
        }
        let Some(d) = device(device_num, "omp_target_memset") else {
            return ptr;
        };
        let fill = vec![value as u8; count];
        // SAFETY: the caller's device range holds `count` bytes.
        if let Err(e) = unsafe {
            d.backend
                .copy_to_device(ptr, fill.as_ptr() as *const c_void, count)
        } {
            diag::error(&format!(
                "omp_target_memset of {ptr:p} on device {device_num}: {e}"
            ));
        }
        ptr
    }
    /// The fill runs as a task ordered by the depend objects (see `tasks`); returns `ptr`.
    ///
    /// # Safety
    /// As `omp_target_memset`, until the fill completes; `depobj_list` holds `depobj_count`
    /// depend objects.
    pub unsafe extern "C" fn omp_target_memset_async(
        ptr: *mut c_void,
        value: i32,
        count: usize,
        device_num: i32,
        depobj_count: i32,
        depobj_list: *mut c_void,
    ) -> *mut c_void {
        on_panic: ptr;
        const WHAT: &str = "omp_target_memset_async";
        if ptr.is_null() || !known_device(device_num, WHAT) {
            return ptr;
        }
        let address = ptr as usize;
        let work = Box::new(move || {
            // SAFETY: the caller keeps the range valid until the fill completes.
            unsafe { omp_target_memset(address as *mut c_void, value, count, device_num) };
        });
        // SAFETY: the caller passes `depobj_count` depend objects.
        unsafe {
            tasks::spawn(
                WHAT,
                depobj_count,
                depobj_list as *const *const c_void,
                work,
            )
        };
        ptr
    }
}

exports! {
    pub extern "C" fn omp_target_is_present(ptr: *const c_void, device_num: i32) -> i32 {
        on_panic: 0;
        if device_num == initial_device() {
            return 1;
        }
        device(device_num, "omp_target_is_present")
            .is_some_and(|d| d.table().find(ptr as usize, 1).is_some()) as i32
    }

    pub extern "C" fn omp_target_is_accessible(
        _ptr: *const c_void,
        _size: usize,
        device_num: i32,
    ) -> i32 {
        on_panic: 0;
        if device_num == initial_device() {
            return 1;
        }
        device(device_num, "omp_target_is_accessible").is_some_and(|d| d.backend.shares_host_memory())
            as i32
    }

    pub extern "C" fn omp_get_mapped_ptr(ptr: *const c_void, device_num: i32) -> *mut c_void {
        on_panic: std::ptr::null_mut();
        if device_num == initial_device() {
            return ptr as *mut c_void;
        }
        device(device_num, "omp_get_mapped_ptr")
            .and_then(|d| {
                d.table()
                    .find(ptr as usize, 1)
                    .map(|e| e.device_address(ptr as usize) as *mut c_void)
            })
            .unwrap_or(std::ptr::null_mut())
    }

    pub extern "C" fn omp_target_associate_ptr(
        host: *const c_void,
        device_ptr: *const c_void,
        size: usize,
        device_offset: usize,
        device_num: i32,
    ) -> i32 {
        on_panic: OFFLOAD_FAIL;
        // LLVM's checks and messages, in its order.
        if host.is_null() || device_ptr.is_null() || size == 0 {
            diag::error("Call to omp_target_associate_ptr with invalid arguments");
            return OFFLOAD_FAIL;
        }
        if device_num == initial_device() {
            diag::error("omp_target_associate_ptr: no association possible on the host");
            return OFFLOAD_FAIL;
        }
        let Some(d) = device(device_num, "omp_target_associate_ptr") else {
            return OFFLOAD_FAIL;
        };
        let mut table = d.table();
        let host = host as usize;
        let target = device_ptr as usize + device_offset;
        if let Some(existing) = table.find(host, size) {
            if existing.device_address(host) == target && existing.host_end - existing.host_begin == size {
                return 0;
            }
            diag::error("Not allowed to re-associate a different device ptr+offset with the same host ptr");
            return OFFLOAD_FAIL;
        }
        table.insert(MapEntry {
            host_begin: host,
            host_end: host + size,
            device_begin: target,
            dynamic_refs: 1,
            hold_refs: 0,
            infinite: true,
            owned: false,
            name: 0,
        });
        0
    }

    pub extern "C" fn omp_target_disassociate_ptr(host: *const c_void, device_num: i32) -> i32 {
        on_panic: OFFLOAD_FAIL;
        if host.is_null() {
            diag::error("Call to omp_target_disassociate_ptr with invalid host_ptr");
            return OFFLOAD_FAIL;
        }
        if device_num == initial_device() {
            diag::error("omp_target_disassociate_ptr: no association possible on the host");
            return OFFLOAD_FAIL;
        }
        let Some(d) = device(device_num, "omp_target_disassociate_ptr") else {
            return OFFLOAD_FAIL;
        };
        let mut table = d.table();
        // Only an entry that begins at `host` (LLVM looks the exact address up).
        let Some(entry) = table.find(host as usize, 0).filter(|e| e.host_begin == host as usize) else {
            diag::error("Association not found");
            return OFFLOAD_FAIL;
        };
        if entry.hold_refs != 0 {
            diag::error("Trying to disassociate a pointer with a non-zero hold reference count");
            return OFFLOAD_FAIL;
        }
        if !entry.infinite {
            diag::error("Trying to disassociate a pointer which was not mapped via omp_target_associate_ptr");
            return OFFLOAD_FAIL;
        }
        table.remove(host as usize);
        0
    }
}

// Interoperability objects (`omp interop`): no plugin of this runtime offers a foreign runtime
// handle, so `init` yields no object and every query answers `omp_irc_no_value`/empty.
const OMP_IRC_NO_VALUE: i32 = 1;

macro_rules! interop_query {
    ($name:ident, $ret:ty, $none:expr) => {
        exports! {
            /// # Safety
            /// `ret_code` is null or writable.
            pub unsafe extern "C" fn $name(
                _interop: *const c_void,
                _property: i32,
                ret_code: *mut i32,
            ) -> $ret {
                on_panic: $none;
                if !ret_code.is_null() {
                    // SAFETY: guaranteed by the caller.
                    unsafe { *ret_code = OMP_IRC_NO_VALUE };
                }
                $none
            }
        }
    };
}
interop_query!(omp_get_interop_int, isize, 0);
interop_query!(omp_get_interop_ptr, *mut c_void, std::ptr::null_mut());
interop_query!(omp_get_interop_str, *const c_char, std::ptr::null());

exports! {
    pub extern "C" fn omp_get_interop_name(_interop: *const c_void, _property: i32) -> *const c_char {
        on_panic: std::ptr::null();
        std::ptr::null()
    }
    pub extern "C" fn omp_get_interop_type_desc(
        _interop: *const c_void,
        _property: i32,
    ) -> *const c_char {
        on_panic: std::ptr::null();
        std::ptr::null()
    }
}

/// `init` and `destroy` of an interop variable: wait for the `depend` list, then the variable
/// is `omp_interop_none` (this runtime creates no interop objects).
///
/// # Safety
/// `interop` is null or the interop variable's address; `deps` holds `ndeps` dependences.
unsafe fn wait_then_clear(ident: *mut c_void, gtid: i32, interop: *mut *mut c_void, ndeps: i32, deps: *mut c_void) {
    wait_for_dependences(ident, gtid, ndeps, deps);
    if !interop.is_null() {
        // SAFETY: guaranteed by the caller.
        unsafe { *interop = std::ptr::null_mut() };
    }
}

/// Waits for a construct's `depend` list, as libomp's `__kmpc_omp_wait_deps` does for a task
/// (the list is clang's `kmp_depend_info` array, passed through).
fn wait_for_dependences(ident: *mut c_void, gtid: i32, ndeps: i32, deps: *mut c_void) {
    type WaitDeps = unsafe extern "C" fn(*mut c_void, i32, i32, *mut c_void, i32, *mut c_void);
    static WAIT_DEPS: std::sync::OnceLock<Option<WaitDeps>> = std::sync::OnceLock::new();
    if ndeps <= 0 || deps.is_null() {
        return;
    }
    let wait = WAIT_DEPS.get_or_init(|| {
        // SAFETY: dlsym with RTLD_DEFAULT and a valid C string.
        let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"__kmpc_omp_wait_deps".as_ptr()) };
        // SAFETY: libomp's __kmpc_omp_wait_deps has this signature.
        (!f.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, WaitDeps>(f) })
    });
    match wait {
        // SAFETY: clang's location, thread id and dependence list, forwarded unchanged.
        Some(wait) => unsafe { wait(ident, gtid, ndeps, deps, 0, std::ptr::null_mut()) },
        None => diag::error("interop: libomp's __kmpc_omp_wait_deps is not loaded; the depend clause is not honoured"),
    }
}

exports! {
    /// No plugin of this runtime offers a foreign runtime handle: every interop is
    /// `omp_interop_none`, without a message (as LLVM's host plugin).
    pub extern "C" fn __tgt_interop_get(
        _ident: *mut c_void,
        _interop_type: i32,
        _device: i64,
        _prefers: *mut c_void,
        _gtid: i32,
        _task: *mut c_void,
    ) -> *mut c_void {
        on_panic: std::ptr::null_mut();
        std::ptr::null_mut()
    }

    /// `#pragma omp interop init(...)`, as clang-22 calls it; waits for the `depend` list first.
    ///
    /// # Safety
    /// `interop` is null or the interop variable's address; `deps` holds `ndeps` dependences.
    pub unsafe extern "C" fn __tgt_interop_init(
        ident: *mut c_void,
        gtid: i32,
        interop: *mut *mut c_void,
        _interop_type: i32,
        _device: i32,
        ndeps: i32,
        deps: *mut c_void,
        _nowait: i32,
    ) {
        on_panic: ();
        // SAFETY: guaranteed by the caller.
        unsafe { wait_then_clear(ident, gtid, interop, ndeps, deps) };
    }

    /// `#pragma omp interop use(...)`: waits for the `depend` list (also for `omp_interop_none`).
    pub extern "C" fn __tgt_interop_use(
        ident: *mut c_void,
        gtid: i32,
        _interop: *mut *mut c_void,
        _device: i32,
        ndeps: i32,
        deps: *mut c_void,
        _nowait: i32,
    ) {
        on_panic: ();
        wait_for_dependences(ident, gtid, ndeps, deps);
    }
    /// LLVM's internal entry points behind `use` / `destroy` (clang-22 does not call them): exported
    /// for ABI completeness, they have nothing to do without interop objects.
    pub extern "C" fn __tgt_interop_use60(
        _ident: *mut c_void,
        _interop: *mut c_void,
        _ctx: *mut c_void,
        _deps: *mut c_void,
    ) -> i32 {
        on_panic: OFFLOAD_FAIL;
        0
    }

    /// `#pragma omp interop destroy(...)`: waits for the `depend` list, then the variable is
    /// `omp_interop_none`.
    ///
    /// # Safety
    /// `interop` is null or the interop variable's address; `deps` holds `ndeps` dependences.
    pub unsafe extern "C" fn __tgt_interop_destroy(
        ident: *mut c_void,
        gtid: i32,
        interop: *mut *mut c_void,
        _device: i32,
        ndeps: i32,
        deps: *mut c_void,
        _nowait: i32,
    ) {
        on_panic: ();
        // SAFETY: guaranteed by the caller.
        unsafe { wait_then_clear(ident, gtid, interop, ndeps, deps) };
    }
    pub extern "C" fn __tgt_interop_release(
        _ident: *mut c_void,
        _interop: *mut c_void,
        _ctx: *mut c_void,
        _deps: *mut c_void,
    ) -> i32 {
        on_panic: OFFLOAD_FAIL;
        0
    }
    pub extern "C" fn __tgt_target_sync(
        _ident: *mut c_void,
        _gtid: i32,
        _task: *mut c_void,
        _event: *mut c_void,
    ) {
        on_panic: ();
    }
    pub extern "C" fn ompx_interop_add_completion_callback(
        _interop: *mut c_void,
        _cb: *mut c_void,
        _data: *mut c_void,
    ) -> i32 {
        on_panic: -1;
        -1
    }

    /// `__llvm_omp_host_call` for code that already runs on the host: host-offload (CPU plugin)
    /// images and host fallback resolve it here and call the function directly. GPU images have
    /// the device runtime's version, which reaches the host through the plugin's port.
    ///
    /// # Safety
    /// `function` is null or a host function `u64 f(void *)`; `data` is what it expects.
    pub unsafe extern "C" fn __llvm_omp_host_call(
        function: *mut c_void,
        data: *mut c_void,
        _size: usize,
    ) -> u64 {
        on_panic: 0;
        if function.is_null() {
            diag::error("__llvm_omp_host_call: a null host function");
            return 0;
        }
        // SAFETY: guaranteed by the caller.
        let f: rustomp_plugin::host_call::HostFunction = unsafe { core::mem::transmute(function) };
        // SAFETY: as above.
        unsafe { f(data) }
    }
}
