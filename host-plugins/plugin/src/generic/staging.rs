//! Copies of pageable host memory at pinned speed.
//!
//! A GPU's DMA engines read and write only pinned (page-locked) host memory; a driver handed a
//! pageable buffer copies it through a small bounce buffer of its own, one piece at a time,
//! at a fraction of the link's speed (an H200: 6-7 GB/s for `cuMemcpyHtoD` of a pageable
//! buffer). For a large copy the generic layer does the staging itself, as a pipeline:
//!
//! - host to device: `FILLERS` host threads copy successive chunks of the user's buffer into a
//!   ring of pinned buffers while the calling thread hands the filled buffers to the backend
//!   ([`Backend::copy_pieces`], which keeps two copies in flight), and gives each back to the
//!   fillers once its copy has finished;
//! - device to host: the calling thread has the backend copy chunks from the device into free
//!   pinned buffers (two in flight) while `FILLERS` threads copy the finished ones out into the
//!   user's buffer.
//!
//! So the host-side copies (several threads) overlap the DMA, the copy engine always has the
//! next chunk queued, and the DMA always reads or writes pinned memory. Copies below
//! [`THRESHOLD`], copies of memory that is pinned already (what the device allocated as host
//! memory, what the user locked through `llvm_omp_target_lock_mem`, or what the driver says is
//! pinned) take the direct path. The buffers are made at the first large copy and kept for
//! the device's life; concurrent large copies each take their own set.

use super::shared::{Allocation, DeviceCore};
use super::{locked, Backend, Direction, StagedPiece};
use crate::{AllocKind, ErrorKind, OffloadError, Result};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};

/// Copies of at least this many bytes of pageable memory are staged.
pub const THRESHOLD: usize = 1 << 20;
/// The size of each pinned buffer, and the largest chunk.
const BUFFER_BYTES: usize = 8 << 20;
/// The smallest chunk: smaller pieces would cost more in per-copy overhead than they overlap.
const MIN_CHUNK: usize = 256 << 10;

/// Host threads that copy between the user's buffer and the pinned ring.
fn fillers() -> usize {
    std::thread::available_parallelism()
        .map_or(2, |n| n.get().saturating_sub(1))
        .clamp(1, 4)
}

/// Why a range of host memory is pinned for the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pinned {
    /// The device allocated it as host memory (`AllocKind::Host`).
    Allocated,
    /// The user locked it (`lock_host`) this many times more than unlocked it; the device
    /// reaches its start at `device`.
    Locked { count: u32, device: u64 },
}

/// A device's pinned buffers and its record of host memory that is pinned already.
pub struct Staging<B: Backend> {
    /// Free buffers; a staged copy takes a ring of them and gives it back.
    free: Mutex<Vec<Allocation<B>>>,
    /// Host memory pinned for this device: start -> (length, why).
    pinned: Mutex<BTreeMap<u64, (usize, Pinned)>>,
}

impl<B: Backend> Default for Staging<B> {
    fn default() -> Self {
        Self {
            free: Mutex::new(Vec::new()),
            pinned: Mutex::new(BTreeMap::new()),
        }
    }
}

impl<B: Backend> Staging<B> {
    /// Records host memory the device allocated pinned.
    pub fn pinned_allocated(&self, address: u64, bytes: usize) {
        locked(&self.pinned).insert(address, (bytes, Pinned::Allocated));
    }

    pub fn pinned_freed(&self, address: u64) {
        locked(&self.pinned).remove(&address);
    }

    /// Whether a copy of `bytes` at `host` goes through the pinned ring: a large one of memory
    /// this device has no record of as pinned (the caller asks the driver too).
    pub fn wanted(&self, host: u64, bytes: usize) -> bool {
        bytes >= THRESHOLD && containing(&locked(&self.pinned), host, bytes).is_none()
    }

    /// Locks `bytes` at `host` for the device (`lock` does the driver's part) unless they are
    /// pinned already: a range inside a locked one counts as one more lock of it, a range
    /// inside host memory the device allocated needs none. Returns the device's address.
    pub fn lock(&self, host: u64, bytes: usize, lock: impl FnOnce() -> Result<u64>) -> Result<u64> {
        let mut pinned = locked(&self.pinned);
        if let Some(start) = containing(&pinned, host, bytes) {
            return Ok(match pinned.get_mut(&start) {
                Some((_, Pinned::Locked { count, device })) => {
                    *count += 1;
                    *device + (host - start)
                }
                _ => host,
            });
        }
        let end = host + bytes.max(1) as u64;
        let overlapped = pinned
            .range(..end)
            .next_back()
            .filter(|(&start, &(length, _))| start + length as u64 > host);
        if let Some((&start, &(length, _))) = overlapped {
            return Err(OffloadError::new(
                ErrorKind::InvalidArgument,
                format!(
                    "cannot lock {bytes} bytes at {host:#x}: they overlap the {length} bytes \
                     pinned at {start:#x} without lying inside them"
                ),
            ));
        }
        let device = lock()?;
        pinned.insert(host, (bytes.max(1), Pinned::Locked { count: 1, device }));
        Ok(device)
    }

