! CFLAGS: -fopenmp-version=52
! declare target module variables, OpenMP 5.2's enter clause and 5.1's to: each has a device
! copy of its own, initialized from the image; target update moves values between the host's
! and the device's, and a region uses the device copy without any map clause.
module settings
  implicit none
  integer :: counter = 5
  real(8) :: table(8) = 1.0d0
  !$omp declare target enter(counter)
  !$omp declare target to(table)
end module

program declare_target_module
  use settings
  implicit none
  integer :: seen, i
  real(8) :: total
  ! The device copy starts as the image's initial value.
  !$omp target map(from: seen)
  seen = counter
  counter = counter + 1
  !$omp end target
  if (seen /= 5) call fail('device copy of counter did not start at 5')
  if (counter /= 5) call fail('host copy of counter changed without an update')
  !$omp target update from(counter)
  if (counter /= 6) call fail('target update from(counter) did not bring 6')
  counter = 100
  !$omp target update to(counter)
  !$omp target map(from: seen)
  seen = counter
  !$omp end target
  if (seen /= 100) call fail('target update to(counter) did not reach the device')
  ! An array: the device fills it, the host sees it after an update only.
  !$omp target
  do i = 1, 8
    table(i) = table(i) + i
  end do
  !$omp end target
  if (any(table /= 1.0d0)) call fail('host table changed without an update')
  !$omp target update from(table)
  total = 0
  do i = 1, 8
    total = total + table(i)
  end do
  if (total /= 8 + 36) call fail('table after target update from is not 1+i')
contains
  subroutine fail(msg)
    character(*), intent(in) :: msg
    write(0, '(a)') msg
    stop 1
  end subroutine
end program
