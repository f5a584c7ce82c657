! thread_limit(n) with n known only at run time (issue 34, item 1): as 219, the region sees it
! and its parallel regions have at most n threads. flang-22 does not pass the value: its host
! code calls __tgt_target_kernel with thread limit 0 and zero ThreadLimit kernel arguments, and
! the kernel environment holds no constant (KNOWN_FAILURES).
program thread_limit_runtime
  use omp_lib
  implicit none
  integer :: limit, asked, n
  logical :: on_device
  n = 3
  limit = -1
  asked = -1
  !$omp target teams num_teams(1) thread_limit(n) map(from: limit, asked, on_device)
  on_device = .not. omp_is_initial_device()
  !$omp parallel num_threads(8)
  if (omp_get_thread_num() == 0) then
    limit = omp_get_thread_limit()
    asked = omp_get_num_threads()
  end if
  !$omp end parallel
  !$omp end target teams
  if (.not. on_device) call fail('the region did not run on the device')
  if (limit /= 3) call fail('omp_get_thread_limit() is not thread_limit(n) with n = 3')
  if (asked < 1 .or. asked > 3) call fail('parallel num_threads(8) has more threads than thread_limit(n)')
contains
  subroutine fail(why)
    character(*), intent(in) :: why
    write (0, '(a)') why
    stop 1
  end subroutine
end program
