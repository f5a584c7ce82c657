! LLVM-REF: fails (host plugin: omp_get_device_num() inside a target region returns the initial-device number)
! omp_lib routines inside target regions: omp_is_initial_device, omp_get_device_num (the
! device clause's number), omp_get_num_teams / omp_get_team_num, omp_get_num_threads /
! omp_get_thread_num in a parallel region, omp_in_parallel, omp_get_level; and on the host
! omp_get_num_devices, omp_get_initial_device, omp_get_default_device.
program omp_lib_on_device
  use omp_lib
  implicit none
  integer :: ndev, dev, teams, team, threads, seen, level, bad
  logical :: initial, in_par
  ndev = omp_get_num_devices()
  if (ndev < 1) call fail('no devices')
  if (omp_get_initial_device() /= ndev) call fail('omp_get_initial_device() is not num_devices')
  if (omp_get_default_device() /= 0) call fail('default device is not 0')
  do dev = 0, min(ndev, 2) - 1
    !$omp target device(dev) map(from: seen, initial, in_par, level)
    seen = omp_get_device_num()
    initial = omp_is_initial_device()
    in_par = omp_in_parallel()
    level = omp_get_level()
    !$omp end target
    if (seen /= dev) call fail('omp_get_device_num() inside target is not the device clause')
    if (initial) call fail('omp_is_initial_device() is true inside target')
    if (in_par) call fail('omp_in_parallel() is true in a target region outside parallel')
    if (level /= 0) call fail('omp_get_level() is not 0 in a target region')
  end do
  !$omp target teams num_teams(1) map(from: teams, team)
  teams = omp_get_num_teams()
  team = omp_get_team_num()
  !$omp end target teams
  if (teams < 1 .or. team /= 0) call fail('omp_get_num_teams / omp_get_team_num in one team')
  bad = 0
  threads = 0
  !$omp target parallel num_threads(3) map(tofrom: bad, threads)
  if (omp_get_thread_num() >= omp_get_num_threads()) then
    !$omp atomic
    bad = bad + 1
  end if
  if (.not. omp_in_parallel() .and. omp_get_num_threads() > 1) then
    !$omp atomic
    bad = bad + 1
  end if
  if (omp_get_level() /= 1) then
    !$omp atomic
    bad = bad + 1
  end if
  !$omp atomic
  threads = threads + 1
  !$omp end target parallel
  if (bad /= 0) call fail('a thread number, omp_in_parallel or omp_get_level is wrong in target parallel')
  if (threads < 1 .or. threads > 3) call fail('target parallel num_threads(3) ran a wrong number of threads')
contains
  subroutine fail(msg)
    character(*), intent(in) :: msg
    write(0, '(a)') msg
    stop 1
  end subroutine
end program
