// (a) Dynamic shared memory: target teams ... ompx_dyn_cgroup_mem(N); the pointer from
// llvm_omp_target_dynamic_shared_alloc() must be the same for every thread of a team (and for
// the sequential part of a generic kernel and its parallel region), hold N usable bytes, and be
// private to the team (two teams write different values at once). On a CPU device it may be NULL:
// LLVM's host offloading has no dynamic shared memory (the x86_64 image's call resolves to
// libomptarget's host function, which returns NULL; LLVM's own dynamic_shared_memory test is
// unsupported on x86_64), so NULL is accepted only there.
// (b) ompx_bare kernels: 3-D num_teams(2,3,1) thread_limit(4,2,2) and 1-D num_teams(3)
// thread_limit(32), where every thread computes a linear index from ompx_thread_id_*,
// ompx_block_id_*, ompx_block_dim_* and ompx_grid_dim_* and writes its cell exactly once, then
// ompx_sync_block and a read of a block neighbour's cell. On a CPU device clang runs a bare
// kernel as a plain teams region (one thread per team, only the first num_teams value) and
// ompx.h's CPU fallbacks answer thread id -1, block id 0, grid dim 1, block dim -1, so there the
// program checks only that each team ran the body once on the device.
// ENV: KMP_TEAMS_THREAD_LIMIT=256
// ENV: OMP_NUM_THREADS=64
#include <omp.h>
#include <ompx.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define TEAMS 2
#define NT 64
#define DYN 1024
#define PER (DYN / sizeof(int) / NT) // ints per thread: 4

// 3-D bare geometry
#define GX 2
#define GY 3
#define GZ 1
#define BX 4
#define BY 2
#define BZ 2
#define CELLS3 (GX * GY * GZ * BX * BY * BZ)
// 1-D bare geometry
#define G1 3
#define B1 32
#define CELLS1 (G1 * B1)

