! ENV: OMP_TARGET_OFFLOAD=default
! if(.false.) runs the region on the host (omp_is_initial_device() is true there, and the
! data is the host's), if(.true.) on the device; the result is the same either way.
program if_and_host_fallback
  use omp_lib
  implicit none
  integer :: a(100), i
  logical :: on_host, use_device
  do i = 1, 100
    a(i) = i
  end do
  use_device = .false.
  !$omp target if(use_device) map(tofrom: a) map(from: on_host)
  on_host = omp_is_initial_device()
  do i = 1, 100
    a(i) = a(i) + 1
  end do
  !$omp end target
  if (.not. on_host) call fail('target if(.false.) did not run on the host')
  use_device = .true.
  !$omp target teams distribute parallel do if(target: use_device) map(tofrom: a)
  do i = 1, 100
    a(i) = a(i) * 2
  end do
  !$omp target if(use_device) map(from: on_host)
  on_host = omp_is_initial_device()
  !$omp end target
  if (on_host) call fail('target if(.true.) ran on the host')
  do i = 1, 100
    if (a(i) /= 2 * (i + 1)) call fail('a is not 2*(i+1) after both regions')
  end do
contains
  subroutine fail(msg)
    character(*), intent(in) :: msg
    write(0, '(a)') msg
    stop 1
  end subroutine
end program
