! Target regions inside procedures, on dummy arguments: explicit-shape, assumed-shape (a
! contiguous section of the caller's array: mapping a non-contiguous one is unspecified, and
! flang-22 maps size(a) elements from its first) and assumed-size arrays, and a pointer array.
module kernels
  implicit none
contains
  subroutine scale_explicit(a, n, f)
    integer, intent(in) :: n
    real(8), intent(inout) :: a(n)
    real(8), intent(in) :: f
    integer :: i
    !$omp target teams distribute parallel do map(tofrom: a)
    do i = 1, n
      a(i) = a(i) * f
    end do
  end subroutine

  subroutine add_assumed_shape(a, v)
    real(8), intent(inout) :: a(:)
    real(8), intent(in) :: v
    integer :: i
    !$omp target teams distribute parallel do map(tofrom: a)
    do i = 1, size(a)
      a(i) = a(i) + v
    end do
  end subroutine

  subroutine negate_assumed_size(a, n)
    integer, intent(in) :: n
    real(8), intent(inout) :: a(*)
    integer :: i
    !$omp target map(tofrom: a(1:n))
    do i = 1, n
      a(i) = -a(i)
    end do
    !$omp end target
  end subroutine
end module

program procedure_dummies
  use kernels
  implicit none
  real(8), target :: x(40)
  real(8), pointer :: p(:)
  real(8) :: expected
  integer :: i
  do i = 1, 40
    x(i) = i
  end do
  call scale_explicit(x, 40, 2.0d0)
  call add_assumed_shape(x(11:20), 1000.0d0)
  call negate_assumed_size(x(31), 10)
  do i = 1, 40
    expected = 2 * i
    if (i >= 11 .and. i <= 20) expected = expected + 1000
    if (i > 30) expected = -expected
    if (x(i) /= expected) then
      if (i > 30) call fail('the assumed-size section x(31:40) was not negated')
      if (i >= 11 .and. i <= 20) call fail('an element of the assumed-shape x(11:20) did not get +1000')
      call fail('an element outside the sections changed')
    end if
  end do
  p => x(1:10)
  !$omp target map(tofrom: p)
  do i = 1, 10
    p(i) = 7
  end do
  !$omp end target
  if (any(x(1:10) /= 7)) call fail('writes through a pointer array did not reach its target')
contains
  subroutine fail(msg)
    character(*), intent(in) :: msg
    write(0, '(a)') msg
    stop 1
  end subroutine
end program
