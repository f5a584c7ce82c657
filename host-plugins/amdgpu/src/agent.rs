//! Discovery: the GPU agents the runtime lists, each with the host agent and the memory pools
//! the plugin allocates from, its ISA as a target id, and what the generic layer needs to know of
//! it ([`AgentProps::info`]).

use crate::hsa::result as r;
use crate::hsa::sys::*;
use crate::hsa::{self, HsaResult};
use rustomp_plugin::generic::DeviceInfo;
use rustomp_plugin::geometry::{GridValues, AMDGPU_GRID_VALUES};
use rustomp_plugin::image::TargetId;

/// Teams per compute unit by default (`LIBOMPTARGET_AMDGPU_TEAMS_PER_CU`, as LLVM).
const DEFAULT_TEAMS_PER_CU: u64 = 4;

/// A GPU agent and the pools the plugin uses, found when the runtime initializes.
#[derive(Debug, Clone)]
pub struct AgentProps {
    pub agent: Agent,
    /// The host agent that owns `host_pool` and `kernarg_pool`.
    pub host_agent: Agent,
    /// `gfx90a` and the like (`HSA_AGENT_INFO_NAME`).
    pub name: String,
    /// The marketing name, e.g. "AMD Instinct MI210".
    pub product: String,
    /// The agent's ISA as a target id (`gfx90a:sramecc+:xnack-`).
    pub target: TargetId,
    pub wavefront_size: u32,
    pub max_workgroup_size: u32,
    pub max_grid_size: u32,
    pub compute_units: u32,
    pub max_waves_per_cu: u32,
    pub queue_max_size: u32,
    pub device_pool: MemoryPool,
    pub device_memory: usize,
    pub host_pool: MemoryPool,
    pub kernarg_pool: MemoryPool,
    pub timestamp_frequency: u64,
    pub runtime_version: (u16, u16),
}

fn agent_info<T: Default>(api: &Api, agent: Agent, attribute: u32) -> HsaResult<T> {
    // SAFETY: an agent the runtime listed; callers pass the type each attribute documents
    // (hsa.h, hsa_ext_amd.h).
    unsafe { r::agent_get_info(api, agent, attribute) }
}

fn pool_info<T: Default>(api: &Api, pool: MemoryPool, attribute: u32) -> HsaResult<T> {
    // SAFETY: a pool the runtime listed; callers pass the type each attribute documents.
    unsafe { r::amd_memory_pool_get_info(api, pool, attribute) }
}

fn system_info<T: Default>(api: &Api, attribute: u32) -> HsaResult<T> {
    // SAFETY: callers pass the type each attribute documents (hsa.h).
    unsafe { r::system_get_info(api, attribute) }
}

/// A pool's facts that decide what it is used for.
struct PoolFacts {
    pool: MemoryPool,
    global: bool,
    flags: u32,
    allocatable: bool,
    size: usize,
}

fn pools(api: &Api, agent: Agent) -> HsaResult<Vec<PoolFacts>> {
    // SAFETY: an agent the runtime listed.
    let pools = unsafe { r::amd_agent_iterate_memory_pools(api, agent) }?;
    pools
        .into_iter()
        .map(|pool| {
            Ok(PoolFacts {
                pool,
                global: pool_info::<u32>(api, pool, pool_info::SEGMENT)? == segment::GLOBAL,
                flags: pool_info::<u32>(api, pool, pool_info::GLOBAL_FLAGS)?,
                allocatable: pool_info::<u8>(api, pool, pool_info::RUNTIME_ALLOC_ALLOWED)? != 0,
                size: pool_info::<usize>(api, pool, pool_info::SIZE)?,
            })
        })
        .collect()
}

/// The first global pool of `pools` the runtime allocates from with all of `flags` set.
fn pool_with(pools: &[PoolFacts], flags: u32) -> Option<&PoolFacts> {
    pools
        .iter()
        .find(|p| p.global && p.allocatable && p.flags & flags == flags)
}

/// The agent's first ISA name (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`).
fn isa_name(api: &Api, agent: Agent) -> HsaResult<String> {
    // SAFETY: an agent the runtime listed.
    let isas = unsafe { r::agent_iterate_isas(api, agent) }?;
    let Some(&isa) = isas.first() else {
        return Ok(String::new());
    };
    // SAFETY: an ISA the runtime listed.
    unsafe { r::isa_get_name(api, isa) }
}

