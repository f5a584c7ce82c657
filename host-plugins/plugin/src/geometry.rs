//! Launch geometry: how many teams (blocks, workgroups) and threads a kernel launch gets,
//! computed from the device's grid values, the kernel's environment and the construct's clauses
//! the way LLVM 22's generic plugin layer does, so programs see the same team and thread counts
//! as with LLVM. Every GPU backend uses it, parameterized by its warp or wavefront size and its
//! limits.
//!
//! Defaults are LLVM's grid values (`llvm/Frontend/OpenMP/OMPGridValues.h`): NVPTX 128 threads
//! per team and 3200 teams, AMDGPU 256 threads per team (its default teams come from the
//! compute-unit count, see the AMDGPU plugin); at most 1024 threads per team; a generic-mode
//! kernel given a thread limit gets one more warp for its main thread.

use crate::LaunchConfig;
use rustomp_abi::exec_mode;

/// The device's grid values after initialization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceGrid {
    pub warp_size: u32,
    /// Most threads in a team (`GV_Max_WG_Size`, the device's block limit, `OMP_TEAMS_THREAD_LIMIT`).
    pub max_threads: u32,
    /// Most teams in a launch (`GV_Max_Teams`: the device's grid limit, `OMP_NUM_TEAMS`).
    pub max_teams: u32,
    /// Threads when nothing asks for a number (`GV_Default_WG_Size`).
    pub default_threads: u32,
    /// Teams when nothing asks for a number (`GV_Default_Num_Teams`).
    pub default_teams: u32,
    /// Fewest threads per team for a short combined loop
    /// (`LIBOMPTARGET_MIN_THREADS_FOR_LOW_TRIP_COUNT`, 32).
    pub min_threads_low_tripcount: u32,
    /// Cap the teams of a long loop at `default_teams` and let them take several iterations
    /// (`LIBOMPTARGET_REUSE_BLOCKS_FOR_HIGH_TRIP_COUNT`, on).
    pub reuse_blocks_for_high_tripcount: bool,
}

/// A target family's grid values (`GV` of `OMPGridValues.h`, the fields the launch uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GridValues {
    pub warp_size: u32,
    pub max_threads: u32,
    pub default_threads: u32,
    pub default_teams: u32,
}

/// `NVPTXGridValues`.
pub const NVPTX_GRID_VALUES: GridValues = GridValues {
    warp_size: 32,
    max_threads: 1024,
    default_threads: 128,
    default_teams: 3200,
};
/// `AMDGPUGridValues64` (`AMDGPUGridValues32` differs only in the wavefront size).
pub const AMDGPU_GRID_VALUES: GridValues = GridValues {
    warp_size: 64,
    max_threads: 1024,
    default_threads: 256,
    default_teams: 440,
};

impl DeviceGrid {
    /// The grid of a device: the family's `values` within the device's limits (most threads in
    /// a block, most blocks in a launch), capped by `teams_cap` / `threads_cap`
    /// (`OMP_NUM_TEAMS` / `OMP_TEAMS_THREAD_LIMIT`) when set (> 0).
    pub fn new(
        values: GridValues,
        max_block_threads: u32,
        max_grid_teams: u32,
        teams_cap: u32,
        threads_cap: u32,
    ) -> Self {
        let cap = |v: u32, c: u32| if c > 0 { v.min(c) } else { v };
        DeviceGrid {
            warp_size: values.warp_size.max(1),
            max_threads: cap(max_block_threads.clamp(1, values.max_threads), threads_cap),
            max_teams: cap(max_grid_teams.max(1), teams_cap),
            default_threads: values.default_threads,
            default_teams: values.default_teams,
            min_threads_low_tripcount: 32,
            reuse_blocks_for_high_tripcount: true,
        }
    }

