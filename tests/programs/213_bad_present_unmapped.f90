! EXPECT: fail
! EXPECT-STDERR-BOTH: omptarget message: device mapping required by 'present' map type modifier does not exist for host address 0x
! map(present, to: x) of a variable that is not mapped must stop the program (a runtime error
! under OMP_TARGET_OFFLOAD=mandatory), also from Fortran.
program bad_present_unmapped
  implicit none
  integer :: x, y(4)
  x = 1
  y = 0
  !$omp target enter data map(to: y)
  !$omp target map(present, to: x) map(present, tofrom: y)
  y(1) = x
  !$omp end target
  ! Reaching this point means the present check did not fire.
  write(0, '(a)') 'map(present) of an unmapped x did not fail'
  stop 0
end program
