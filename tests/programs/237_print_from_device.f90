! EXPECT-ORDER: list 42 -1234567890123 2.5 1.2345679E+08 T device   (1.,-2.)
! EXPECT-ORDER: formatted 42    2.500   1.5000E-03 F
! EXPECT-ORDER: row 2: 21 22 23 24
! EXPECT-ORDER: every other column: 11 21 31 13 23 33
! EXPECT-ORDER: flags T F T
! EXPECT-STDERR: team 0 thread 0 ========================================
! EXPECT-STDERR: team 0 thread 1 ========================================
! Fortran print and write from a target region (issue 34's GPU part): on a GPU the device
! records each statement and the host replays it into the program's flang runtime, so every
! line below is flang's own text, whole. Threads of two teams each print a line of their own;
! no line may be cut by another's.
program print_from_device
  use omp_lib
  implicit none
  integer :: m(3, 4), i, j, ios
  logical :: flags(3), on_device
  integer(8) :: big
  character(len=8) :: word
  do j = 1, 4
    do i = 1, 3
      m(i, j) = 10 * i + j
    end do
  end do
  flags = [.true., .false., .true.]
  big = -1234567890123_8
  word = 'device'
  on_device = .false.
  ios = -1
  !$omp target map(to: m, flags, big, word) map(from: on_device, ios)
  on_device = .not. omp_is_initial_device()
  print *, 'list', 42, big, 2.5d0, 1.2345679e8, .true., word, (1.0, -2.0)
  write(*, '(a,i0,1x,f8.3,1x,es12.4,1x,l1)', iostat=ios) 'formatted ', 42, 2.5d0, 1.5e-3, .false.
  print *, 'row 2:', m(2, :)
  print *, 'every other column:', m(:, 1:4:2)
  print *, 'flags', flags
  !$omp end target
  if (.not. on_device) then
    write(0, '(a)') 'the region did not run on the device'
    stop 1
  end if
  if (ios /= 0) then
    write(0, '(a,i0)') 'a write on the device returned iostat ', ios
    stop 1
  end if
  !$omp target teams num_teams(2) thread_limit(4)
  !$omp parallel num_threads(4)
  print '(a,i0,a,i0,1x,a)', 'team ', omp_get_team_num(), ' thread ', omp_get_thread_num(), &
    repeat('=', 40)
  !$omp end parallel
  !$omp end target teams
end program
