! Array sections: only the mapped part of an array is copied in and back, with its own
! bounds (a(11:20) is a(11:20) on the device too); a 2-D section of whole columns; target
! update of a section.
program array_sections
  implicit none
  integer :: a(100), b(8, 6), i, j
  do i = 1, 100
    a(i) = i
  end do
  do j = 1, 6
    do i = 1, 8
      b(i, j) = 100 * j + i
    end do
  end do
  !$omp target map(tofrom: a(11:20))
  do i = 11, 20
    a(i) = -a(i)
  end do
  !$omp end target
  do i = 1, 100
    if (i >= 11 .and. i <= 20) then
      if (a(i) /= -i) call fail('a(11:20) did not come back negated')
    else if (a(i) /= i) then
      call fail('an element outside a(11:20) changed')
    end if
  end do
  ! Columns 2..3 only: the device writes them; the other columns keep their host values.
  !$omp target data map(tofrom: b(:, 2:3))
  !$omp target
  do j = 2, 3
    do i = 1, 8
      b(i, j) = b(i, j) + 1000
    end do
  end do
  !$omp end target
  ! The host changes column 2 and pushes rows 1..4 of it only.
  do i = 1, 8
    b(i, 2) = -1
  end do
  !$omp target update to(b(1:4, 2))
  !$omp target
  do i = 1, 8
    b(i, 2) = b(i, 2) * 2
  end do
  !$omp end target
  !$omp end target data
  do j = 1, 6
    do i = 1, 8
      if (j == 2) then
        if (i <= 4 .and. b(i, j) /= -2) call fail('b(1:4,2) did not get the updated -1 doubled')
        if (i > 4 .and. b(i, j) /= 2 * (200 + i + 1000)) call fail('b(5:8,2) is not the device value doubled')
      else if (j == 3) then
        if (b(i, j) /= 300 + i + 1000) call fail('b(:,3) did not come back')
      else if (b(i, j) /= 100 * j + i) then
        call fail('a column outside b(:,2:3) changed')
      end if
    end do
  end do
contains
  subroutine fail(msg)
    character(*), intent(in) :: msg
    write(0, '(a)') msg
    stop 1
  end subroutine
end program
