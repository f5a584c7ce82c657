! LLVM-REF: fails (LLVM's library ends the region on the default device its body set: 'a is still mapped on device 0 after the region')
! A target data region ends on the device it began on (issue 34, item 2). The region has no
! device clause, so it begins on the default device (0); its body makes device 1 the default.
! Its end must still copy back and unmap on device 0: before, it ended on device 1, where
! nothing was mapped, so the data never came back and stayed mapped on device 0.
program target_data_default_device
  use omp_lib
  use iso_c_binding
  implicit none
  integer, target :: a(100)
  integer :: i
  if (omp_get_num_devices() < 2) then
    ! One device (a GPU machine): nothing to change the default to.
    stop
  end if
  a = 1
  call omp_set_default_device(0)
  !$omp target data map(tofrom: a)
  call omp_set_default_device(1)
  !$omp target device(0) map(tofrom: a)
  do i = 1, 100
    a(i) = a(i) + i
  end do
  !$omp end target
  !$omp end target data
  call omp_set_default_device(0)
  if (omp_target_is_present(c_loc(a), 0) /= 0) call fail('a is still mapped on device 0 after the region')
  do i = 1, 100
    if (a(i) /= 1 + i) call fail('a did not come back from device 0 at the end of the region')
  end do
contains
  subroutine fail(why)
    character(*), intent(in) :: why
    write (0, '(a)') why
    stop 1
  end subroutine
end program
