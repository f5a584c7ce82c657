! Fortran runtime calls inside a target region (not a corpus program: it cannot link for a GPU).
! On the CPU plugin the x86_64 image links flang's runtime like host code does, so formatted
! output, trim and an allocatable assignment of a derived type work there; cargo xtask test
! runs it and looks for the line it prints. For sm_90 and gfx90a the device link fails and
! `cargo xtask fc` must name _FortranATrim as missing from rustomp's device runtime (the print
! links: the device runtime has flang's output statements).
program runtime_calls
  use omp_lib
  implicit none
  type :: holder
    integer, allocatable :: v(:)
  end type
  type(holder) :: a, b
  character(len=12) :: word
  integer :: total
  logical :: on_host
  word = 'device  '
  total = 0
  on_host = .true.
  !$omp target map(tofrom: word, total, on_host)
  on_host = omp_is_initial_device()
  allocate(a%v(3))
  a%v = [20, 21, 1]
  b = a
  total = sum(b%v)
  print '(a, a, i0)', trim(word), ' says ', total
  !$omp end target
  if (on_host) error stop 'the region did not run on the device'
  if (total /= 42) error stop 'the derived-type assignment on the device lost a value'
end program