    /// NVPTX grid values for a device with these limits (see [`DeviceGrid::new`]).
    pub fn nvptx(
        max_block_dim_x: u32,
        max_grid_dim_x: u32,
        warp_size: u32,
        teams_cap: u32,
        threads_cap: u32,
    ) -> Self {
        let values = GridValues {
            warp_size,
            ..NVPTX_GRID_VALUES
        };
        Self::new(
            values,
            max_block_dim_x,
            max_grid_dim_x,
            teams_cap,
            threads_cap,
        )
    }
}

/// What the kernel itself says about its launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelShape {
    /// `ConfigurationEnvironment::exec_mode` (`exec_mode::*`).
    pub exec_mode: u8,
    /// `MinThreads` / `MaxThreads` of the configuration (0 or less: unset).
    pub min_threads: i32,
    pub max_threads: i32,
    /// The compiled function's limit (registers, `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`,
    /// the AMDGPU kernel's `max_flat_workgroup_size`).
    pub function_max_threads: u32,
}

/// Blocks and threads of one launch (x; y and z are 1 except for `ompx_bare` kernels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub blocks: u32,
    pub threads: u32,
    pub blocks_yz: [u32; 2],
    pub threads_yz: [u32; 2],
}

/// The execution-mode name LLVM prints in its launch info.
pub fn mode_name(mode: u8) -> &'static str {
    match mode {
        exec_mode::BARE => "BARE",
        exec_mode::GENERIC => "Generic",
        exec_mode::SPMD => "SPMD",
        exec_mode::GENERIC_SPMD => "Generic-SPMD",
        exec_mode::SPMD_NO_LOOP => "SPMD-No-Loop",
        _ => "Unknown",
    }
}

fn div_ceil(a: u64, b: u64) -> u64 {
    a.div_ceil(b.max(1))
}

