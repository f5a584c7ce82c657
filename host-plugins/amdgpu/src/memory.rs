//! Memory: allocations from the agent's pools (device memory coarse-grained, host memory
//! fine-grained and made reachable for the GPU), and copies as `hsa_amd_memory_async_copy`s
//! waited for, the host side locked for the copy or staged through fine-grained memory
//! ([`HostSide`]).

use crate::device::AmdgpuDevice;
use crate::hsa::result as r;
use crate::hsa::sys::*;
use crate::hsa::{failed, released};
use crate::queue::CompletionSignal;
use core::ffi::c_void;
use rustomp_plugin::{AllocKind, ErrorKind, OffloadError, Result};

impl AmdgpuDevice {
    /// [`Backend::alloc`](rustomp_plugin::generic::Backend::alloc): device memory from the
    /// GPU's pool, host and shared memory from the host's fine-grained pool.
    pub(crate) fn allocate(&self, bytes: usize, kind: AllocKind) -> Result<u64> {
        let address = match kind {
            AllocKind::Device => self.pool_allocate(self.props.device_pool, bytes, false),
            // Fine-grained host memory: the GPU may use it directly.
            AllocKind::Host | AllocKind::Shared => {
                self.pool_allocate(self.props.host_pool, bytes, true)
            }
        };
        address.map(|a| a as u64)
    }

    /// [`Backend::free`](rustomp_plugin::generic::Backend::free), of any kind.
    ///
    /// # Safety
    /// `address` came from [`Self::allocate`] and is not used afterwards.
    pub(crate) unsafe fn deallocate(&self, address: u64) -> Result<()> {
        // SAFETY: the caller's contract: `address` came from `alloc`, once.
        unsafe { r::amd_memory_pool_free(self.api, address as *mut c_void) }
            .map_err(failed(ErrorKind::InvalidArgument))
    }

    /// `bytes` (at least 1) from `pool`; with `gpu_access`, host memory the GPU is then
    /// allowed to reach (freed again when that fails).
    pub(crate) fn pool_allocate(
        &self,
        pool: MemoryPool,
        bytes: usize,
        gpu_access: bool,
    ) -> Result<*mut c_void> {
        let api = self.api;
        // SAFETY: a pool of this runtime.
        let address = unsafe { r::amd_memory_pool_allocate(api, pool, bytes.max(1)) }
            .map_err(failed(ErrorKind::OutOfMemory))?;
        if gpu_access {
            let agents = std::slice::from_ref(&self.props.agent);
            // SAFETY: an agent of this runtime; `address` was just allocated from a pool of it.
            let allowed = unsafe { r::amd_agents_allow_access(api, agents, address) };
            if let Err(e) = allowed {
                released("memory the GPU may not use", {
                    // SAFETY: allocated just above, not handed out.
                    unsafe { r::amd_memory_pool_free(api, address) }
                });
                return Err(e.error(ErrorKind::OutOfMemory));
            }
        }
        Ok(address)
    }

    /// [`Backend::copy_to_device`](rustomp_plugin::generic::Backend::copy_to_device).
    ///
    /// # Safety
    /// `host` is readable for `bytes`; `device` is this GPU's memory holding `bytes`.
    pub(crate) unsafe fn copy_host_to_device(
        &self,
        device: u64,
        host: *const u8,
        bytes: usize,
    ) -> Result<()> {
        let (host_side, source) = HostSide::new(self, host as *mut u8, bytes, true)?;
        // SAFETY: the caller's device range; `source` is the host range as the GPU sees it.
        let copied = unsafe {
            self.async_copy(
                device as *mut c_void,
                self.props.agent,
                source,
                self.props.host_agent,
                bytes,
            )
        };
        drop(host_side);
        copied
    }

    /// [`Backend::copy_from_device`](rustomp_plugin::generic::Backend::copy_from_device).
    ///
    /// # Safety
    /// `host` is writable for `bytes`; `device` is this GPU's memory holding `bytes`.
    pub(crate) unsafe fn copy_device_to_host(
        &self,
        host: *mut u8,
        device: u64,
        bytes: usize,
    ) -> Result<()> {
        let (host_side, target) = HostSide::new(self, host, bytes, false)?;
        // SAFETY: the caller's device range; `target` is the host range as the GPU sees it.
        unsafe {
            self.async_copy(
                target,
                self.props.host_agent,
                device as *const c_void,
                self.props.agent,
                bytes,
            )
        }?;
        host_side.deliver();
        Ok(())
    }

    /// [`Backend::copy_within_device`](rustomp_plugin::generic::Backend::copy_within_device).
    ///
    /// # Safety
    /// Both ranges are this GPU's memory holding `bytes`.
    pub(crate) unsafe fn copy_device_to_device(
        &self,
        dst: u64,
        src: u64,
        bytes: usize,
    ) -> Result<()> {
        // SAFETY: the caller's contract: both ranges are this GPU's memory.
        unsafe {
            self.async_copy(
                dst as *mut c_void,
                self.props.agent,
                src as *const c_void,
                self.props.agent,
                bytes,
            )
        }
    }

