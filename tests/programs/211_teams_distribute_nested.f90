! target teams with code in the teams region (generic mode): distribute over the outer loop,
! a parallel do nested inside each iteration, dist_schedule, and a teams-level value combined
! with atomics. Each element is written once.
program teams_distribute_nested
  implicit none
  integer, parameter :: rows = 37, cols = 53
  integer :: a(cols, rows), i, j, total, teams_seen
  a = 0
  total = 0
  teams_seen = 0
  !$omp target teams num_teams(4) map(tofrom: a, total, teams_seen)
  !$omp atomic update
  teams_seen = teams_seen + 1
  !$omp distribute
  do j = 1, rows
    !$omp parallel do
    do i = 1, cols
      a(i, j) = a(i, j) + i + 1000 * j
    end do
    !$omp end parallel do
    !$omp atomic update
    total = total + 1
  end do
  !$omp end distribute
  !$omp end target teams
  if (teams_seen < 1 .or. teams_seen > 4) call fail('teams region ran a wrong number of times')
  if (total /= rows) call fail('distribute missed or repeated an outer iteration')
  do j = 1, rows
    do i = 1, cols
      if (a(i, j) /= i + 1000 * j) call fail('an element was written other than once')
    end do
  end do
  a = 0
  !$omp target teams distribute dist_schedule(static, 5) map(tofrom: a)
  do j = 1, rows
    a(1, j) = j
  end do
  do j = 1, rows
    if (a(1, j) /= j) call fail('dist_schedule(static, 5) missed an iteration')
  end do
contains
  subroutine fail(msg)
    character(*), intent(in) :: msg
    write(0, '(a)') msg
    stop 1
  end subroutine
end program
