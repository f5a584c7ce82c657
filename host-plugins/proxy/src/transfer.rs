//! Bulk data between a device of this proxy and another rank (the application, or another
//! proxy for a copy between ranks), in the fragments `wire::fragments` cuts.
//!
//! Where MPI can reach the device's memory itself, the fragments go straight between MPI and
//! that memory, all posted at once: a CPU device's memory is this process's, and a CUDA
//! device's is reachable when the MPI library is CUDA-aware (`MPIX_Query_cuda_support`; set
//! `RUSTOMP_REMOTE_GPU_AWARE=0` to stage anyway). Otherwise each fragment is staged through a
//! host buffer, two buffers in turn, so one fragment crosses the network while the other
//! crosses the bus.

use rustomp_plugin::{Device, ErrorKind};
use rustomp_remote_plugin::mpi::{Mpi, Pending};
use rustomp_remote_plugin::wire::{self, Failure};
use std::ffi::c_void;
use std::time::{Duration, Instant};

/// The other side of a transfer.
pub struct Peer {
    pub rank: i32,
    pub tag: i32,
    /// How long the data may take to arrive (the timeout plus a slow network's pace).
    pub limit: Duration,
}

fn failure(what: String) -> Failure {
    (ErrorKind::TransferFailed, what)
}

fn wait(mpi: &Mpi, pending: &mut [Pending], peer: &Peer, what: &str) -> Result<(), Failure> {
    match mpi.wait_all(pending, Instant::now() + peer.limit) {
        Ok(true) if pending.iter().any(|p| p.status.cancelled) => {
            Err(failure(format!("{what}: cancelled")))
        }
        Ok(true) => Ok(()),
        Ok(false) => {
            mpi.abandon(pending);
            Err(failure(format!(
                "{what}: rank {} did not complete it within {} s",
                peer.rank,
                peer.limit.as_secs_f64()
            )))
        }
        Err(e) => {
            mpi.abandon(pending);
            Err(failure(format!("{what}: {e}")))
        }
    }
}

/// Gives up on fragments still in flight after a failure. Their buffers are then never
/// freed: MPI may still hold them.
fn give_up(mpi: &Mpi, in_flight: &mut [Option<Pending>; 2], buffers: [Vec<u8>; 2]) {
    let mut rest: Vec<Pending> = in_flight.iter_mut().filter_map(Option::take).collect();
    mpi.abandon(&mut rest);
    std::mem::forget(buffers);
}

/// Receives `bytes` bytes from `peer` into `dst` on `device`.
///
/// # Safety
/// `dst` holds `bytes` bytes of `device`'s memory; `direct` only if MPI can write it.
pub unsafe fn receive(
    mpi: &Mpi,
    device: &dyn Device,
    direct: bool,
    dst: u64,
    bytes: u64,
    peer: &Peer,
) -> Result<(), Failure> {
    let what = format!("receiving {bytes} bytes from rank {}", peer.rank);
    if direct {
        let mut pending = Vec::new();
        for (offset, len) in wire::fragments(bytes) {
            // SAFETY: the caller's range holds `bytes`; the fragment lies inside it, and
            // `wait` completes or cancels every receive before returning.
            match unsafe { mpi.irecv((dst + offset) as usize as *mut u8, len, peer.rank, peer.tag) }
            {
                Ok(p) => pending.push(p),
                Err(e) => {
                    mpi.abandon(&mut pending);
                    return Err(failure(format!("{what}: {e}")));
                }
            }
        }
        return wait(mpi, &mut pending, peer, &what);
    }
    let parts: Vec<(u64, usize)> = wire::fragments(bytes).collect();
    let size = parts.first().map_or(0, |p| p.1);
    let mut buffers = [
        vec![0u8; size],
        vec![0u8; if parts.len() > 1 { size } else { 0 }],
    ];
    // MPI holds the buffers by address from here on; only these pointers are used.
    let at: [*mut u8; 2] = [buffers[0].as_mut_ptr(), buffers[1].as_mut_ptr()];
    let mut in_flight: [Option<Pending>; 2] = [None, None];
    let mut run = || -> Result<(), Failure> {
        let post = |i: usize| {
            // SAFETY: buffer `i % 2` holds the fragment; it is waited for (or cancelled)
            // before it is read or refilled, and never freed while MPI may hold it.
            unsafe { mpi.irecv(at[i % 2], parts[i].1, peer.rank, peer.tag) }
                .map_err(|e| failure(format!("{what}: {e}")))
        };
        if !parts.is_empty() {
            in_flight[0] = Some(post(0)?);
        }
        for (i, &(offset, len)) in parts.iter().enumerate() {
            let slot = i % 2;
            if let Some(arrived) = in_flight[slot].take() {
                let mut one = [arrived];
                wait(mpi, &mut one, peer, &what)?;
            }
            // The next fragment comes in while this one goes to the device.
            if i + 1 < parts.len() {
                in_flight[1 - slot] = Some(post(i + 1)?);
            }
            // SAFETY: the caller's range holds the fragment; the buffer holds `len` bytes
            // that MPI finished writing.
            unsafe {
                device.copy_to_device(
                    (dst + offset) as usize as *mut c_void,
                    at[slot] as *const c_void,
                    len,
                )
            }
            .map_err(|e| (e.kind, e.message))?;
        }
        Ok(())
    };
    let result = run();
    if result.is_err() {
        give_up(mpi, &mut in_flight, buffers);
    }
    result
}

