//! The stand-in driver on the real fixture cubin of `host-plugins/plugin/tests/fixtures`.

use super::api::*;
use super::*;

/// The real cubin of `host-plugins/plugin/tests/fixtures` (kernels.c): main_l7 takes 4
/// parameters, main_l9 takes 2; both read the device environment.
const CUBIN: &[u8] =
    include_bytes!("../../../host-plugins/plugin/tests/fixtures/kernels.sm_90.cubin");
const L7: &CStr = c"__omp_offloading_fe00_51c003_main_l7";

#[test]
fn a_real_cubin_answers_as_the_driver_does() {
    let mut module = std::ptr::null_mut();
    assert_eq!(
        // SAFETY: a complete cubin and a live out-pointer.
        unsafe {
            cuModuleLoadDataEx(
                &mut module,
                CUBIN.as_ptr().cast(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        },
        SUCCESS
    );
    let (mut function, mut address, mut size) = (std::ptr::null_mut(), 0u64, 0usize);
    // SAFETY: live out-pointers, a module this driver made, NUL-terminated names.
    unsafe {
        assert_eq!(
            cuModuleGetFunction(&mut function, module, L7.as_ptr()),
            SUCCESS
        );
        assert_eq!(
            cuModuleGetGlobal_v2(&mut address, &mut size, module, L7.as_ptr()),
            INVALID_VALUE,
            "a kernel is no global"
        );
        assert_eq!(
            cuModuleGetGlobal_v2(&mut address, &mut size, module, c"nothing".as_ptr()),
            NOT_FOUND
        );
        assert_eq!(
            cuModuleGetFunction(&mut function, module, c"nothing".as_ptr()),
            NOT_FOUND
        );
        assert_eq!(
            cuModuleGetFunction(&mut function, module, L7.as_ptr()),
            SUCCESS
        );
        let env = c"__omp_rtl_device_environment";
        assert_eq!(
            cuModuleGetGlobal_v2(&mut address, &mut size, module, env.as_ptr()),
            SUCCESS
        );
        assert_eq!(size, 48);
        let mut count = 0;
        assert_eq!(cuFuncGetParamCount(function, &mut count), SUCCESS);
        assert_eq!(count, 4);
        let (mut offset, mut bytes) = (0, 0);
        assert_eq!(
            cuFuncGetParamInfo(function, 3, &mut offset, &mut bytes),
            SUCCESS
        );
        assert_eq!((offset, bytes), (24, 8));
        assert_eq!(
            cuFuncGetParamInfo(function, 4, &mut offset, &mut bytes),
            INVALID_VALUE
        );
        // A buffer of the kernel's size launches; any other size is an invalid value.
        let mut parameters = [0u64; 4];
        let mut launch = |size: usize| {
            let mut size = size;
            // CU_LAUNCH_PARAM_BUFFER_POINTER (1), ..._SIZE (2), END: keys, not addresses.
            let key = |k: usize| std::ptr::without_provenance_mut::<c_void>(k);
            let mut extra = [
                key(1),
                parameters.as_mut_ptr().cast(),
                key(2),
                (&raw mut size).cast(),
                key(0),
            ];
            cuLaunchKernel(
                function,
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                extra.as_mut_ptr(),
            )
        };
        assert_eq!(launch(32), SUCCESS);
        assert_eq!(launch(24), INVALID_VALUE);
        assert_eq!(cuModuleUnload(module), SUCCESS);
    }
}

#[test]
fn relocations_give_function_pointers_the_functions_addresses() {
    // The kernel environment of main_l7 points at its dynamic environment (R_CUDA_G64): the
    // relocated value is that global's address.
    let mut module = std::ptr::null_mut();
    // SAFETY: as above.
    unsafe {
        assert_eq!(
            cuModuleLoadDataEx(
                &mut module,
                CUBIN.as_ptr().cast(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut()
            ),
            SUCCESS
        );
        let (mut environment, mut dynamic, mut size) = (0u64, 0u64, 0usize);
        let name = c"__omp_offloading_fe00_51c003_main_l7_kernel_environment";
        assert_eq!(
            cuModuleGetGlobal_v2(&mut environment, &mut size, module, name.as_ptr()),
            SUCCESS
        );
        let name = c"__omp_offloading_fe00_51c003_main_l7_dynamic_environment";
        assert_eq!(
            cuModuleGetGlobal_v2(&mut dynamic, &mut size, module, name.as_ptr()),
            SUCCESS
        );
        // KernelEnvironmentTy: 32 bytes of configuration, then the ident and the dynamic
        // environment pointers.
        let pointer = (environment as *const u64).add(5).read_unaligned();
        assert_eq!(pointer, dynamic);
        assert_eq!(cuModuleUnload(module), SUCCESS);
    }
}
