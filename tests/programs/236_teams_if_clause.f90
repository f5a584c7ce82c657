! target teams distribute parallel do with an if clause without modifier (issue 34, item 6): the
! first kernel with if(.false.) runs on the host, the second with if(.true.) on the device;
! both add to the array. flang-22's host code for the construct with a false if runs the
! distribute loop outside any teams construct, and libomp's static distribute init asserts
! (`kmp_sched.cpp(547): nteams == (kmp_uint32)team->t.t_parent->t.t_nproc`) before the first
! kernel ends. The same happens with no offload target at all (`flang-22 -fopenmp`, libomp
! alone) and with LLVM's library: flang-22's, KNOWN_FAILURES. The C form of the construct
! (clang) works.
program teams_if_clause
  implicit none
  integer, parameter :: n = 1000
  integer :: a(n), i
  logical :: on_device
  a = 0
  on_device = .false.
  !$omp target teams distribute parallel do if(on_device) map(tofrom: a)
  do i = 1, n
    a(i) = a(i) + i
  end do
  on_device = .true.
  !$omp target teams distribute parallel do if(on_device) map(tofrom: a)
  do i = 1, n
    a(i) = a(i) + i
  end do
  if (sum(a) /= n * (n + 1)) then
    print *, 'FAIL: sum', sum(a), 'expected', n * (n + 1)
    stop 1
  end if
  print *, 'teams if clause: ok'
end program