    /// Undoes one `lock` of the locked range holding `host`; `unlock` does the driver's part
    /// (given the range's start) when the last lock goes.
    pub fn unlock(&self, host: u64, unlock: impl FnOnce(u64) -> Result<()>) -> Result<()> {
        let mut pinned = locked(&self.pinned);
        let Some(start) = containing(&pinned, host, 1) else {
            return Err(OffloadError::new(
                ErrorKind::InvalidArgument,
                format!("cannot unlock {host:#x}: no locked memory holds it"),
            ));
        };
        match pinned.get_mut(&start) {
            Some((_, Pinned::Locked { count, .. })) if *count > 1 => *count -= 1,
            Some((_, Pinned::Locked { .. })) => {
                unlock(start)?;
                pinned.remove(&start);
            }
            // Host memory the device allocated: pinned without a lock.
            _ => {}
        }
        Ok(())
    }

    /// A ring of `count` pinned buffers, made if the pool has too few.
    fn take(&self, core: &Arc<DeviceCore<B>>, count: usize) -> Result<Vec<Allocation<B>>> {
        let mut ring = {
            let mut free = locked(&self.free);
            let keep = free.len().saturating_sub(count);
            free.split_off(keep)
        };
        while ring.len() < count {
            ring.push(Allocation::new(
                core,
                BUFFER_BYTES,
                AllocKind::Host,
                "a pinned staging buffer",
            )?);
        }
        Ok(ring)
    }

    fn give_back(&self, ring: Vec<Allocation<B>>) {
        locked(&self.free).extend(ring);
    }

    /// Copies `bytes` between `host` and `device` through the ring (see the module's docs).
    ///
    /// # Safety
    /// `host` is readable (to the device) or writable (from it) for `bytes`, and no one else
    /// writes it meanwhile; `device` is device memory of this device holding `bytes`.
    pub unsafe fn copy(
        &self,
        core: &Arc<DeviceCore<B>>,
        direction: Direction,
        host: u64,
        device: u64,
        bytes: usize,
    ) -> Result<()> {
        let chunk = (bytes / 8)
            .next_multiple_of(64 << 10)
            .clamp(MIN_CHUNK, BUFFER_BYTES);
        let chunks = bytes.div_ceil(chunk);
        let fillers = fillers().min(chunks);
        // Each filler holds one, two are being copied, one waits between them.
        let ring = self.take(core, fillers + 3)?;
        let pinned: Vec<u64> = ring.iter().map(|b| b.address).collect();
        let span = |c: usize| (c * chunk, chunk.min(bytes - c * chunk));
        let result = match direction {
            Direction::ToDevice => {
                // SAFETY: forwarded from the caller.
                unsafe {
                    self.pipeline_to_device(core, &pinned, host, device, chunks, fillers, &span)
                }
            }
            Direction::FromDevice => {
                // SAFETY: forwarded from the caller.
                unsafe {
                    self.pipeline_from_device(core, &pinned, host, device, chunks, fillers, &span)
                }
            }
        };
        self.give_back(ring);
        result
    }
}

