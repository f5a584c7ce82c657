! Reductions on the device: +, max, min and * over integers and reals in a combined target
! teams distribute parallel do, a .and./.or. reduction of logicals in target parallel do,
! and an array reduction.
program reductions
  implicit none
  integer, parameter :: n = 5000
  integer :: i, isum, imax, imin, hist(4)
  real(8) :: rsum, rprod
  logical :: all_even, any_big
  isum = 0
  imax = -huge(0)
  imin = huge(0)
  rsum = 0
  rprod = 1
  !$omp target teams distribute parallel do reduction(+: isum, rsum) reduction(max: imax) &
  !$omp&  reduction(min: imin) reduction(*: rprod)
  do i = 1, n
    isum = isum + i
    rsum = rsum + 0.5d0
    imax = max(imax, mod(i * 7919, 10007))
    imin = min(imin, mod(i * 7919, 10007))
    if (mod(i, 1000) == 0) rprod = rprod * 2
  end do
  if (isum /= n * (n + 1) / 2) call fail('+ reduction of integers')
  if (rsum /= 0.5d0 * n) call fail('+ reduction of reals')
  if (imax /= expected_max()) call fail('max reduction')
  if (imin /= expected_min()) call fail('min reduction')
  if (rprod /= 32) call fail('* reduction')
  all_even = .true.
  any_big = .false.
  !$omp target parallel do reduction(.and.: all_even) reduction(.or.: any_big) num_threads(4)
  do i = 1, 100
    all_even = all_even .and. mod(2 * i, 2) == 0
    any_big = any_big .or. i > 99
  end do
  if (.not. all_even) call fail('.and. reduction')
  if (.not. any_big) call fail('.or. reduction')
  hist = 0
  !$omp target teams distribute parallel do reduction(+: hist)
  do i = 1, 1000
    hist(mod(i, 4) + 1) = hist(mod(i, 4) + 1) + 1
  end do
  if (any(hist /= 250)) call fail('array reduction')
contains
  integer function expected_max()
    integer :: k
    expected_max = -huge(0)
    do k = 1, n
      expected_max = max(expected_max, mod(k * 7919, 10007))
    end do
  end function
  integer function expected_min()
    integer :: k
    expected_min = huge(0)
    do k = 1, n
      expected_min = min(expected_min, mod(k * 7919, 10007))
    end do
  end function
  subroutine fail(msg)
    character(*), intent(in) :: msg
    write(0, '(a)') msg
    stop 1
  end subroutine
end program
