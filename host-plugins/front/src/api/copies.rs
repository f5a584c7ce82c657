//! Copies between the host and devices: plain, rectangular, asynchronous, and fills.

use super::{initial_device, known_device, moving_device};
use crate::diag;
use crate::export::exports;
use crate::target::OFFLOAD_FAIL;
use crate::tasks;
use std::ffi::c_void;

/// Copies `len` bytes between any two of: the host, device `dst_dev`, device `src_dev`.
/// Returns 0 on success.
///
/// # Safety
/// `src` is readable and `dst` writable for `len` bytes, each in the memory of its device.
pub(super) unsafe fn copy(
    dst: *mut c_void,
    src: *const c_void,
    len: usize,
    dst_dev: i32,
    src_dev: i32,
) -> i32 {
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
        (false, true) => match moving_device(dst_dev, "omp_target_memcpy") {
            Some(d) => crate::ompt::to_device(d.id, src as usize, dst as usize, len, || {
                // SAFETY: OpenMP requires valid ranges from the caller.
                unsafe { d.backend.copy_to_device(dst, src, len) }
            }),
            None => return -1,
        },
        (true, false) => match moving_device(src_dev, "omp_target_memcpy") {
            Some(d) => crate::ompt::from_device(d.id, src as usize, dst as usize, len, || {
                // SAFETY: as above.
                unsafe { d.backend.copy_from_device(dst, src, len) }
            }),
            None => return -1,
        },
        (false, false) => {
            let (Some(d), Some(s)) = (
                moving_device(dst_dev, "omp_target_memcpy"),
                moving_device(src_dev, "omp_target_memcpy"),
            ) else {
                return -1;
            };
            if d.id == s.id || (d.backend.shares_host_memory() && s.backend.shares_host_memory()) {
                // SAFETY: as above.
                unsafe { d.backend.copy_within_device(dst, src, len) }
            // SAFETY: as above.
            } else if let Some(done) = unsafe { s.backend.copy_to_peer(&*d.backend, dst, src, len) }
            {
                // A direct path between the two (remote devices: rank to rank).
                done
            } else if s.backend.shares_host_memory() {
                // The source is this process's memory: no staging copy.
                // SAFETY: as above.
                unsafe { d.backend.copy_to_device(dst, src, len) }
            } else if d.backend.shares_host_memory() {
                // SAFETY: as above.
                unsafe { s.backend.copy_from_device(dst, src, len) }
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

/// One `omp_target_memcpy_rect`: the sub-volume to copy and where it lies in each array,
/// each slice holding one value per dimension, outermost first.
struct RectCopy<'a> {
    element_size: usize,
    volume: &'a [usize],
    dst_offsets: &'a [usize],
    src_offsets: &'a [usize],
    dst_dimensions: &'a [usize],
    src_dimensions: &'a [usize],
    /// (destination device, source device).
    devices: (i32, i32),
}

impl RectCopy<'_> {
    /// Copies dimension `d` of the sub-volume, and the dimensions inside it, between the
    /// arrays' slabs that start at `dst` and `src`. Returns 0 on success.
    ///
    /// # Safety
    /// The ranges the copy touches lie in the destination and source arrays (as
    /// `omp_target_memcpy_rect` requires).
    unsafe fn copy_dimension(&self, d: usize, dst: usize, src: usize) -> i32 {
        let elem = self.element_size;
        // Bytes of one step in dimension `d` = element size x the extents of the inner dims.
        let dst_stride: usize = elem * self.dst_dimensions[d + 1..].iter().product::<usize>();
        let src_stride: usize = elem * self.src_dimensions[d + 1..].iter().product::<usize>();
        let (dst_offset, src_offset) = (self.dst_offsets[d], self.src_offsets[d]);
        if d + 1 == self.volume.len() {
            // SAFETY: the innermost row lies in the caller's ranges.
            return unsafe {
                copy(
                    (dst + dst_offset * elem) as *mut c_void,
                    (src + src_offset * elem) as *const c_void,
                    self.volume[d] * elem,
                    self.devices.0,
                    self.devices.1,
                )
            };
        }
        for i in 0..self.volume[d] {
            // SAFETY: as above.
            let rc = unsafe {
                self.copy_dimension(
                    d + 1,
                    dst + (dst_offset + i) * dst_stride,
                    src + (src_offset + i) * src_stride,
                )
            };
            if rc != 0 {
                return rc;
            }
        }
        0
    }
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
        let [volume, dst_offsets, src_offsets, dst_dimensions, src_dimensions] =
            [volume, dst_offsets, src_offsets, dst_dimensions, src_dimensions]
                .map(|a| unsafe { std::slice::from_raw_parts(a, n) });
        let rect = RectCopy {
            element_size,
            volume,
            dst_offsets,
            src_offsets,
            dst_dimensions,
            src_dimensions,
            devices: (dst_device, src_device),
        };
        // SAFETY: guaranteed by the caller.
        unsafe { rect.copy_dimension(0, dst as usize, src as usize) }
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
        let Some(d) = moving_device(device_num, "omp_target_memset") else {
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
