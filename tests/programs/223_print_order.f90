! EXPECT-ORDER: step 1 on the host
! EXPECT-ORDER: step 2 in the region
! EXPECT-ORDER: step 3 on the host
! EXPECT-ORDER: step 4 in the region
! EXPECT-ORDER: step 5 on the host
! print in a target region comes out in program order (issue 34, item 9; on a GPU the device's
! statements are replayed into the program's flang runtime, in order). On the CPU plugin the
! image carries its own copy of flang's runtime, whose unit 6 buffered apart from the
! program's: the region's lines came out at exit, after the program's later lines ("step 3"
! before "step 2").
program print_order
  implicit none
  integer :: step
  step = 1
  print '(a,i0,a)', 'step ', step, ' on the host'
  !$omp target map(tofrom: step)
  step = step + 1
  print '(a,i0,a)', 'step ', step, ' in the region'
  !$omp end target
  step = step + 1
  print '(a,i0,a)', 'step ', step, ' on the host'
  !$omp target map(tofrom: step)
  step = step + 1
  print '(a,i0,a)', 'step ', step, ' in the region'
  !$omp end target
  step = step + 1
  print '(a,i0,a)', 'step ', step, ' on the host'
end program
