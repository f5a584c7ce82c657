! Derived types: a whole variable of a type with scalar and array components mapped tofrom,
! single components mapped alone (the rest of the variable stays the host's), and an array of
! derived-type elements.
program derived_types
  implicit none
  type :: particle
    real(8) :: x, v
    integer :: id
  end type
  type :: grid
    integer :: n
    real(8) :: cells(16)
    integer :: tag
  end type
  type(grid) :: g
  type(particle) :: ps(100)
  integer :: i
  g%n = 16
  g%cells = 1
  g%tag = 7
  !$omp target map(tofrom: g)
  do i = 1, g%n
    g%cells(i) = g%cells(i) + i
  end do
  g%tag = g%tag * 2
  !$omp end target
  if (g%tag /= 14) call fail('g%tag did not come back doubled')
  do i = 1, 16
    if (g%cells(i) /= 1 + i) call fail('g%cells did not come back as 1+i')
  end do
  ! One component: the device changes only it; tag keeps its host value.
  g%tag = 1
  !$omp target map(tofrom: g%cells)
  do i = 1, 16
    g%cells(i) = -g%cells(i)
  end do
  !$omp end target
  if (g%cells(16) /= -17 .or. g%tag /= 1) call fail('mapping g%cells alone')
  do i = 1, 100
    ps(i)%x = i
    ps(i)%v = 0.5d0
    ps(i)%id = i
  end do
  !$omp target teams distribute parallel do map(tofrom: ps)
  do i = 1, 100
    ps(i)%x = ps(i)%x + 2 * ps(i)%v
    ps(i)%id = -ps(i)%id
  end do
  do i = 1, 100
    if (ps(i)%x /= i + 1 .or. ps(i)%id /= -i) call fail('an array of particles did not come back moved')
  end do
contains
  subroutine fail(msg)
    character(*), intent(in) :: msg
    write(0, '(a)') msg
    stop 1
  end subroutine
end program
