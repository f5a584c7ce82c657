! LLVM-REF: fails (LLVM's host plugin runs flang's kernel as no team: the region reads omp_get_thread_limit() = 2147483647)
! thread_limit on target teams (issue 34, item 1): the region sees it in
! omp_get_thread_limit(), and its parallel regions, even one that asks for more threads, have at
! most that many. On the CPU plugin flang-22's kernels form no teams of their own, so before the
! plugin ran them as a team limited by the clause the region read 2147483647 and a
! num_threads(8) region got 8 threads.
program thread_limit
  use omp_lib
  implicit none
  integer :: limit, threads, asked
  logical :: on_device
  limit = -1
  threads = -1
  asked = -1
  !$omp target teams num_teams(1) thread_limit(3) map(from: limit, threads, asked, on_device)
  on_device = .not. omp_is_initial_device()
  !$omp parallel
  if (omp_get_thread_num() == 0) then
    limit = omp_get_thread_limit()
    threads = omp_get_num_threads()
  end if
  !$omp end parallel
  !$omp parallel num_threads(8)
  if (omp_get_thread_num() == 0) asked = omp_get_num_threads()
  !$omp end parallel
  !$omp end target teams
  if (.not. on_device) call fail('the region did not run on the device')
  if (limit /= 3) call fail('omp_get_thread_limit() in the region is not 3')
  if (threads < 1 .or. threads > 3) call fail('a parallel region has more threads than thread_limit(3)')
  if (asked < 1 .or. asked > 3) call fail('parallel num_threads(8) has more threads than thread_limit(3)')
contains
  subroutine fail(why)
    character(*), intent(in) :: why
    write (0, '(a)') why
    stop 1
  end subroutine
end program
