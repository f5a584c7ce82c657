! target nowait with depend: a chain of deferred target tasks ordered by their dependences
! (each doubles what the previous one wrote), and taskwait. (flang-22 does not implement
! depend on target enter/exit data yet.)
program nowait_depend
  implicit none
  integer :: a(256), b(256), i, step
  a = 1
  b = 0
  !$omp target enter data map(to: a)
  do step = 1, 4
    !$omp target nowait depend(inout: a) map(alloc: a)
    do i = 1, 256
      a(i) = a(i) * 2
    end do
    !$omp end target
  end do
  !$omp target nowait depend(in: a) depend(out: b) map(alloc: a) map(from: b)
  do i = 1, 256
    b(i) = a(i) + i
  end do
  !$omp end target
  !$omp taskwait
  !$omp target exit data map(from: a)
  do i = 1, 256
    if (a(i) /= 16) call fail('a is not doubled 4 times in dependence order')
    if (b(i) /= 16 + i) call fail('b did not see the last a')
  end do
contains
  subroutine fail(msg)
    character(*), intent(in) :: msg
    write(0, '(a)') msg
    stop 1
  end subroutine
end program
