! CFLAGS: -fopenmp-version=52
! declare target procedures: a device-only function (device_type(nohost)) called in target
! regions, a function for both (device_type(any)) that tells where it runs, and a module
! subroutine with an array dummy argument called from a parallel loop on the device.
module device_procedures
  implicit none
contains
  integer function twice(x)
    !$omp declare target enter(twice) device_type(nohost)
    integer, intent(in) :: x
    twice = 2 * x
  end function

  logical function runs_on_host()
    use omp_lib
    !$omp declare target enter(runs_on_host) device_type(any)
    runs_on_host = omp_is_initial_device()
  end function

  subroutine add_row(a, n, row)
    !$omp declare target enter(add_row)
    integer, intent(in) :: n, row
    integer, intent(inout) :: a(n)
    integer :: i
    do i = 1, n
      a(i) = a(i) + row
    end do
  end subroutine
end module

program declare_target_functions
  use device_procedures
  implicit none
  integer :: r, j, m(10, 4)
  logical :: where_device
  !$omp target map(from: r, where_device)
  r = twice(21)
  where_device = runs_on_host()
  !$omp end target
  if (r /= 42) call fail('the nohost function did not return 42')
  if (where_device) call fail('the device_type(any) function says host inside target')
  if (.not. runs_on_host()) call fail('the device_type(any) function says device on the host')
  m = 0
  !$omp target teams distribute parallel do map(tofrom: m)
  do j = 1, 4
    call add_row(m(:, j), 10, j)
  end do
  do j = 1, 4
    if (any(m(:, j) /= j)) call fail('add_row on the device did not fill column j with j')
  end do
contains
  subroutine fail(msg)
    character(*), intent(in) :: msg
    write(0, '(a)') msg
    stop 1
  end subroutine
end program
