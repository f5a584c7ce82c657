//! Remote offload over MPI: the devices of other nodes as OpenMP devices.
//!
//! A program started as `mpirun -np N rustomp-proxy : -np 1 ./app` runs as the last rank; each
//! other rank is a `rustomp-proxy` (`host-plugins/proxy`) that drives its node's ordinary
//! plugins (CPU, CUDA, AMDGPU) on the application's behalf. This crate is both sides' common
//! ground and the application's plugin:
//!
//! - [`wire`]: the messages and their checked encoding (the fuzz target decodes with it);
//! - [`mpi`]: MPI loaded at run time through `librustomp-mpi.so` (`shim/rustomp_mpi.c`), thread
//!   levels, requests with deadlines;
//! - [`launcher`]: whether this process should start MPI at all (from the environment);
//! - [`link`]: requests, replies and bulk data with bounded waits, rank liveness, images
//!   shipped once per rank, the orderly end;
//! - [`connection`], [`plugin`], [`device`]: the front's `Plugin` / `Device` / `LoadedImage`
//!   over it, the remote devices numbered after the local ones, rank by rank.
//!
//! Without an MPI launcher the plugin has no devices and says why; the library never links
//! libmpi, so programs that do not use it pay nothing.

pub mod connection;
pub mod device;
pub mod hash;
pub mod launcher;
pub mod link;
pub mod mpi;
pub mod plugin;
pub mod wire;

pub use device::RemoteDevice;
pub use plugin::RemotePlugin;
