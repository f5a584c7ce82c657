// Device-side ICV and environment routines, checked only for what OpenMP 5.2/6.0 guarantees
// (values that must agree with each other), in the sequential part of a target region and in a
// parallel region inside it:
// - omp_set_schedule / omp_get_schedule: run-sched-var is a data-environment ICV, so a value set
//   is read back exactly (dynamic,7; static,5; guided,3; auto), is inherited by the implicit
//   tasks of a parallel region, each thread's own omp_set_schedule stays its own, the sequential
//   part keeps its value after the region, and a schedule(runtime) loop runs every iteration once.
// - omp_set_max_active_levels / omp_get_max_active_levels (in the sequential part, where the
//   binding is defined): 0 and 1 read back exactly, 3 reads back as 1..3; with 0 a parallel
//   region is inactive (one thread), with 1 a nested one is (one thread, active level 1).
// - omp_set_nested / omp_get_nested (deprecated): after omp_set_nested(0) nesting is off and
//   max-active-levels is at most 1; after omp_set_nested(1) omp_get_nested() agrees with
//   omp_get_max_active_levels() > 1.
// - omp_get_proc_bind is one of the omp_proc_bind_t values; places agree with each other:
//   omp_get_place_num() is -1 or below omp_get_num_places(), omp_get_partition_num_places() is at
//   most omp_get_num_places(), omp_get_place_num_procs() of a place number out of range is 0.
// - omp_get_device_from_uid of an unknown UID and of NULL is omp_invalid_device.
// - omp_get_default_device / omp_set_default_device: only linked and round-tripped with the
//   value read (what they mean inside a target region is not specified); the host's default
//   device is the same after the region.
// - omp_pause_resource / omp_pause_resource_all from a GPU return non-zero (failure). Not called
//   on the CPU plugin: there the region runs on a host thread and these are libomp's routines,
//   which really pause the host runtime (LLVM's path returns 0 for the initial device).
// On the CPU plugin the region runs on the encountering host thread with libomp's routines, and
// ICVs set in the region are the host thread's own (omp_set_default_device/omp_set_schedule in a
// target region change the host's values afterwards, with LLVM's runtime too; so does
// omp_set_max_active_levels(0), which then serializes the host's parallel regions), so the
// region restores what it changed before it ends. libomp reports each call of the deprecated
// nested routines on stderr ("OMP: Info #276"); KMP_WARNINGS=0 keeps it quiet.
// ENV: OMP_NUM_THREADS=4
// ENV: KMP_WARNINGS=0
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define NT 4
#define N 97
#define KIND(k) ((int)(k) & ~(int)omp_sched_monotonic) // the kind without a monotonic modifier

typedef struct {
  int sched_kind[4], sched_chunk[4];        // after setting dynamic,7 / static,5 / guided,3 / auto
  int par_inherit_kind, par_inherit_chunk;  // read by each thread of the region (all must agree)
  int par_own_bad;                          // threads whose own omp_set_schedule did not stick
  int seq_after_kind, seq_after_chunk;      // sequential part after the region
  int mal_initial, mal0, mal1, mal3;        // omp_get_max_active_levels after set(0/1/3)
  int par0_threads, par0_active;            // parallel num_threads(4) with max-active-levels 0
  int par1_threads, nested_threads, nested_active, nested_level;
  int nested_off_get, nested_off_mal, nested_on_get, nested_on_mal;
  int proc_bind, num_places, place_num, partition_places, procs_neg, procs_past;
  int uid_garbage, uid_null;
  int dd_before, dd_after;
  int pause_one, pause_all, gpu, ondev;
} res_t;

