! Inside target parallel: atomic update and capture, single, master, barrier, and worksharing
! do loops with static, static-chunked and dynamic schedules (every iteration exactly once).
! (No critical: flang-22's lock variable for nvptx64, `.gomp_critical_user_.var`, is a name
! ptxas rejects.)
program parallel_constructs
  implicit none
  integer, parameter :: n = 1000
  integer :: hits(n), arrivals, atom, singles, masters, after_barrier, i, t, nthreads
  hits = 0
  arrivals = 0
  atom = 0
  singles = 0
  masters = 0
  after_barrier = 0
  nthreads = 0
  !$omp target parallel num_threads(4) map(tofrom: hits, arrivals, atom, singles, masters, after_barrier, nthreads) &
  !$omp&  private(t)
  !$omp atomic update
  arrivals = arrivals + 1
  !$omp atomic update
  atom = atom + 2
  !$omp atomic capture
  atom = atom + 1
  t = atom
  !$omp end atomic
  !$omp single
  singles = singles + 1
  !$omp end single
  !$omp master
  masters = masters + 1
  !$omp end master
  !$omp barrier
  !$omp atomic update
  after_barrier = after_barrier + 1
  !$omp do schedule(static)
  do i = 1, n
    hits(i) = hits(i) + 1
  end do
  !$omp end do
  !$omp do schedule(static, 7)
  do i = 1, n
    hits(i) = hits(i) + 10
  end do
  !$omp end do
  !$omp do schedule(dynamic, 5)
  do i = 1, n
    hits(i) = hits(i) + 100
  end do
  !$omp end do
  !$omp single
  nthreads = arrivals
  !$omp end single
  !$omp end target parallel
  if (nthreads < 1 .or. nthreads > 4) call fail('the region ran a wrong number of threads')
  if (atom /= 3 * nthreads) call fail('atomic update/capture lost an update')
  if (singles /= 1) call fail('single ran more than once')
  if (masters /= 1) call fail('master ran more than once')
  if (after_barrier /= nthreads) call fail('not every thread passed the barrier')
  do i = 1, n
    if (hits(i) /= 111) call fail('a worksharing loop missed or repeated an iteration')
  end do
contains
  subroutine fail(msg)
    character(*), intent(in) :: msg
    write(0, '(a)') msg
    stop 1
  end subroutine
end program
