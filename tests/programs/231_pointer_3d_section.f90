! A section of a 3-D POINTER array in target data map(tofrom: p(2:3, 2:4, 3:5)) (issue 34,
! item 5): the kernel changes the section, and after the region exactly the section has
! changed. flang-22 maps the section as its element count (18 doubles, 144 bytes) from
! p(2,2,3) instead of its extent in memory (50 doubles from p(2,2,3) to p(3,4,5)) or its
! strided pieces, so planes k = 4 and 5 are not mapped by the region: with either library the
! kernel's changes to them are lost (LLVM's library at times dies in free()). KNOWN_FAILURES.
program pointer_3d_section
  use omp_lib
  implicit none
  real(8), pointer :: p(:,:,:)
  integer :: i, j, k
  allocate(p(4,5,6))
  do k = 1, 6
    do j = 1, 5
      do i = 1, 4
        p(i,j,k) = i + 10*j + 100*k
      end do
    end do
  end do
  !$omp target data map(tofrom: p(2:3, 2:4, 3:5))
  !$omp target
  do k = 3, 5
    do j = 2, 4
      do i = 2, 3
        p(i,j,k) = -p(i,j,k)
      end do
    end do
  end do
  !$omp end target
  !$omp end target data
  do k = 1, 6
    do j = 1, 5
      do i = 1, 4
        if (i >= 2 .and. i <= 3 .and. j >= 2 .and. j <= 4 .and. k >= 3 .and. k <= 5) then
          if (p(i,j,k) /= -(i + 10*j + 100*k)) call fail('an element of the section did not come back changed')
        else
          if (p(i,j,k) /= i + 10*j + 100*k) call fail('an element outside the section changed')
        end if
      end do
    end do
  end do
contains
  subroutine fail(why)
    character(*), intent(in) :: why
    write (0, '(a)') why
    stop 1
  end subroutine
end program
