//! Loop worksharing: `__kmpc_for_static_init_*`, `__kmpc_distribute_static_init_*` and the
//! `__kmpc_dispatch_*` family (dynamic, guided; other schedules run dynamically with their chunk).
//!
//! The arithmetic is done once, on `i128`, for every width and signedness: bounds are inclusive
//! (`for (i = lb; i <= ub; i += incr)` for positive `incr`, `>=` for negative), and every result
//! converts back with the caller's wrap-around.
//!
//! Files: [`static_init`] (`__kmpc_for_static_init_*`, `__kmpc_distribute_static_init_*`),
//! [`dispatch`] (`__kmpc_dispatch_*`), [`loop_api`] (OpenMPIRBuilder's static loops),
//! [`doacross`] (`__kmpc_doacross_*`). The loop state a dispatch shares is the team's
//! (`state::DispatchState`); the schedule arithmetic is `crate::schedule`'s.

pub mod dispatch;
pub mod doacross;
pub mod loop_api;
pub mod static_init;

pub use crate::schedule::{sched, trip_count};
pub use dispatch::*;
pub use doacross::*;
pub use loop_api::*;
pub use static_init::*;
