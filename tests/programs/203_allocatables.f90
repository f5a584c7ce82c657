! Allocatable arrays (1-D and 2-D, with lower bounds other than 1) mapped whole and through a
! section; the descriptor is mapped with the data, so bounds and shape queries work on the
! device; and an allocatable kept on the device by target enter data across two regions.
program allocatables
  use omp_lib
  implicit none
  real(8), allocatable :: v(:), m(:, :), keep(:)
  integer :: i, j, lb, ub, n1, n2
  logical :: on_host
  allocate(v(0:99), m(-2:2, 3))
  do i = 0, 99
    v(i) = i
  end do
  m = 1.0d0
  !$omp target map(tofrom: v, m) map(from: lb, ub, n1, n2, on_host)
  on_host = omp_is_initial_device()
  lb = lbound(v, 1)
  ub = ubound(v, 1)
  n1 = size(m, 1)
  n2 = size(m, 2)
  do i = lbound(v, 1), ubound(v, 1)
    v(i) = 2 * v(i)
  end do
  do j = 1, 3
    do i = -2, 2
      m(i, j) = i * j
    end do
  end do
  !$omp end target
  if (on_host) call fail('target region did not run on the device')
  if (lb /= 0 .or. ub /= 99) call fail('bounds of v on the device are not 0:99')
  if (n1 /= 5 .or. n2 /= 3) call fail('shape of m on the device is not 5x3')
  do i = 0, 99
    if (v(i) /= 2 * i) call fail('v did not come back doubled')
  end do
  do j = 1, 3
    do i = -2, 2
      if (m(i, j) /= i * j) call fail('m did not come back as i*j')
    end do
  end do
  ! A section of an allocatable.
  !$omp target map(tofrom: v(10:19))
  do i = 10, 19
    v(i) = -1
  end do
  !$omp end target
  if (v(9) /= 18 .or. v(10) /= -1 .or. v(19) /= -1 .or. v(20) /= 40) call fail('v(10:19) section')
  ! Kept on the device between regions.
  allocate(keep(50))
  keep = 3
  !$omp target enter data map(to: keep)
  keep = 0
  !$omp target
  do i = 1, 50
    keep(i) = keep(i) + i
  end do
  !$omp end target
  if (keep(50) /= 0) call fail('keep changed on the host before exit data')
  !$omp target exit data map(from: keep)
  do i = 1, 50
    if (keep(i) /= 3 + i) call fail('keep did not come back as 3+i')
  end do
  deallocate(v, m, keep)
contains
  subroutine fail(msg)
    character(*), intent(in) :: msg
    write(0, '(a)') msg
    stop 1
  end subroutine
end program
