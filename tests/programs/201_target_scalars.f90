! A target region with scalars and a small array: map(tofrom:) copies in and back, map(from:)
! only back, map(to:) only in (the device copy is separate: a change there stays there), and a
! scalar without a map clause is firstprivate (changes on the device do not come back).
program target_scalars
  use omp_lib
  implicit none
  integer :: x, a(16), i, only_in, only_out, priv
  logical :: on_host
  x = 41
  only_in = 5
  only_out = -1
  priv = 10
  do i = 1, 16
    a(i) = i
  end do
  !$omp target map(tofrom: x, a) map(to: only_in) map(from: on_host, only_out)
  on_host = omp_is_initial_device()
  x = x + 1
  do i = 1, 16
    a(i) = a(i) * 3
  end do
  only_out = only_in * 2
  only_in = 99
  !$omp end target
  if (on_host) call fail('target region did not run on the device')
  if (x /= 42) call fail('x after target is not 42')
  do i = 1, 16
    if (a(i) /= 3 * i) call fail('a(i) after target is not 3*i')
  end do
  if (only_out /= 10) call fail('map(from:) did not bring only_in*2 back')
  if (only_in /= 5) call fail('map(to:) copied only_in back')
  !$omp target
  priv = priv + 1
  !$omp end target
  if (priv /= 10) call fail('a scalar without a map clause came back (it is firstprivate)')
contains
  subroutine fail(msg)
    character(*), intent(in) :: msg
    write(0, '(a)') msg
    stop 1
  end subroutine
end program