/// Every GPU agent that can run kernels, with the host pools it is served from.
pub fn discover(api: &Api) -> HsaResult<Vec<AgentProps>> {
    let agents = r::iterate_agents(api)?;
    let mut hosts = Vec::new();
    let mut gpus = Vec::new();
    for agent in agents {
        match agent_info::<u32>(api, agent, agent_info::DEVICE)? {
            device_type::CPU => hosts.push(agent),
            device_type::GPU
                if agent_info::<u32>(api, agent, agent_info::FEATURE)?
                    & agent_feature::KERNEL_DISPATCH
                    != 0 =>
            {
                gpus.push(agent)
            }
            _ => {}
        }
    }
    // The host pools: fine-grained memory, and the part of it kernel arguments live in.
    let mut host = None;
    for &agent in &hosts {
        let pools = pools(api, agent)?;
        if let (Some(fine), Some(kernarg)) = (
            pool_with(&pools, global_flag::FINE_GRAINED),
            pool_with(
                &pools,
                global_flag::FINE_GRAINED | global_flag::KERNARG_INIT,
            ),
        ) {
            host = Some((agent, fine.pool, kernarg.pool));
            break;
        }
    }
    let Some((host_agent, host_pool, kernarg_pool)) = host else {
        return Ok(Vec::new());
    };
    let timestamp_frequency = system_info::<u64>(api, system_info::TIMESTAMP_FREQUENCY)?;
    let runtime_version = (
        system_info::<u16>(api, system_info::VERSION_MAJOR)?,
        system_info::<u16>(api, system_info::VERSION_MINOR)?,
    );
    let mut found = Vec::new();
    for agent in gpus {
        let pools = pools(api, agent)?;
        let Some(device_pool) = pool_with(&pools, global_flag::COARSE_GRAINED) else {
            continue;
        };
        let name = hsa::name_of(&agent_info::<hsa::FixedName>(api, agent, agent_info::NAME)?.0);
        let isa = isa_name(api, agent)?;
        let target = TargetId::of_agent(&isa)
            .or_else(|| TargetId::of_agent(&name))
            .unwrap_or(TargetId {
                processor: name.clone(),
                xnack: rustomp_plugin::image::FeatureSetting::Unsupported,
                sramecc: rustomp_plugin::image::FeatureSetting::Unsupported,
            });
        let workgroup_max: [u16; 3] = agent_info(api, agent, agent_info::WORKGROUP_MAX_DIM)?;
        let grid_max: [u32; 3] = agent_info(api, agent, agent_info::GRID_MAX_DIM)?;
        found.push(AgentProps {
            agent,
            host_agent,
            product: hsa::name_of(
                &agent_info::<hsa::FixedName>(api, agent, amd_agent_info::PRODUCT_NAME)?.0,
            ),
            name,
            target,
            wavefront_size: agent_info(api, agent, agent_info::WAVEFRONT_SIZE)?,
            max_workgroup_size: u32::from(workgroup_max[0]),
            max_grid_size: grid_max[0],
            compute_units: agent_info(api, agent, amd_agent_info::COMPUTE_UNIT_COUNT)?,
            max_waves_per_cu: agent_info(api, agent, amd_agent_info::MAX_WAVES_PER_CU)?,
            queue_max_size: agent_info(api, agent, agent_info::QUEUE_MAX_SIZE)?,
            device_pool: device_pool.pool,
            device_memory: device_pool.size,
            host_pool,
            kernarg_pool,
            timestamp_frequency,
            runtime_version,
        });
    }
    Ok(found)
}

impl AgentProps {
    /// What the generic layer needs of the GPU (LLVM's AMDGPU grid values for its wavefront).
    pub fn info(&self) -> DeviceInfo {
        let teams_per_cu = rustomp_plugin::diag::env_u64("LIBOMPTARGET_AMDGPU_TEAMS_PER_CU")
            .filter(|&n| n > 0)
            .unwrap_or(DEFAULT_TEAMS_PER_CU);
        let default_teams =
            (u64::from(self.compute_units.max(1)) * teams_per_cu).min(u64::from(u32::MAX)) as u32;
        let max_block_threads = self.max_workgroup_size.max(1);
        DeviceInfo {
            name: if self.product.is_empty() {
                self.name.clone()
            } else {
                self.product.clone()
            },
            arch: self.target.to_string(),
            grid_values: GridValues {
                warp_size: self.wavefront_size.max(1),
                default_teams,
                ..AMDGPU_GRID_VALUES
            },
            max_block_threads,
            max_grid_teams: (self.max_grid_size / max_block_threads).max(1),
            hardware_parallelism: u64::from(self.compute_units) * u64::from(self.max_waves_per_cu),
            clock_frequency: self.timestamp_frequency,
            total_memory: self.device_memory,
        }
    }
}