/// The geometry of a launch of `kernel` on `grid` for the construct's `request`.
pub fn compute(grid: &DeviceGrid, kernel: &KernelShape, request: &LaunchConfig) -> Geometry {
    let function_max = kernel.function_max_threads.max(1);
    if kernel.exec_mode == exec_mode::BARE {
        // ompx_bare: the clauses are the geometry, in up to three dimensions; the block as a
        // whole stays within the function's limit.
        let threads = request.thread_limit.clamp(1, function_max);
        let [ty, tz] = request.threads_yz.map(|t| t.max(1));
        let ty = ty.min(function_max / threads).max(1);
        let tz = tz.min(function_max / (threads * ty)).max(1);
        return Geometry {
            blocks: request.num_teams.max(1),
            threads,
            blocks_yz: request.teams_yz.map(|b| b.max(1)),
            threads_yz: [ty, tz],
        };
    }

    // Per-kernel bounds, fixed at the first launch.
    let mut max_threads = grid.max_threads;
    if kernel.max_threads > 0 {
        max_threads = max_threads.min(kernel.max_threads as u32);
    }
    max_threads = max_threads.min(function_max).max(1);
    let preferred_threads = if kernel.min_threads > 0 {
        (kernel.min_threads as u32).max(grid.default_threads)
    } else {
        grid.default_threads
    };

    // Threads: the thread_limit clause (plus a warp for the generic-mode main thread) or the
    // preferred count, never above the kernel's maximum.
    let user_threads = request.thread_limit > 0;
    let mut limit = request.thread_limit;
    if user_threads && kernel.exec_mode == exec_mode::GENERIC {
        limit = limit.saturating_add(grid.warp_size);
    }
    let mut threads = max_threads.min(if user_threads {
        limit
    } else {
        preferred_threads
    });

    // Blocks: the num_teams clause, else enough for the loop, else the default.
    let blocks = if request.num_teams > 0 {
        u64::from(request.num_teams).min(u64::from(grid.max_teams))
    } else if kernel.exec_mode == exec_mode::SPMD_NO_LOOP {
        let needed = if request.tripcount > 0 {
            div_ceil(request.tripcount, u64::from(threads))
        } else {
            1
        };
        needed.min(u64::from(grid.max_teams))
    } else {
        let default_blocks = u64::from(grid.default_teams);
        let trip = request.tripcount;
        let mut trip_blocks = u64::MAX;
        if trip > 0 {
            if kernel.exec_mode == exec_mode::SPMD {
                // A combined `teams distribute parallel for`: one iteration per thread; a short
                // loop gets fewer threads per team so that more teams share it.
                let min_threads = grid.min_threads_low_tripcount.min(threads).max(1);
                if trip >= default_blocks * u64::from(threads) || user_threads {
                    trip_blocks = div_ceil(trip, u64::from(threads));
                } else if trip >= default_blocks * u64::from(min_threads) {
                    let per_block = div_ceil(trip, default_blocks).next_power_of_two();
                    threads = threads.min(per_block.min(u64::from(u32::MAX)) as u32);
                    trip_blocks = div_ceil(trip, u64::from(threads));
                } else {
                    threads = threads.min(min_threads);
                    trip_blocks = div_ceil(trip, u64::from(threads));
                }
            } else {
                // `teams distribute` with a nested parallel region: one iteration per team.
                trip_blocks = trip;
            }
        }
        let preferred = if grid.reuse_blocks_for_high_tripcount {
            trip_blocks.min(default_blocks)
        } else {
            trip_blocks
        };
        preferred.min(u64::from(grid.max_teams))
    };
    Geometry {
        blocks: (blocks as u32).max(1),
        threads: threads.max(1),
        blocks_yz: [1, 1],
        threads_yz: [1, 1],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustomp_abi::exec_mode::*;

    fn h100() -> DeviceGrid {
        DeviceGrid::nvptx(1024, i32::MAX as u32, 32, 0, 0)
    }

    fn shape(mode: u8) -> KernelShape {
        KernelShape {
            exec_mode: mode,
            min_threads: 0,
            max_threads: 0,
            function_max_threads: 1024,
        }
    }

    fn request(num_teams: u32, thread_limit: u32, tripcount: u64) -> LaunchConfig {
        LaunchConfig {
            num_teams,
            thread_limit,
            tripcount,
            ..Default::default()
        }
    }

    fn geometry(mode: u8, num_teams: u32, thread_limit: u32, tripcount: u64) -> (u32, u32) {
        let g = compute(
            &h100(),
            &shape(mode),
            &request(num_teams, thread_limit, tripcount),
        );
        (g.blocks, g.threads)
    }

    #[test]
    fn defaults_are_llvm_nvptx_grid_values() {
        // No clause, no loop: 3200 teams of 128 threads, in either mode.
        assert_eq!(geometry(SPMD, 0, 0, 0), (3200, 128));
        assert_eq!(geometry(GENERIC, 0, 0, 0), (3200, 128));
        // A plain `target` (clang passes one team).
        assert_eq!(geometry(GENERIC, 1, 0, 0), (1, 128));
    }

    #[test]
    fn generic_mode_adds_a_warp_for_the_main_thread() {
        assert_eq!(geometry(GENERIC, 4, 64, 0), (4, 96));
        assert_eq!(geometry(SPMD, 4, 64, 0), (4, 64));
        assert_eq!(geometry(GENERIC_SPMD, 4, 64, 0), (4, 64));
        // Never above the device limit, even with the extra warp.
        assert_eq!(geometry(GENERIC, 1, 1024, 0), (1, 1024));
    }

    #[test]
    fn clauses_are_clamped_to_device_and_kernel_limits() {
        assert_eq!(geometry(SPMD, 8, 4096, 0), (8, 1024));
        let grid = DeviceGrid::nvptx(1024, 65535, 32, 100, 256);
        let g = compute(&grid, &shape(SPMD), &request(1000, 512, 0));
        assert_eq!(
            (g.blocks, g.threads),
            (100, 256),
            "OMP_NUM_TEAMS / OMP_TEAMS_THREAD_LIMIT caps"
        );
        let tight = KernelShape {
            function_max_threads: 255,
            ..shape(SPMD)
        };
        assert_eq!(compute(&h100(), &tight, &request(2, 0, 0)).threads, 128);
        assert_eq!(
            compute(&h100(), &tight, &request(2, 512, 0)).threads,
            255,
            "register-limited kernel"
        );
        let configured = KernelShape {
            max_threads: 64,
            ..shape(SPMD)
        };
        assert_eq!(compute(&h100(), &configured, &request(2, 0, 0)).threads, 64);
        let min_configured = KernelShape {
            min_threads: 256,
            ..shape(SPMD)
        };
        assert_eq!(
            compute(&h100(), &min_configured, &request(2, 0, 0)).threads,
            256
        );
    }

    #[test]
    fn spmd_loops_spread_over_teams_like_llvm() {
        // LLVM's low-trip-count test: 128 iterations -> 4 teams of 32 threads.
        assert_eq!(geometry(SPMD, 0, 0, 128), (4, 32));
        // Enough iterations for the default teams at the default threads: capped at 3200 teams.
        assert_eq!(geometry(SPMD, 0, 0, 10_000_000), (3200, 128));
        // In between: threads shrink to a power of two so that 3200 teams get work.
        // 200 000 / 3200 = 62.5 -> 64 threads, 3125 teams.
        assert_eq!(geometry(SPMD, 0, 0, 200_000), (3125, 64));
        // A user thread limit is honoured: teams cover the loop at that width.
        assert_eq!(geometry(SPMD, 0, 64, 1000), (16, 64));
        // Generic `teams distribute`: one iteration per team.
        assert_eq!(geometry(GENERIC, 0, 0, 77), (77, 128));
        assert_eq!(geometry(GENERIC_SPMD, 0, 0, 5000), (3200, 128));
    }

    #[test]
    fn no_loop_and_bare_modes() {
        assert_eq!(geometry(SPMD_NO_LOOP, 0, 0, 1000), (8, 128));
        assert_eq!(geometry(SPMD_NO_LOOP, 0, 0, 0), (1, 128));
        assert_eq!(geometry(BARE, 3, 7, 0), (3, 7));
        assert_eq!(geometry(BARE, 0, 0, 0), (1, 1));
        // ompx_bare in three dimensions; a block larger than the function allows is cut.
        let grid = h100();
        let bare3 = LaunchConfig {
            num_teams: 2,
            thread_limit: 4,
            teams_yz: [3, 0],
            threads_yz: [2, 2],
            ..Default::default()
        };
        let g = compute(&grid, &shape(BARE), &bare3);
        assert_eq!(
            (g.blocks, g.blocks_yz, g.threads, g.threads_yz),
            (2, [3, 1], 4, [2, 2])
        );
        let huge = LaunchConfig {
            num_teams: 1,
            thread_limit: 512,
            threads_yz: [4, 4],
            ..Default::default()
        };
        let g = compute(&grid, &shape(BARE), &huge);
        assert!(
            g.threads * g.threads_yz[0] * g.threads_yz[1] <= 1024,
            "{g:?}"
        );
    }

    #[test]
    fn amdgpu_grid_values() {
        // An MI210: 104 compute units, 4 teams each by default (the AMDGPU plugin's choice).
        let grid = DeviceGrid::new(
            GridValues {
                default_teams: 416,
                ..AMDGPU_GRID_VALUES
            },
            1024,
            u32::MAX,
            0,
            0,
        );
        let g = compute(&grid, &shape(GENERIC), &request(0, 0, 0));
        assert_eq!((g.blocks, g.threads), (416, 256));
        // The generic-mode main thread gets a whole wavefront.
        let g = compute(&grid, &shape(GENERIC), &request(1, 64, 0));
        assert_eq!(g.threads, 128);
        let g = compute(&grid, &shape(SPMD), &request(0, 0, 1 << 20));
        assert_eq!((g.blocks, g.threads), (416, 256));
    }

    #[test]
    fn names() {
        assert_eq!(mode_name(SPMD), "SPMD");
        assert_eq!(mode_name(GENERIC), "Generic");
        assert_eq!(mode_name(42), "Unknown");
    }
}
