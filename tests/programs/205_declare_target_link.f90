! declare target link module variables: the device has only a reference, bound when the
! variable is mapped; a region that maps it sees the host's values and writes them back.
module big_data
  implicit none
  real :: big(1000)
  integer :: scale_by
  !$omp declare target link(big, scale_by)
end module

program declare_target_link
  use big_data
  implicit none
  integer :: i
  do i = 1, 1000
    big(i) = i
  end do
  scale_by = 3
  !$omp target map(tofrom: big) map(to: scale_by)
  do i = 1, 1000
    big(i) = big(i) * scale_by
  end do
  !$omp end target
  do i = 1, 1000
    if (big(i) /= 3.0 * i) call fail('big did not come back scaled by 3')
  end do
  ! A second mapping sees the current host values again.
  scale_by = -1
  !$omp target data map(tofrom: big) map(to: scale_by)
  !$omp target
  big(1) = big(1) * scale_by
  !$omp end target
  !$omp end target data
  if (big(1) /= -3.0) call fail('the second mapping of big / scale_by did not see the host values')
contains
  subroutine fail(msg)
    character(*), intent(in) :: msg
    write(0, '(a)') msg
    stop 1
  end subroutine
end program
