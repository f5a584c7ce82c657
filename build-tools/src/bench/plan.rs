//! What the benchmarks run: the groups and their programs, the two columns (our library and
//! LLVM's, or the example's two lookups), and the rows and failures the runs produce.

use crate::paths::{dist_lib, LLVM_LIB};
use std::time::Duration;

/// One run's time limit.
pub(super) const TIMEOUT: Duration = Duration::from_secs(300);
/// A ratio this far from 1 (10 %) in the worse direction is flagged `slower`.
pub(super) const FLAG_MARGIN: f64 = 1.10;

/// How one of a group's two columns runs the program.
pub(super) struct Variant {
    pub(super) label: &'static str,
    /// Arguments before the mode (`quick` / `full`).
    pub(super) args: Vec<String>,
    pub(super) env: Vec<(String, String)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A C program offloaded to the CPU plugin, run against ours and LLVM's library.
    Host,
    /// The Rust example `devicertl/examples/<name>.rs`, `translate` against `std`.
    Example,
    /// C programs for sm_90 linked with `bench/cuda_raw.c`, ours against LLVM's.
    Gpu,
}

pub(super) struct Group {
    pub(super) id: &'static str,
    pub(super) title: &'static str,
    pub(super) kind: Kind,
    /// Sources under bench/ (C) or the example's name.
    pub(super) programs: &'static [&'static str],
    /// Each program also runs once more per entry with this variable set (its rows say so).
    pub(super) also_with: &'static [(&'static str, &'static str)],
}

pub(super) const GROUPS: [Group; 6] = [
    Group {
        id: "overhead",
        title: "1. host overhead per target region (CPU plugin)",
        kind: Kind::Host,
        programs: &["overhead.c"],
        also_with: &[],
    },
    Group {
        id: "mapping",
        title: "2. mapping at scale (CPU plugin)",
        kind: Kind::Host,
        programs: &["mapping.c"],
        also_with: &[],
    },
    Group {
        id: "threads",
        title: "3. host threads issuing target regions concurrently (CPU plugin)",
        kind: Kind::Host,
        programs: &["threads.c"],
        also_with: &[],
    },
    Group {
        id: "nowait",
        title: "4. nowait throughput (CPU plugin)",
        kind: Kind::Host,
        programs: &["nowait.c"],
        // Without libomp's hidden helper threads the target tasks run on the team's threads.
        also_with: &[("LIBOMP_USE_HIDDEN_HELPER_TASK", "0")],
    },
    Group {
        id: "indirect",
        title: "5. device-side indirect-call lookup (devicertl host emulation; reference: std binary_search_by_key, not LLVM)",
        kind: Kind::Example,
        programs: &["indirect_bench"],
        also_with: &[],
    },
    Group {
        id: "gpu",
        title: "6. GPU (NVIDIA sm_90; raw CUDA driver rows are the ceiling)",
        kind: Kind::Gpu,
        programs: &["gpu.c", "gpu_reduce.c", "gpu_indirect.c"],
        also_with: &[],
    },
];

/// One measurement's values over the runs, per column.
#[derive(Debug, Default, Clone)]
pub(super) struct Row {
    pub(super) name: String,
    pub(super) unit: String,
    pub(super) values: [Vec<f64>; 2],
    /// The round of each value (a round runs every column once): pairs for `paired_ratio`.
    pub(super) rounds: [Vec<usize>; 2],
}

/// A failed run: which column, and why.
pub(super) struct Failure {
    pub(super) column: usize,
    pub(super) program: String,
    pub(super) why: String,
}

/// The groups to run and the measurement filter for the programs (when the filter names no group).
pub(super) fn select(filter: Option<&str>) -> (Vec<&'static Group>, Option<String>) {
    match filter {
        None => (GROUPS.iter().collect(), None),
        Some(f) => {
            let named: Vec<&Group> = GROUPS.iter().filter(|g| g.id == f).collect();
            if named.is_empty() {
                (GROUPS.iter().collect(), Some(f.to_string()))
            } else {
                (named, None)
            }
        }
    }
}

/// ours (dist/lib) and, when installed, LLVM's library.
pub(super) fn library_variants(llvm: bool) -> Vec<Variant> {
    let mut v = vec![Variant {
        label: "ours",
        args: vec![],
        env: vec![("LD_LIBRARY_PATH".into(), dist_lib().display().to_string())],
    }];
    if llvm {
        v.push(Variant {
            label: "LLVM",
            args: vec![],
            env: vec![("LD_LIBRARY_PATH".into(), LLVM_LIB.into())],
        });
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_names_a_group_or_measurements() {
        let (g, f) = select(Some("mapping"));
        assert_eq!(g.len(), 1);
        assert!(f.is_none());
        let (g, f) = select(Some("scalars"));
        assert_eq!(g.len(), GROUPS.len());
        assert_eq!(f.as_deref(), Some("scalars"));
    }
}
