//! The only place target intrinsics appear. Each backend offers the same set of functions; the
//! rest of the runtime calls them through this module, so the same algorithms compile for
//! nvptx64, amdgcn and the host emulation used by `cargo test`.
//!
//! Traps worth remembering:
//! - `team_barrier` is a full meeting of every thread of the team *and* orders memory at team
//!   scope; `team_fence` only orders memory and never waits.
//! - `team_shared` is the same memory for all threads of one team and different for each team;
//!   ordinary statics are device-global (shared by all teams).

#[cfg(target_arch = "nvptx64")]
mod nvptx;
#[cfg(target_arch = "nvptx64")]
pub use nvptx::*;

#[cfg(target_arch = "amdgpu")]
mod amdgcn;
#[cfg(target_arch = "amdgpu")]
pub use amdgcn::*;

/// A device-scope fence: `core::sync::atomic::fence` itself on a GPU; the host emulation's also
/// shows ThreadSanitizer the synchronization (see `host::fence`).
#[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
pub use core::sync::atomic::fence;

#[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
mod vgpu_marks;
#[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
pub use vgpu_marks::*;

#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
pub mod host;
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
pub use host::*;

/// Bytes of team-shared memory the runtime reserves per team (the `.ll` files use this value).
pub const TEAM_SHARED_BYTES: usize = 8192;
