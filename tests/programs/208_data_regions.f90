! Data regions: target data keeps arrays mapped across regions (a nested map does not copy
! again: reference counts), target enter data / exit data with to, alloc, from, release and
! delete, and target update in both directions.
program data_regions
  implicit none
  integer :: a(64), b(64), c(64), i
  a = 1
  b = 0
  !$omp target data map(to: a) map(from: b)
  a = 2          ! host only: the device keeps 1
  !$omp target map(tofrom: a)   ! already present: no copy in, no copy out
  do i = 1, 64
    b(i) = a(i) + 10
    a(i) = 7
  end do
  !$omp end target
  if (any(a /= 2)) call fail('a nested map(tofrom:) of a present array copied back')
  !$omp target update from(a)
  if (any(a /= 7)) call fail('target update from(a) did not bring the device value')
  a = 5
  !$omp target update to(a)
  !$omp target
  do i = 1, 64
    b(i) = b(i) + a(i)
  end do
  !$omp end target
  !$omp end target data
  if (any(b /= 16)) call fail('b after the data region is not 1 + 10 + 5')
  ! enter/exit data: alloc, then fill on the device, then from.
  !$omp target enter data map(alloc: c)
  !$omp target
  do i = 1, 64
    c(i) = -i
  end do
  !$omp end target
  !$omp target exit data map(from: c)
  do i = 1, 64
    if (c(i) /= -i) call fail('c from exit data is not -i')
  end do
  ! Two references: the first release keeps the data, delete removes it.
  c = 3
  !$omp target enter data map(to: c)
  !$omp target enter data map(to: c)
  c = 4
  !$omp target exit data map(release: c)
  !$omp target map(from: i)
  i = c(1)
  !$omp end target
  if (i /= 3) call fail('c was copied again while still mapped')
  !$omp target exit data map(delete: c)
  !$omp target map(from: i)
  i = c(1)
  !$omp end target
  if (i /= 4) call fail('c after delete was not mapped anew from the host')
contains
  subroutine fail(msg)
    character(*), intent(in) :: msg
    write(0, '(a)') msg
    stop 1
  end subroutine
end program