int main(void) {
  // ---------------- (a) dynamic shared memory, teams + parallel ----------------
  int gpu = -1, ondev = 0, nteams = -1, tsize[TEAMS] = {-1, -1};
  int null_ptr[TEAMS] = {-1, -1}, same_ptr_bad[TEAMS] = {0, 0}, bad[TEAMS] = {0, 0}, first_bad[TEAMS][3];
  unsigned long team_ptr[TEAMS] = {0, 0};
  for (int k = 0; k < TEAMS; k++) first_bad[k][0] = first_bad[k][1] = first_bad[k][2] = -1;
#pragma omp target teams num_teams(TEAMS) thread_limit(NT) ompx_dyn_cgroup_mem(DYN) \
    map(tofrom: gpu, ondev, nteams, tsize, null_ptr, same_ptr_bad, bad, first_bad, team_ptr)
  {
    int team = omp_get_team_num();
    if (team == 0) {
      nteams = omp_get_num_teams();
      ondev = !omp_is_initial_device();
      gpu = 0;
#if defined(__NVPTX__) || defined(__AMDGPU__) || defined(__AMDGCN__)
      gpu = 1;
#endif
    }
    int *base = (int *)llvm_omp_target_dynamic_shared_alloc(); // the team's sequential part
    if (team < TEAMS) {
      null_ptr[team] = base == NULL;
      team_ptr[team] = (unsigned long)base;
    }
#pragma omp parallel num_threads(NT)
    {
      int t = omp_get_thread_num(), n = omp_get_num_threads();
      int *p = (int *)llvm_omp_target_dynamic_shared_alloc();
      if (t == 0 && team < TEAMS) tsize[team] = n;
      if (p != base && team < TEAMS) {
#pragma omp atomic write
        same_ptr_bad[team] = 1;
      }
      if (p && team < TEAMS) {
        // each thread owns PER ints (whole buffer covered when n == NT)
        for (int r = 0; r < 3; r++) {
          for (int k = 0; k < PER; k++) p[t * PER + k] = 100000 * team + 1000 * r + t * PER + k;
#pragma omp barrier
          int nb = (t + 1) % n;
          for (int k = 0; k < PER; k++) {
            int want = 100000 * team + 1000 * r + nb * PER + k, got = p[nb * PER + k];
            if (got != want) {
              int old;
#pragma omp atomic capture
              old = bad[team]++;
              if (old == 0) first_bad[team][0] = r, first_bad[team][1] = want, first_bad[team][2] = got;
            }
          }
#pragma omp barrier
        }
      }
    }
  }
  if (!ondev) FAIL("dynamic shared memory region ran on the host");
  if (nteams < 1 || nteams > TEAMS || (gpu && nteams != TEAMS)) FAIL("num_teams(%d) gave %d teams", TEAMS, nteams);
  for (int k = 0; k < nteams; k++) {
    if (gpu ? tsize[k] != NT : (tsize[k] < 1 || tsize[k] > NT))
      FAIL("dyn shared: team %d parallel num_threads(%d) got %d threads", k, NT, tsize[k]);
    if (null_ptr[k] && gpu) FAIL("dyn shared: llvm_omp_target_dynamic_shared_alloc() returned NULL on a GPU (team %d)", k);
    if (same_ptr_bad[k]) FAIL("dyn shared: team %d threads got different pointers (sequential part %#lx)", k, team_ptr[k]);
    if (bad[k])
      FAIL("dyn shared: team %d: %d wrong values read back; first in round %d: expected %d, got %d", k, bad[k],
           first_bad[k][0], first_bad[k][1], first_bad[k][2]);
  }

  // Generic kernel: the sequential part writes the buffer, the parallel region reads it and
  // writes back, the sequential part checks after the region.
  int gen_runs = 0, gen_null = 0, gen_bad = 0, gen_seq_bad = 0, gen_nteams = -1;
#pragma omp target teams num_teams(TEAMS) ompx_dyn_cgroup_mem(256) \
    map(tofrom: gen_runs, gen_null, gen_bad, gen_seq_bad, gen_nteams)
  {
    int team = omp_get_team_num();
    if (team == 0) gen_nteams = omp_get_num_teams();
    int *p = (int *)llvm_omp_target_dynamic_shared_alloc();
    int nbad = 0, seq_bad = 0;
    if (p)
      for (int i = 0; i < 64; i++) p[i] = 7 * i + 1000 * team;
#pragma omp parallel num_threads(16) shared(nbad)
    {
      int t = omp_get_thread_num(), n = omp_get_num_threads();
      int *q = (int *)llvm_omp_target_dynamic_shared_alloc();
      if (q != p) {
#pragma omp atomic
        nbad++;
      }
      if (q && q == p) {
        for (int i = t; i < 64; i += n)
          if (q[i] != 7 * i + 1000 * team) {
#pragma omp atomic
            nbad++;
          }
      }
#pragma omp barrier
      if (q && q == p)
        for (int i = t; i < 64; i += n) q[i] = -3 * i - 1000 * team;
    }
    if (p)
      for (int i = 0; i < 64; i++)
        if (p[i] != -3 * i - 1000 * team) seq_bad++;
#pragma omp atomic
    gen_runs++;
#pragma omp atomic
    gen_null += p == NULL;
#pragma omp atomic
    gen_bad += nbad;
#pragma omp atomic
    gen_seq_bad += seq_bad;
  }
  if (gen_nteams < 1 || gen_nteams > TEAMS || (gpu && gen_nteams != TEAMS) || gen_runs != gen_nteams)
    FAIL("generic dyn shared kernel: %d teams ran, omp_get_num_teams()=%d", gen_runs, gen_nteams);
  if (gen_null && gpu) FAIL("generic dyn shared kernel: NULL pointer on a GPU (%d teams)", gen_null);
  if (gen_bad) FAIL("generic dyn shared kernel: %d wrong pointers or values seen by the parallel regions", gen_bad);
  if (gen_seq_bad) FAIL("generic dyn shared kernel: the sequential parts saw %d stale values after the region", gen_seq_bad);

  // ---------------- (b) ompx_bare, 3-D ----------------
  static int cnt3[CELLS3], ids3[CELLS3][6], nbr3[CELLS3];
  int dims3[6] = {-1, -1, -1, -1, -1, -1}, bare_runs = 0, bare_host = 0;
  for (int i = 0; i < CELLS3; i++) cnt3[i] = 0, nbr3[i] = -1;
#pragma omp target teams ompx_bare num_teams(GX, GY, GZ) thread_limit(BX, BY, BZ) \
    map(tofrom: cnt3, ids3, nbr3, dims3, bare_runs, bare_host)
  {
    // Host and device code must use the same variables (tests/programs/README.md): each branch
    // below uses only some, so the kernel's parameters would not match what the host passes.
    (void)cnt3, (void)ids3, (void)nbr3, (void)dims3, (void)bare_runs, (void)bare_host;
#ifdef __OMPX_TARGET_IS_GPU
    int tx = ompx_thread_id_x(), ty = ompx_thread_id_y(), tz = ompx_thread_id_z();
    int bx = ompx_block_id_x(), by = ompx_block_id_y(), bz = ompx_block_id_z();
    int dx = ompx_block_dim_x(), dy = ompx_block_dim_y(), dz = ompx_block_dim_z();
    int gx = ompx_grid_dim_x(), gy = ompx_grid_dim_y(), gz = ompx_grid_dim_z();
    int block = (bz * gy + by) * gx + bx, local = (tz * dy + ty) * dx + tx, bsize = dx * dy * dz;
    int idx = block * bsize + local;
    if (block == 0 && local == 0) {
      dims3[0] = dx, dims3[1] = dy, dims3[2] = dz, dims3[3] = gx, dims3[4] = gy, dims3[5] = gz;
      bare_runs = -1; // marks the GPU path
    }
    if (idx >= 0 && idx < CELLS3) {
      __atomic_fetch_add(&cnt3[idx], 1, __ATOMIC_RELAXED);
      ids3[idx][0] = tx, ids3[idx][1] = ty, ids3[idx][2] = tz, ids3[idx][3] = bx, ids3[idx][4] = by, ids3[idx][5] = bz;
    }
    ompx_sync_block_acq_rel();
    // read the next thread of the same block: its cell was written before the block barrier
    int nb = block * bsize + (local + 1) % bsize;
    if (idx >= 0 && idx < CELLS3 && nb >= 0 && nb < CELLS3) nbr3[idx] = cnt3[nb] == 1 ? ids3[nb][0] + 10 * ids3[nb][1] + 100 * ids3[nb][2] : -2;
#else
    // CPU device: a plain teams region (see the header comment)
#pragma omp atomic
    bare_runs++;
    if (omp_is_initial_device()) bare_host = 1;
#endif
  }
  if (bare_runs == -1) { // GPU
    if (dims3[0] != BX || dims3[1] != BY || dims3[2] != BZ || dims3[3] != GX || dims3[4] != GY || dims3[5] != GZ)
      FAIL("bare 3-D: block dim %dx%dx%d grid dim %dx%dx%d, expected %dx%dx%d and %dx%dx%d", dims3[0], dims3[1], dims3[2],
           dims3[3], dims3[4], dims3[5], BX, BY, BZ, GX, GY, GZ);
    for (int i = 0; i < CELLS3; i++) {
      int local = i % (BX * BY * BZ), block = i / (BX * BY * BZ);
      int tx = local % BX, ty = local / BX % BY, tz = local / (BX * BY);
      int bx = block % GX, by = block / GX % GY, bz = block / (GX * GY);
      if (cnt3[i] != 1) FAIL("bare 3-D: cell %d written %d times", i, cnt3[i]);
      if (ids3[i][0] != tx || ids3[i][1] != ty || ids3[i][2] != tz || ids3[i][3] != bx || ids3[i][4] != by || ids3[i][5] != bz)
        FAIL("bare 3-D: cell %d written by thread (%d,%d,%d) block (%d,%d,%d), expected (%d,%d,%d) (%d,%d,%d)", i,
             ids3[i][0], ids3[i][1], ids3[i][2], ids3[i][3], ids3[i][4], ids3[i][5], tx, ty, tz, bx, by, bz);
      int nl = (local + 1) % (BX * BY * BZ);
      int want = nl % BX + 10 * (nl / BX % BY) + 100 * (nl / (BX * BY));
      if (nbr3[i] != want) FAIL("bare 3-D: cell %d read its block neighbour as %d after ompx_sync_block, expected %d", i, nbr3[i], want);
    }
  } else {
    if (gpu) FAIL("bare 3-D: the GPU path did not run on a GPU device");
    if (bare_host) FAIL("bare 3-D: ran on the host");
    if (bare_runs < 1 || bare_runs > GX * GY * GZ) FAIL("bare 3-D on a CPU device: body ran %d times", bare_runs);
  }

  // ---------------- (b) ompx_bare, 1-D ----------------
  static int cnt1[CELLS1], who1[CELLS1];
  int dims1[2] = {-1, -1}, runs1 = 0, host1 = 0;
  for (int i = 0; i < CELLS1; i++) cnt1[i] = 0, who1[i] = -1;
#pragma omp target teams ompx_bare num_teams(G1) thread_limit(B1) map(tofrom: cnt1, who1, dims1, runs1, host1)
  {
    (void)cnt1, (void)who1, (void)dims1, (void)runs1, (void)host1; // as above
#ifdef __OMPX_TARGET_IS_GPU
    int tx = ompx_thread_id_x(), bx = ompx_block_id_x(), dx = ompx_block_dim_x();
    int idx = bx * dx + tx;
    if (idx == 0) dims1[0] = dx, dims1[1] = ompx_grid_dim_x(), runs1 = -1;
    if (idx >= 0 && idx < CELLS1) {
      __atomic_fetch_add(&cnt1[idx], 1, __ATOMIC_RELAXED);
      who1[idx] = bx * 1000 + tx;
    }
#else
#pragma omp atomic
    runs1++;
    if (omp_is_initial_device()) host1 = 1;
#endif
  }
  if (runs1 == -1) {
    if (dims1[0] != B1 || dims1[1] != G1) FAIL("bare 1-D: block dim %d grid dim %d, expected %d %d", dims1[0], dims1[1], B1, G1);
    for (int i = 0; i < CELLS1; i++) {
      if (cnt1[i] != 1) FAIL("bare 1-D: cell %d written %d times", i, cnt1[i]);
      if (who1[i] != (i / B1) * 1000 + i % B1)
        FAIL("bare 1-D: cell %d written by block %d thread %d", i, who1[i] / 1000, who1[i] % 1000);
    }
  } else {
    if (gpu) FAIL("bare 1-D: the GPU path did not run on a GPU device");
    if (host1) FAIL("bare 1-D: ran on the host");
    if (runs1 < 1 || runs1 > G1) FAIL("bare 1-D on a CPU device: body ran %d times", runs1);
  }
  return 0;
}