impl<B: Backend> Staging<B> {
    /// Fillers copy chunks into free buffers; this thread hands each filled one to the device.
    ///
    /// # Safety
    /// As [`Staging::copy`]; `pinned` are this copy's buffers, `span(c)` chunk `c`'s offset and
    /// length within the copy.
    #[allow(
        clippy::too_many_arguments,
        reason = "one copy's plan, split out of `copy`"
    )]
    unsafe fn pipeline_to_device(
        &self,
        core: &Arc<DeviceCore<B>>,
        pinned: &[u64],
        host: u64,
        device: u64,
        chunks: usize,
        fillers: usize,
        span: &(dyn Fn(usize) -> (usize, usize) + Sync),
    ) -> Result<()> {
        let (free_tx, free_rx) = sync_channel::<usize>(pinned.len());
        let (filled_tx, filled_rx) = sync_channel::<(usize, usize)>(pinned.len());
        for buffer in 0..pinned.len() {
            free_tx.send(buffer).expect("the receiver is alive");
        }
        let (free_rx, next) = (Mutex::new(free_rx), AtomicUsize::new(0));
        // The closure owns the senders (dropping them stops the other side) and borrows these.
        let (free_rx, next) = (&free_rx, &next);
        std::thread::scope(move |scope| {
            for _ in 0..fillers {
                let filled_tx = filled_tx.clone();
                scope.spawn(move || {
                    while let Some(buffer) = receive(free_rx) {
                        let c = next.fetch_add(1, Ordering::Relaxed);
                        if c >= chunks {
                            break;
                        }
                        let (offset, length) = span(c);
                        // SAFETY: the caller's range holds the chunk; the buffer holds
                        // `BUFFER_BYTES` >= `length` and this thread owns it until it sends it.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                (host as usize + offset) as *const u8,
                                pinned[buffer] as *mut u8,
                                length,
                            )
                        };
                        if filled_tx.send((buffer, c)).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(filled_tx);
            // Returning (also early, on an error) drops `free_tx`: the fillers stop.
            let mut handed = 0;
            let mut next = || {
                if handed == chunks {
                    return None;
                }
                let (buffer, chunk) = filled_rx.recv().ok()?;
                handed += 1;
                let (offset, bytes) = span(chunk);
                Some(StagedPiece {
                    device: device + offset as u64,
                    pinned: pinned[buffer],
                    bytes,
                    buffer,
                    chunk,
                })
            };
            // A filler that found no chunk left no longer receives: nothing to give back to.
            let mut finished = |piece: StagedPiece| {
                let _ = free_tx.send(piece.buffer);
            };
            // SAFETY: each piece's buffer is pinned memory holding the chunk, left alone until
            // `finished` gives it back to the fillers; the range lies inside the caller's
            // device memory.
            unsafe {
                core.backend
                    .copy_pieces(Direction::ToDevice, &mut next, &mut finished)
            }?;
            if handed < chunks {
                return Err(OffloadError::new(
                    ErrorKind::TransferFailed,
                    format!("the staging threads stopped after {handed} of {chunks} chunks"),
                ));
            }
            Ok(())
        })
    }

    /// This thread copies chunks from the device into free buffers; drainers copy each filled
    /// one out to the caller's memory and free it.
    ///
    /// # Safety
    /// As [`Staging::pipeline_to_device`], the other way.
    #[allow(
        clippy::too_many_arguments,
        reason = "one copy's plan, split out of `copy`"
    )]
    unsafe fn pipeline_from_device(
        &self,
        core: &Arc<DeviceCore<B>>,
        pinned: &[u64],
        host: u64,
        device: u64,
        chunks: usize,
        drainers: usize,
        span: &(dyn Fn(usize) -> (usize, usize) + Sync),
    ) -> Result<()> {
        let (free_tx, free_rx) = sync_channel::<usize>(pinned.len());
        let (filled_tx, filled_rx) = sync_channel::<(usize, usize)>(pinned.len());
        for buffer in 0..pinned.len() {
            free_tx.send(buffer).expect("the receiver is alive");
        }
        let filled_rx = Mutex::new(filled_rx);
        let filled_rx = &filled_rx;
        std::thread::scope(move |scope| {
            for _ in 0..drainers {
                let free_tx = free_tx.clone();
                scope.spawn(move || {
                    while let Some((buffer, c)) = receive(filled_rx) {
                        let (offset, length) = span(c);
                        // SAFETY: the buffer holds chunk `c` from the device; the caller's range
                        // is writable; chunks do not overlap.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                pinned[buffer] as *const u8,
                                (host as usize + offset) as *mut u8,
                                length,
                            )
                        };
                        let _ = free_tx.send(buffer);
                    }
                });
            }
            drop(free_tx);
            // Returning (also early, on an error) drops `filled_tx`: the drainers copy out
            // what was finished, then stop.
            let mut chunk = 0;
            let mut next = || {
                if chunk == chunks {
                    return None;
                }
                let buffer = free_rx.recv().expect("the drainers give every buffer back");
                let (offset, bytes) = span(chunk);
                chunk += 1;
                Some(StagedPiece {
                    device: device + offset as u64,
                    pinned: pinned[buffer],
                    bytes,
                    buffer,
                    chunk: chunk - 1,
                })
            };
            let mut finished = |piece: StagedPiece| {
                filled_tx
                    .send((piece.buffer, piece.chunk))
                    .expect("the drainers receive until it closes")
            };
            // SAFETY: as in `pipeline_to_device`, the other way: a buffer goes to the drainers
            // only once the copy into it has finished.
            unsafe {
                core.backend
                    .copy_pieces(Direction::FromDevice, &mut next, &mut finished)
            }
        })
    }
}

/// The start of the pinned range holding all of `bytes` at `host`, if one does.
fn containing(pinned: &BTreeMap<u64, (usize, Pinned)>, host: u64, bytes: usize) -> Option<u64> {
    let (&start, &(length, _)) = pinned.range(..=host).next_back()?;
    (host + bytes as u64 <= start + length as u64).then_some(start)
}

/// The next value of a channel several threads share; `None` once it is closed.
fn receive<T>(rx: &Mutex<Receiver<T>>) -> Option<T> {
    locked(rx).recv().ok()
}
