//! Copies of pageable host memory at pinned speed.
//!
//! A GPU's DMA engines read and write only pinned (page-locked) host memory; a driver handed a
//! pageable buffer copies it through a small bounce buffer of its own, one piece at a time,
//! at a fraction of the link's speed (an H200: 6-7 GB/s for `cuMemcpyHtoD` of a pageable
//! buffer). For a large copy the generic layer does the staging itself, as a pipeline:
//!
//! - host to device: `FILLERS` host threads copy successive chunks of the user's buffer into a
//!   ring of pinned buffers while the calling thread hands each filled buffer to the backend's
//!   (synchronous, pinned-speed) copy, and gives it back to the fillers when that returned;
//! - device to host: the calling thread copies each chunk from the device into a free pinned
//!   buffer while `FILLERS` threads copy the filled ones out into the user's buffer.
//!
//! So the host-side copies (several threads) overlap the DMA, and the DMA always reads or
//! writes pinned memory. Copies below [`THRESHOLD`] and copies of memory that is pinned
//! already (what the device allocated as host memory) take the direct path. The buffers are
//! made at the first large copy and kept for the device's life; concurrent large copies each
//! take their own set.

use super::shared::{Allocation, DeviceCore};
use super::Backend;
use crate::{AllocKind, Result};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex, MutexGuard};

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

/// Which way a staged copy goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    ToDevice,
    FromDevice,
}

/// A device's pinned buffers and its record of host memory that is pinned already.
pub struct Staging<B: Backend> {
    /// Free buffers; a staged copy takes a ring of them and gives it back.
    free: Mutex<Vec<Allocation<B>>>,
    /// Host memory this device allocated pinned (`AllocKind::Host`): start -> length.
    pinned: Mutex<BTreeMap<u64, usize>>,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
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
        locked(&self.pinned).insert(address, bytes);
    }

    pub fn pinned_freed(&self, address: u64) {
        locked(&self.pinned).remove(&address);
    }

    /// Whether a copy of `bytes` at `host` goes through the pinned ring.
    pub fn wanted(&self, host: u64, bytes: usize) -> bool {
        if bytes < THRESHOLD {
            return false;
        }
        let pinned = locked(&self.pinned);
        let inside = pinned
            .range(..=host)
            .next_back()
            .is_some_and(|(&start, &length)| host + bytes as u64 <= start + length as u64);
        !inside
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
        let ring = self.take(core, fillers + 2)?;
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
            for _ in 0..chunks {
                let Ok((buffer, c)) = filled_rx.recv() else {
                    break;
                };
                let (offset, length) = span(c);
                // SAFETY: the buffer is pinned memory holding the chunk; the range lies inside
                // the caller's device memory.
                unsafe {
                    core.backend.copy_to_device(
                        device + offset as u64,
                        pinned[buffer] as *const u8,
                        length,
                    )
                }?;
                // A filler that found no chunk left no longer receives: nothing to give back to.
                let _ = free_tx.send(buffer);
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
            // what was filled, then stop.
            for c in 0..chunks {
                let buffer = free_rx.recv().expect("the drainers give every buffer back");
                let (offset, length) = span(c);
                // SAFETY: as in `pipeline_to_device`, the other way.
                unsafe {
                    core.backend.copy_from_device(
                        pinned[buffer] as *mut u8,
                        device + offset as u64,
                        length,
                    )
                }?;
                filled_tx
                    .send((buffer, c))
                    .expect("the drainers receive until it closes");
            }
            Ok(())
        })
    }
}

/// The next value of a channel several threads share; `None` once it is closed.
fn receive<T>(rx: &Mutex<Receiver<T>>) -> Option<T> {
    locked(rx).recv().ok()
}
