! EXPECT: abort
! HOST-ONLY: the CPU plugin's kernel stack (a GPU thread's locals are its local memory)
! LLVM-REF: fails (LLVM's host plugin runs the kernel on the launching thread's stack: SIGSEGV)
! EXPECT-STDERR: overflowed its stack of
! The kernel of 221 with 24 MiB of locals and no stack setting (issue 34, item 7): the kernel's
! stack is the thread's own size (8 MiB), too small, and the run must end with a message naming
! the device, the kernel and the size (then abort), not a bare SIGSEGV.
program small_kernel_stack
  implicit none
  integer(8) :: total
  total = 0
  !$omp target map(from: total)
  !dir$ noinline
  call work(total)
  !$omp end target
  print *, total
contains
  subroutine work(total)
    !$omp declare target
    integer(8), intent(out) :: total
    integer(8) :: a(1500000), b(1500000)
    integer :: i
    do i = 1, 1500000
      a(i) = i
      b(i) = i
    end do
    total = sum(a) + sum(b)
  end subroutine
end program
