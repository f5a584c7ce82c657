! CFLAGS: -fopenmp-version=52
! A declare mapper on a derived type with an allocatable component, used by target update
! (issue 34, item 3): `target update to(v)` / `from(v)` must move v%data(1:v%len) through the
! mapper, not only the descriptor. flang-22 passes no mapper to __tgt_target_data_update_mapper
! (its mapper array holds null, and it passes a null array), so no runtime can apply it: the
! device computes on stale data and nothing comes back (KNOWN_FAILURES).
module vectors
  implicit none
  type vector
    integer :: len
    real(8), allocatable :: data(:)
  end type
  !$omp declare mapper(vector :: v) map(v, v%data(1:v%len))
end module

program mapper_target_update
  use vectors
  use omp_lib
  implicit none
  type(vector) :: v
  integer :: i
  logical :: on_device
  v%len = 10
  allocate (v%data(10))
  v%data = 1.0d0
  !$omp target enter data map(to: v)
  v%data = 5.0d0
  !$omp target update to(v)
  !$omp target map(from: on_device)
  on_device = .not. omp_is_initial_device()
  do i = 1, v%len
    v%data(i) = v%data(i) + i
  end do
  !$omp end target
  if (.not. on_device) call fail('the region did not run on the device')
  v%data = -1.0d0
  !$omp target update from(v)
  do i = 1, 10
    if (v%data(i) /= 5.0d0 + i) call fail('v%data did not move through the mapper on target update')
  end do
  !$omp target exit data map(delete: v)
contains
  subroutine fail(why)
    character(*), intent(in) :: why
    write (0, '(a)') why
    stop 1
  end subroutine
end program
