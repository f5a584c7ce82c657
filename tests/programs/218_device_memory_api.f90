! CFLAGS: -fopenmp-version=52
! omp_lib's device memory routines from Fortran: omp_target_alloc, omp_target_memcpy both
! ways, omp_target_is_present, is_device_ptr on a C pointer turned into a Fortran array in the
! region, use_device_addr, and omp_target_free.
program device_memory_api
  use omp_lib
  use iso_c_binding
  implicit none
  integer, parameter :: n = 64
  integer(c_int), target :: host(n), back(n)
  integer(c_int), pointer :: dev(:)
  type(c_ptr) :: d
  integer :: dev_num, i, rc
  dev_num = omp_get_default_device()
  do i = 1, n
    host(i) = i
  end do
  back = 0
  d = omp_target_alloc(int(n * c_sizeof(host(1)), c_size_t), dev_num)
  if (.not. c_associated(d)) call fail('omp_target_alloc returned null')
  rc = omp_target_memcpy(d, c_loc(host), int(n * c_sizeof(host(1)), c_size_t), 0_c_size_t, 0_c_size_t, &
                         dev_num, omp_get_initial_device())
  if (rc /= 0) call fail('omp_target_memcpy to the device failed')
  !$omp target is_device_ptr(d)
  call c_f_pointer(d, dev, [n])
  do i = 1, n
    dev(i) = dev(i) * 10
  end do
  !$omp end target
  rc = omp_target_memcpy(c_loc(back), d, int(n * c_sizeof(host(1)), c_size_t), 0_c_size_t, 0_c_size_t, &
                         omp_get_initial_device(), dev_num)
  if (rc /= 0) call fail('omp_target_memcpy back failed')
  do i = 1, n
    if (back(i) /= 10 * i) call fail('device memory did not hold 10*i')
  end do
  call omp_target_free(d, dev_num)
  if (omp_target_is_present(c_loc(host), dev_num) /= 0) call fail('host is present before any map')
  !$omp target data map(tofrom: host)
  if (omp_target_is_present(c_loc(host), dev_num) == 0) call fail('host is not present inside target data')
  !$omp target data use_device_addr(host)
  if (c_associated(c_loc(host), c_loc(back))) call fail('use_device_addr gave another array')
  !$omp end target data
  !$omp end target data
  if (omp_target_is_present(c_loc(host), dev_num) /= 0) call fail('host is still present after target data')
contains
  subroutine fail(msg)
    character(*), intent(in) :: msg
    write(0, '(a)') msg
    stop 1
  end subroutine
end program
