! Fortran output from a target region, compared with the host: `cargo xtask test` builds this for
! sm_90, runs it on the virtual GPU and with OMP_TARGET_OFFLOAD=disabled (the same statements on
! the host), and wants the two outputs byte for byte equal; for gfx90a it must link. Every item
! kind flang's list-directed and formatted output passes to its runtime, arrays and sections,
! records longer than one host call carries, another unit than standard output, and IOSTAT=.
program device_output
  implicit none
  integer(1) :: i1(3)
  integer(2) :: i2
  integer(8) :: i8
  real(4) :: r4(4)
  real(8) :: r8(600), cube(3, 2, 2)
  complex(4) :: c4
  complex(8) :: c8(2)
  logical(1) :: l1(2)
  logical(8) :: l8
  character(len=5) :: names(3)
  character(len=20) :: fmt
  character(len=80) :: line
  integer :: i, ios, reading, written
  i1 = [int(-128, 1), 0_1, 127_1]
  i2 = -32768_2
  i8 = huge(0_8)
  r4 = [0.1, -0.0, huge(0.0), tiny(0.0)]
  do i = 1, 600
    r8(i) = 1.0d0 / i
  end do
  cube = reshape([(real(i, 8), i = 1, 12)], shape(cube))
  c4 = (1.5, -2.25)
  c8 = [(0.1d0, 1d300), (-3d0, 0d0)]
  l1 = [.true._1, .false._1]
  l8 = .true._8
  names = ['alpha', 'beta ', 'gamma']
  fmt = '(a,3(1x,f6.2))'
  open(newunit=written, file='device_output.written.txt', status='replace', action='write')
  open(newunit=reading, file='device_output.read-only.txt', status='replace', action='read')
  ios = 0
  !$omp target map(to: i1, i2, i8, r4, r8, cube, c4, c8, l1, l8, names, fmt, written, reading) map(from: ios)
  print *, 'integers', i1, i2, i8, -1
  print *, 'reals', r4, 2.5d0, -1d-300
  print *, 'complex', c4, c8
  print *, 'logicals', l1, l8, .false.
  print *, 'characters', names, '', 'x'
  print *, 'a section backwards', cube(3:1:-1, 2, :)
  print *, 'an empty section', cube(2:1, 1, 1), 'end'
  print '(a,i5,1x,i0,1x,z8,1x,b8,1x,o4)', 'edit descriptors', 42, -7, 255, 5, 8
  print '(3(es10.3,1x),/,a,g0,1x,g0)', r8(1:3), 'second record ', 3.5d0, .true.
  print '(*(g0,:,", "))', 'all', 1, 2.0, .false., c4
  print fmt, 'format from a variable', r4(1), 2.0, 3.0
  print *, r8
  print '(a)', repeat('abc', 1500)
  write(written, '(a,i0)') 'to another unit ', 7
  write(reading, '(a)', iostat=ios) 'a unit open for reading'
  !$omp end target
  print '(a,l1)', 'iostat of the refused write is nonzero: ', ios /= 0
  close(written)
  close(reading, status='delete')
  open(newunit=reading, file='device_output.written.txt', status='old', action='read')
  read(reading, '(a)') line
  print '(2a)', 'read back: ', trim(line)
  close(reading, status='delete')
end program
