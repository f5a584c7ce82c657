! CHARACTER scalars under defaultmap(tofrom: scalar) come back from the device (issue 34,
! item 4): a local of fixed length, a one-character variable, and an assumed-length dummy
! argument, each changed in the region. (The suite's failing case behaved as firstprivate; these
! shapes pass with the runtime as it is, and guard it.)
program character_scalar_defaultmap
  use omp_lib
  implicit none
  character(len=5) :: s
  character :: c
  character(len=8) :: t
  integer :: n
  logical :: on_device
  s = 'hello'
  c = 'a'
  n = 1
  on_device = .false.
  !$omp target defaultmap(tofrom: scalar)
  s = 'world'
  c = 'z'
  n = 2
  on_device = .not. omp_is_initial_device()
  !$omp end target
  if (.not. on_device) call fail('the region did not run on the device')
  if (s /= 'world') call fail('character(len=5) did not come back')
  if (c /= 'z') call fail('character did not come back')
  if (n /= 2) call fail('integer did not come back')
  t = 'before'
  call change(t)
  if (t /= 'after') call fail('an assumed-length dummy argument did not come back')
contains
  subroutine change(text)
    character(len=*), intent(inout) :: text
    !$omp target defaultmap(tofrom: scalar)
    text = 'after'
    !$omp end target
  end subroutine
  subroutine fail(why)
    character(*), intent(in) :: why
    write (0, '(a)') why
    stop 1
  end subroutine
end program