    /// One `hsa_amd_memory_async_copy`, waited for.
    ///
    /// # Safety
    /// `dst` and `src` are valid for `bytes` for the agents given.
    unsafe fn async_copy(
        &self,
        dst: *mut c_void,
        dst_agent: Agent,
        src: *const c_void,
        src_agent: Agent,
        bytes: usize,
    ) -> Result<()> {
        let api = self.api;
        let signal = CompletionSignal::new(api).map_err(failed(ErrorKind::TransferFailed))?;
        let timed = self.times_copy();
        // SAFETY: the caller's ranges, valid until the wait below ends; the signal lives until then.
        unsafe {
            r::amd_memory_async_copy(api, dst, dst_agent, src, src_agent, bytes, signal.signal)
        }
        .map_err(failed(ErrorKind::TransferFailed))?;
        self.wait(signal.signal, None)
            .map_err(|why| OffloadError::new(ErrorKind::TransferFailed, why))?;
        if timed {
            self.copy_timed(signal.signal);
        }
        Ok(())
    }
}

impl AmdgpuDevice {
    /// Where the GPU reaches `bytes` at `host` if the runtime has all of them pinned already
    /// (`hsa_amd_pointer_info`: a locked range, or an allocation of a host pool).
    pub(crate) fn pinned_already(&self, host: *mut u8, bytes: usize) -> Option<*mut c_void> {
        let info = r::amd_pointer_info(self.api, host as u64).ok()?;
        let pinned = matches!(info.kind, pointer_type::LOCKED | pointer_type::HSA);
        let base = info.host_base_address as usize;
        let inside = base != 0
            && (host as usize) >= base
            && (host as usize + bytes) <= base + info.size_in_bytes;
        (pinned && inside && !info.agent_base_address.is_null()).then(|| {
            info.agent_base_address
                .wrapping_byte_add(host as usize - base)
        })
    }
}

/// Host memory as the copy engine reaches it for one copy: used as it is where the runtime has
/// it pinned already (locked by the user or through `lock_host`, or allocated from one of its
/// host pools), else locked for the duration of the copy, or staged when the runtime cannot
/// lock it.
struct HostSide<'a> {
    device: &'a AmdgpuDevice,
    locked: Option<*mut c_void>,
    staging: Option<(*mut c_void, *mut u8, usize)>,
}

impl<'a> HostSide<'a> {
    /// `host` for `bytes`; `fill` copies the user's bytes into a staging buffer first.
    fn new(
        device: &'a AmdgpuDevice,
        host: *mut u8,
        bytes: usize,
        fill: bool,
    ) -> Result<(Self, *mut c_void)> {
        let unchanged = Self {
            device,
            locked: None,
            staging: None,
        };
        if let Some(agent_address) = device.pinned_already(host, bytes) {
            return Ok((unchanged, agent_address));
        }
        let mut agents = [device.props.agent];
        // SAFETY: `host` is the caller's live range of `bytes`; the lock is undone in `drop`.
        match unsafe { r::amd_memory_lock(device.api, host as *mut c_void, bytes, &mut agents) } {
            Ok(agent_address) => {
                let locked = Self {
                    device,
                    locked: Some(host as *mut c_void),
                    staging: None,
                };
                if !agent_address.is_null() {
                    return Ok((locked, agent_address));
                }
                // No address for the GPU: unlocked again (by `drop`) and staged instead.
            }
            // Memory the runtime cannot lock is staged instead.
            Err(e) => rustomp_plugin::diag::debug(
                "amdgpu",
                format_args!("staging host memory instead: {e}"),
            ),
        }
        let buffer = device.allocate(bytes, AllocKind::Host)? as *mut c_void;
        if fill {
            // SAFETY: `buffer` is fresh host memory of `bytes`; `host` is readable for `bytes`.
            unsafe { std::ptr::copy_nonoverlapping(host, buffer as *mut u8, bytes) };
        }
        Ok((
            Self {
                device,
                locked: None,
                staging: Some((buffer, host, bytes)),
            },
            buffer,
        ))
    }

    /// Copies a staging buffer back to the user's memory (device-to-host copies).
    fn deliver(&self) {
        if let Some((buffer, host, bytes)) = self.staging {
            // SAFETY: the copy into `buffer` finished; `host` is writable for `bytes`.
            unsafe { std::ptr::copy_nonoverlapping(buffer as *const u8, host, bytes) };
        }
    }
}

impl Drop for HostSide<'_> {
    fn drop(&mut self) {
        let api = self.device.api;
        if let Some(host) = self.locked {
            released("locked host memory", {
                // SAFETY: locked in `new`; the copy using it has finished.
                unsafe { r::amd_memory_unlock(api, host) }
            });
        }
        if let Some((buffer, _, _)) = self.staging {
            released("a staging buffer", {
                // SAFETY: allocated in `new` from the host pool; the copy using it has finished.
                unsafe { r::amd_memory_pool_free(api, buffer) }
            });
        }
    }
}
