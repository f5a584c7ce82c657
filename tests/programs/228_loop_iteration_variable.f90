! The `loop` construct's iteration variable is lastprivate (OpenMP 5.2, 5.1.1): after the loop
! it holds the value after the last iteration, N+1 (issue 34, item 8). flang-22 leaves it
! unchanged, in a target region and equally in plain host code compiled without offload
! (`!$omp parallel` + `!$omp loop`): the compiler's (KNOWN_FAILURES).
program loop_iteration_variable
  use omp_lib
  implicit none
  integer :: i, a(10)
  logical :: on_device
  i = -5
  !$omp target map(tofrom: i, a) map(from: on_device)
  on_device = .not. omp_is_initial_device()
  !$omp loop
  do i = 1, 10
    a(i) = i
  end do
  !$omp end target
  if (.not. on_device) call fail('the region did not run on the device')
  if (any(a /= [(i, i = 1, 10)])) call fail('the loop did not run')
  i = -5
  !$omp target map(tofrom: i, a)
  !$omp loop
  do i = 1, 10
    a(i) = 2 * i
  end do
  !$omp end target
  if (i /= 11) call fail('the loop iteration variable is not 11 after the loop')
contains
  subroutine fail(why)
    character(*), intent(in) :: why
    write (0, '(a)') why
    stop 1
  end subroutine
end program