/// Sends `bytes` bytes at `src` on `device` to `peer`.
///
/// # Safety
/// `src` holds `bytes` bytes of `device`'s memory; `direct` only if MPI can read it.
pub unsafe fn send(
    mpi: &Mpi,
    device: &dyn Device,
    direct: bool,
    src: u64,
    bytes: u64,
    peer: &Peer,
) -> Result<(), Failure> {
    let what = format!("sending {bytes} bytes to rank {}", peer.rank);
    if direct {
        let mut pending = Vec::new();
        for (offset, len) in wire::fragments(bytes) {
            // SAFETY: as in `receive`, readable.
            match unsafe {
                mpi.isend(
                    (src + offset) as usize as *const u8,
                    len,
                    peer.rank,
                    peer.tag,
                )
            } {
                Ok(p) => pending.push(p),
                Err(e) => {
                    mpi.abandon(&mut pending);
                    return Err(failure(format!("{what}: {e}")));
                }
            }
        }
        return wait(mpi, &mut pending, peer, &what);
    }
    let parts: Vec<(u64, usize)> = wire::fragments(bytes).collect();
    let size = parts.first().map_or(0, |p| p.1);
    let mut buffers = [
        vec![0u8; size],
        vec![0u8; if parts.len() > 1 { size } else { 0 }],
    ];
    let at: [*mut u8; 2] = [buffers[0].as_mut_ptr(), buffers[1].as_mut_ptr()];
    // Per buffer, the send that reads it.
    let mut in_flight: [Option<Pending>; 2] = [None, None];
    let mut run = || -> Result<(), Failure> {
        for (i, &(offset, len)) in parts.iter().enumerate() {
            let slot = i % 2;
            if let Some(previous) = in_flight[slot].take() {
                let mut one = [previous];
                wait(mpi, &mut one, peer, &what)?;
            }
            // SAFETY: the caller's range holds the fragment; the buffer holds `len` bytes and
            // no send reads it (the one before was waited for above).
            unsafe {
                device.copy_from_device(
                    at[slot] as *mut c_void,
                    (src + offset) as usize as *const c_void,
                    len,
                )
            }
            .map_err(|e| (e.kind, e.message))?;
            // SAFETY: the buffer stays untouched until this send is waited for, and is never
            // freed while MPI may read it.
            let posted = unsafe { mpi.isend(at[slot], len, peer.rank, peer.tag) }
                .map_err(|e| failure(format!("{what}: {e}")))?;
            in_flight[slot] = Some(posted);
        }
        for slot in &mut in_flight {
            if let Some(last) = slot.take() {
                let mut one = [last];
                wait(mpi, &mut one, peer, &what)?;
            }
        }
        Ok(())
    };
    let result = run();
    if result.is_err() {
        give_up(mpi, &mut in_flight, buffers);
    }
    result
}
