! ENV: OMP_STACKSIZE=64M
! HOST-ONLY: the CPU plugin's kernel stack (a GPU thread's locals are its local memory)
! LLVM-REF: fails (LLVM's host plugin runs the kernel on the launching thread's 8 MiB stack: SIGSEGV)
! A kernel with about 16 MiB of local arrays (issue 34, item 7): on the CPU plugin a kernel runs
! on a stack of its own that OMP_STACKSIZE (or LIBOMPTARGET_STACK_SIZE) sizes; before, it ran on
! the launching thread's 8 MiB stack and died of SIGSEGV. 222 is the same kernel with too small
! a stack, which must end with a message naming the problem.
program large_kernel_locals
  implicit none
  integer(8) :: total
  logical :: on_device
  total = 0
  !$omp target map(from: total, on_device)
  !dir$ noinline
  call work(total, on_device)
  !$omp end target
  if (.not. on_device) call fail('the region did not run on the device')
  if (total /= 2000000_8 * 2000001_8) call fail('the sum over the local arrays is wrong')
contains
  subroutine work(total, on_device)
    !$omp declare target
    use omp_lib
    integer(8), intent(out) :: total
    logical, intent(out) :: on_device
    integer(8) :: a(1000000), b(1000000)
    integer :: i
    on_device = .not. omp_is_initial_device()
    do i = 1, 1000000
      a(i) = i
      b(i) = 1000000 + i
    end do
    total = 2 * (sum(a) + sum(b))
  end subroutine
  subroutine fail(why)
    character(*), intent(in) :: why
    write (0, '(a)') why
    stop 1
  end subroutine
end program
