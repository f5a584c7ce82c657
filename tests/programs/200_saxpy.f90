! saxpy with target teams distribute parallel do: arrays mapped to and tofrom, the region runs
! on the device (omp_is_initial_device() is false there), the host sees the result.
program saxpy
  use omp_lib
  implicit none
  integer, parameter :: n = 10000
  real :: x(n), y(n), a
  integer :: i
  logical :: on_host
  a = 2.0
  do i = 1, n
    x(i) = real(i)
    y(i) = 1.0
  end do
  on_host = .true.
  !$omp target teams distribute parallel do map(to: x, a) map(tofrom: y)
  do i = 1, n
    y(i) = a * x(i) + y(i)
  end do
  !$omp target map(from: on_host)
  on_host = omp_is_initial_device()
  !$omp end target
  if (on_host) call fail('target region did not run on the device')
  do i = 1, n
    if (y(i) /= 2.0 * real(i) + 1.0) call fail('y has a wrong element after the saxpy')
  end do
  if (.not. omp_is_initial_device()) call fail('host code reports not initial device')
contains
  subroutine fail(msg)
    character(*), intent(in) :: msg
    write(0, '(a)') msg
    stop 1
  end subroutine
end program
