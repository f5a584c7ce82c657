! Loop forms on the device: integer(8) loop variables (OpenMPIRBuilder's 64-bit static loops),
! collapse(2), a chunked static schedule, a negative step, an empty loop, and bounds only known
! at run time; every iteration runs exactly once.
program loop_forms
  implicit none
  integer(8), parameter :: n8 = 3000_8
  integer(8) :: k
  integer :: hits(3000), grid(17, 23), down(50), i, j, lo, hi, empty
  hits = 0
  !$omp target teams distribute parallel do map(tofrom: hits)
  do k = 1_8, n8
    hits(k) = hits(k) + 1
  end do
  if (any(hits /= 1)) call fail('integer(8) loop missed or repeated an iteration')
  grid = 0
  !$omp target teams distribute parallel do collapse(2) map(tofrom: grid)
  do j = 1, 23
    do i = 1, 17
      grid(i, j) = grid(i, j) + i * j
    end do
  end do
  do j = 1, 23
    do i = 1, 17
      if (grid(i, j) /= i * j) call fail('collapse(2) missed or repeated an iteration')
    end do
  end do
  down = 0
  !$omp target parallel do schedule(static, 4) map(tofrom: down)
  do i = 50, 1, -3
    down(i) = down(i) + 1
  end do
  do i = 1, 50
    if (mod(50 - i, 3) == 0) then
      if (down(i) /= 1) call fail('negative-step loop missed an iteration')
    else if (down(i) /= 0) then
      call fail('negative-step loop ran an iteration it does not have')
    end if
  end do
  lo = 10
  hi = 9
  empty = 0
  !$omp target teams distribute parallel do map(tofrom: empty)
  do i = lo, hi
    empty = empty + 1
  end do
  if (empty /= 0) call fail('an empty loop ran')
contains
  subroutine fail(msg)
    character(*), intent(in) :: msg
    write(0, '(a)') msg
    stop 1
  end subroutine
end program
