! A deferred-length allocatable character mapped to the device: its text must arrive with it.
! flang-22 maps the character data of `character(len=:), allocatable :: word` with the size
! `merge(1, 0, allocated(word))`: one byte, not len(word) bytes (read off its host IR). The
! device sees the right length and one byte of text, with either library: KNOWN_FAILURES.
program deferred_length_character
  use omp_lib
  implicit none
  character(len=:), allocatable :: word
  character(len=14) :: copy
  integer :: n
  logical :: on_device
  word = '(a,3(1x,f6.2))'
  n = 0
  copy = ''
  on_device = .false.
  !$omp target map(to: word) map(from: n, copy, on_device)
  on_device = .not. omp_is_initial_device()
  n = len(word)
  copy = word
  !$omp end target
  if (.not. on_device) then
    write(0, '(a)') 'the region did not run on the device'
    stop 1
  end if
  if (n /= 14 .or. copy /= '(a,3(1x,f6.2))') then
    write(0, '(a,i0,3a)') 'the device saw length ', n, ' and text "', copy, '"'
    stop 1
  end if
end program
