! List-directed print alone from a target region: a static program whose own code makes no
! formatted statement links only part of flang's I/O runtime (list-directed output lives apart
! from formatted output and EnableHandlers). `cargo xtask test` runs the sm_90 build on the
! virtual GPU and with OMP_TARGET_OFFLOAD=disabled and wants the same output: the statement is
! replayed through the entry points the program has, with flang's formatting.
program list_output
  implicit none
  integer :: i
  real(8) :: x(3)
  x = [0.5d0, 1d10, -3d0]
  i = 42
  !$omp target map(to: x, i)
  print *, 'list only', i, x, .true., (1.0, 2.0)
  !$omp end target
end program
