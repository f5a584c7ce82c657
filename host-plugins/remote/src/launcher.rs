//! Whether this process was started by an MPI launcher with proxies, decided from the
//! environment alone, before anything loads MPI.
//!
//! The application must not pay for MPI when it runs without it, and an MPI application run
//! without proxies (`mpirun -np 4 ./app`, which calls `MPI_Init` itself) must not find MPI
//! already initialized by its offload runtime. So the plugin initializes MPI only when:
//!
//! - `RUSTOMP_REMOTE=1` (any launcher), or
//! - Open MPI's launcher started several application contexts (`mpirun -np N rustomp-proxy :
//!   -np 1 ./app`: `OMPI_NUM_APP_CTX` ≥ 2) and this process is the last rank of the job, the
//!   application's place.
//!
//! `RUSTOMP_REMOTE=0` turns the plugin off. Other launchers (MPICH's Hydra, Slurm's PMI) say
//! nothing about application contexts: with them the plugin needs `RUSTOMP_REMOTE=1`.

/// The launcher's verdict: proxies expected, or why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    /// Start MPI: this is the application's rank of a job with `ranks` processes (when known).
    WithProxies,
    /// No MPI for this process, and why (the plugin's `unavailable_reason`).
    Without(String),
}

/// Reads the variables through `var` (the environment in the plugin, a table in tests).
pub fn detect(var: impl Fn(&str) -> Option<String>) -> Launch {
    match var("RUSTOMP_REMOTE").as_deref() {
        Some("0") => return Launch::Without("RUSTOMP_REMOTE=0 turns remote offload off".into()),
        Some("1") => return Launch::WithProxies,
        _ => {}
    }
    let number = |name: &str| var(name).and_then(|v| v.trim().parse::<i64>().ok());
    if let Some(size) = number("OMPI_COMM_WORLD_SIZE") {
        let rank = number("OMPI_COMM_WORLD_RANK").unwrap_or(0);
        let contexts = number("OMPI_NUM_APP_CTX").unwrap_or(1);
        if contexts < 2 {
            return Launch::Without(format!(
                "started by mpirun with one program for all {size} ranks, no rustomp-proxy (run `mpirun -np N rustomp-proxy : -np 1 ./app`)"
            ));
        }
        if rank != size - 1 {
            return Launch::Without(format!(
                "this process is rank {rank} of {size}; the application runs as the last rank (`mpirun -np N rustomp-proxy : -np 1 ./app`)"
            ));
        }
        return Launch::WithProxies;
    }
    for name in ["PMI_SIZE", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"] {
        if var(name).is_some() {
            return Launch::Without(format!(
                "started by an MPI launcher ({name} is set) that does not say whether rustomp-proxy ranks run beside the application: set RUSTOMP_REMOTE=1 when they do"
            ));
        }
    }
    Launch::Without(
        "not started by an MPI launcher (run `mpirun -np N rustomp-proxy : -np 1 ./app`)".into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)]) -> Launch {
        detect(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn only_the_last_rank_of_a_multi_program_job_starts_mpi() {
        let ompi = |rank: &'static str, contexts: &'static str| {
            with(&[
                ("OMPI_COMM_WORLD_SIZE", "3"),
                ("OMPI_COMM_WORLD_RANK", rank),
                ("OMPI_NUM_APP_CTX", contexts),
            ])
        };
        assert_eq!(ompi("2", "2"), Launch::WithProxies);
        assert!(matches!(ompi("1", "2"), Launch::Without(why) if why.contains("rank 1 of 3")));
        // An MPI program run alone calls MPI_Init itself: leave MPI to it.
        assert!(matches!(ompi("2", "1"), Launch::Without(why) if why.contains("no rustomp-proxy")));
        assert!(
            matches!(with(&[]), Launch::Without(why) if why.contains("not started by an MPI launcher"))
        );
        assert!(
            matches!(with(&[("PMI_SIZE", "2")]), Launch::Without(why) if why.contains("RUSTOMP_REMOTE=1"))
        );
        assert_eq!(
            with(&[("PMI_SIZE", "2"), ("RUSTOMP_REMOTE", "1")]),
            Launch::WithProxies
        );
        assert!(matches!(
            with(&[
                ("OMPI_COMM_WORLD_SIZE", "2"),
                ("OMPI_NUM_APP_CTX", "2"),
                ("OMPI_COMM_WORLD_RANK", "1"),
                ("RUSTOMP_REMOTE", "0")
            ]),
            Launch::Without(_)
        ));
    }
}