int main(int argc, char **argv) {
  (void)argv;
  int n = N + (argc > 100);
  res_t r;
  int *rp = (int *)&r;
  for (unsigned i = 0; i < sizeof r / sizeof(int); i++) rp[i] = -99;
  int cnt[N + 1] = {0};
  int host_dd = omp_get_default_device();
  omp_sched_t host_kind;
  int host_chunk;
  omp_get_schedule(&host_kind, &host_chunk);
  int host_mal = omp_get_max_active_levels();

#pragma omp target map(tofrom: r, cnt) firstprivate(n)
  {
    r.ondev = !omp_is_initial_device();
    r.gpu = 0;
#if defined(__NVPTX__) || defined(__AMDGPU__) || defined(__AMDGCN__)
    r.gpu = 1;
#endif
    // what the region found, to restore at its end (the CPU plugin shares them with the host)
    omp_sched_t k0;
    int c0;
    omp_get_schedule(&k0, &c0);
    r.mal_initial = omp_get_max_active_levels();

    // run-sched-var
    static const omp_sched_t kinds[4] = {omp_sched_dynamic, omp_sched_static, omp_sched_guided, omp_sched_auto};
    static const int chunks[4] = {7, 5, 3, 1};
    for (int i = 0; i < 4; i++) {
      omp_sched_t k;
      int c;
      omp_set_schedule(kinds[i], chunks[i] + (n > N)); // n > N is false at run time
      omp_get_schedule(&k, &c);
      r.sched_kind[i] = (int)k;
      r.sched_chunk[i] = c;
    }
    omp_set_schedule(omp_sched_guided, 3);
    int inherit_kind = -1, inherit_chunk = -1, own_bad = 0;
    omp_set_max_active_levels(1);
#pragma omp parallel num_threads(NT) shared(inherit_kind, inherit_chunk, own_bad, cnt)
    {
      int t = omp_get_thread_num();
      omp_sched_t k;
      int c;
      omp_get_schedule(&k, &c);
      if (t == 0) inherit_kind = (int)k, inherit_chunk = c;
#pragma omp barrier
      if ((int)k != inherit_kind || c != inherit_chunk) {
#pragma omp atomic
        own_bad += 1000; // threads disagree on the inherited value
      }
#pragma omp barrier
      omp_set_schedule(omp_sched_dynamic, 10 + t); // each implicit task its own value
#pragma omp barrier
      omp_get_schedule(&k, &c);
      if (KIND(k) != omp_sched_dynamic || c != 10 + t) {
#pragma omp atomic
        own_bad++;
      }
#pragma omp for schedule(runtime)
      for (int i = 0; i < n; i++) {
#pragma omp atomic
        cnt[i]++;
      }
    }
    r.par_inherit_kind = inherit_kind;
    r.par_inherit_chunk = inherit_chunk;
    r.par_own_bad = own_bad;
    {
      omp_sched_t k;
      int c;
      omp_get_schedule(&k, &c);
      r.seq_after_kind = (int)k;
      r.seq_after_chunk = c;
    }

    // nest-var (deprecated) and max-active-levels-var
    omp_set_nested(0);
    r.nested_off_get = omp_get_nested();
    r.nested_off_mal = omp_get_max_active_levels();
    omp_set_nested(1);
    r.nested_on_get = omp_get_nested();
    r.nested_on_mal = omp_get_max_active_levels();
    omp_set_max_active_levels(0);
    r.mal0 = omp_get_max_active_levels();
    int p0n = -1, p0a = -1;
#pragma omp parallel num_threads(NT) shared(p0n, p0a)
    {
      if (omp_get_thread_num() == 0) p0n = omp_get_num_threads(), p0a = omp_get_active_level();
    }
    r.par0_threads = p0n;
    r.par0_active = p0a;
    omp_set_max_active_levels(3);
    r.mal3 = omp_get_max_active_levels();
    omp_set_max_active_levels(1);
    r.mal1 = omp_get_max_active_levels();
    int p1n = -1, nn = -1, na = -1, nl = -1;
#pragma omp parallel num_threads(NT) shared(p1n, nn, na, nl)
    {
      if (omp_get_thread_num() == 0) p1n = omp_get_num_threads();
#pragma omp parallel num_threads(NT) shared(nn, na, nl)
      {
        if (omp_get_ancestor_thread_num(1) == 0 && omp_get_thread_num() == 0)
          nn = omp_get_num_threads(), na = omp_get_active_level(), nl = omp_get_level();
      }
    }
    r.par1_threads = p1n;
    r.nested_threads = nn;
    r.nested_active = na;
    r.nested_level = nl;

    // affinity and places
    r.proc_bind = (int)omp_get_proc_bind();
    r.num_places = omp_get_num_places();
    r.place_num = omp_get_place_num();
    r.partition_places = omp_get_partition_num_places();
    r.procs_neg = omp_get_place_num_procs(-1 - (n > N));
    r.procs_past = omp_get_place_num_procs(r.num_places);

    // device UIDs
    char garbage[16] = "no-such-uid-0";
    garbage[12] = (char)('0' + n % 10);
    r.uid_garbage = omp_get_device_from_uid(garbage);
    r.uid_null = omp_get_device_from_uid(NULL);

    // default-device-var: round trip of the value read
    r.dd_before = omp_get_default_device();
    omp_set_default_device(r.dd_before);
    r.dd_after = omp_get_default_device();

    // pausing from a GPU fails; on the CPU plugin these would pause the host runtime itself
#if defined(__NVPTX__) || defined(__AMDGPU__) || defined(__AMDGCN__)
    r.pause_one = omp_pause_resource(omp_pause_soft, omp_get_device_num());
    r.pause_all = omp_pause_resource_all(omp_pause_soft);
#else
    r.pause_one = r.pause_all = 1;
#endif

    // restore (see the header)
    omp_set_schedule(k0, c0);
    omp_set_max_active_levels(r.mal_initial);
  }

  if (!r.ondev) FAIL("target region ran on the host");
  static const char *kn[4] = {"dynamic", "static", "guided", "auto"};
  static const omp_sched_t kinds[4] = {omp_sched_dynamic, omp_sched_static, omp_sched_guided, omp_sched_auto};
  for (int i = 0; i < 4; i++) {
    if (KIND(r.sched_kind[i]) != (int)kinds[i])
      FAIL("device omp_get_schedule after omp_set_schedule(%s): kind %d, expected %d", kn[i], r.sched_kind[i], (int)kinds[i]);
    int want = (int[]){7, 5, 3}[i < 3 ? i : 0];
    if (i < 3 && r.sched_chunk[i] != want)
      FAIL("device omp_get_schedule after omp_set_schedule(%s, %d): chunk %d", kn[i], want, r.sched_chunk[i]);
  }
  if (KIND(r.par_inherit_kind) != omp_sched_guided || r.par_inherit_chunk != 3)
    FAIL("parallel region did not inherit run-sched-var guided,3 (thread 0 read kind %d chunk %d)", r.par_inherit_kind,
         r.par_inherit_chunk);
  if (r.par_own_bad >= 1000) FAIL("threads of a parallel region read different inherited run-sched-var values");
  if (r.par_own_bad)
    FAIL("%d threads did not read back their own omp_set_schedule(dynamic, 10 + thread) (run-sched-var is per task)", r.par_own_bad);
  if (KIND(r.seq_after_kind) != omp_sched_guided || r.seq_after_chunk != 3)
    FAIL("sequential part after the region: run-sched-var kind %d chunk %d, expected guided,3 (threads' settings leaked)",
         r.seq_after_kind, r.seq_after_chunk);
  for (int i = 0; i <= N; i++)
    if (cnt[i] != (i < n)) FAIL("schedule(runtime) loop: iteration %d ran %d times", i, cnt[i]);

  if (r.nested_off_get != 0) FAIL("omp_get_nested() after omp_set_nested(0) on the device: %d", r.nested_off_get);
  if (r.nested_off_mal < 0 || r.nested_off_mal > 1)
    FAIL("omp_get_max_active_levels() after omp_set_nested(0) on the device: %d, expected 0 or 1", r.nested_off_mal);
  if (r.nested_on_mal < 1 || (r.nested_on_get != 0) != (r.nested_on_mal > 1))
    FAIL("after omp_set_nested(1) on the device: omp_get_nested()=%d but omp_get_max_active_levels()=%d", r.nested_on_get,
         r.nested_on_mal);
  if (r.mal0 != 0) FAIL("omp_get_max_active_levels() after omp_set_max_active_levels(0) on the device: %d", r.mal0);
  if (r.par0_threads != 1 || r.par0_active != 0)
    FAIL("with max-active-levels 0 a parallel region got %d threads, active level %d (expected an inactive region)",
         r.par0_threads, r.par0_active);
  if (r.mal3 < 1 || r.mal3 > 3) FAIL("omp_get_max_active_levels() after omp_set_max_active_levels(3): %d", r.mal3);
  if (r.mal1 != 1) FAIL("omp_get_max_active_levels() after omp_set_max_active_levels(1): %d", r.mal1);
  if (r.par1_threads < 1 || r.par1_threads > NT) FAIL("parallel num_threads(%d) got %d threads", NT, r.par1_threads);
  if (r.nested_threads != 1 || r.nested_level != 2 || r.nested_active != (r.par1_threads > 1))
    FAIL("with max-active-levels 1 a nested region got %d threads, level %d, active level %d", r.nested_threads,
         r.nested_level, r.nested_active);

  if (r.proc_bind < omp_proc_bind_false || r.proc_bind > omp_proc_bind_spread)
    FAIL("device omp_get_proc_bind()=%d is no omp_proc_bind_t value", r.proc_bind);
  if (r.num_places < 0) FAIL("device omp_get_num_places()=%d", r.num_places);
  if (r.place_num != -1 && (r.place_num < 0 || r.place_num >= r.num_places))
    FAIL("device omp_get_place_num()=%d with %d places (expected -1 or a place number)", r.place_num, r.num_places);
  if (r.partition_places < 0 || r.partition_places > r.num_places)
    FAIL("device omp_get_partition_num_places()=%d with %d places", r.partition_places, r.num_places);
  if (r.procs_neg != 0 || r.procs_past != 0)
    FAIL("device omp_get_place_num_procs() of a place out of range: %d (place -1), %d (place %d), expected 0", r.procs_neg,
         r.procs_past, r.num_places);

  if (r.uid_garbage != omp_invalid_device || r.uid_null != omp_invalid_device)
    FAIL("device omp_get_device_from_uid(unknown)=%d, (NULL)=%d, expected omp_invalid_device (%d)", r.uid_garbage,
         r.uid_null, omp_invalid_device);
  if (r.dd_after != r.dd_before)
    FAIL("device omp_set_default_device(%d) then omp_get_default_device()=%d", r.dd_before, r.dd_after);
  if (r.gpu && (r.pause_one == 0 || r.pause_all == 0))
    FAIL("omp_pause_resource/omp_pause_resource_all from the device returned %d/%d, expected non-zero", r.pause_one, r.pause_all);

  // the host's ICVs are what they were
  omp_sched_t hk;
  int hc;
  omp_get_schedule(&hk, &hc);
  if (omp_get_default_device() != host_dd) FAIL("host default device %d after the region, was %d", omp_get_default_device(), host_dd);
  if (hk != host_kind || hc != host_chunk) FAIL("host run-sched-var %d,%d after the region, was %d,%d", (int)hk, hc, (int)host_kind, host_chunk);
  if (omp_get_max_active_levels() != host_mal)
    FAIL("host max-active-levels %d after the region, was %d", omp_get_max_active_levels(), host_mal);
  return 0;
}
