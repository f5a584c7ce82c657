//! AMDGPU intrinsics as a retargeted gfx90a image calls them (`llvm.amdgcn.workitem.id.x` is
//! `__vgpu_amdgcn_workitem_id_x`): work-item and workgroup ids, the HSA dispatch packet, the
//! wavefront's lane counting, ballot and `ds_bpermute`, `s_barrier`, `s_sleep` and the clocks.
//!
//! A wavefront has 64 lanes (the launch's `warp`). An AMD GPU runs a wavefront's lanes in lock
//! step under an execution mask, so a cross-lane operation takes the lanes executing it
//! together; here those are the lanes that reach it together (`team::executing_lanes`): the
//! others wait elsewhere or have exited.

use crate::registers::{bit, block_index, clock_ns, geometry, lane, registers, thread_index};
use crate::team::{self, Pause};
use static_assertions::{assert_eq_size, const_assert_eq};
use std::cell::UnsafeCell;
use std::mem::offset_of;

/// `hsa_kernel_dispatch_packet_t`: what a kernel reads of its launch through `dispatch.ptr`
/// (the device runtime reads the workgroup and grid sizes).
#[repr(C, align(64))]
struct DispatchPacket {
    header: u16,
    setup: u16,
    workgroup_size: [u16; 3],
    reserved0: u16,
    /// Work-items, not workgroups.
    grid_size: [u32; 3],
    private_segment_size: u32,
    group_segment_size: u32,
    kernel_object: u64,
    kernarg_address: u64,
    reserved2: u64,
    completion_signal: u64,
}
assert_eq_size!(DispatchPacket, [u8; 64]);
const_assert_eq!(offset_of!(DispatchPacket, workgroup_size), 4);
const_assert_eq!(offset_of!(DispatchPacket, grid_size), 12);
const_assert_eq!(offset_of!(DispatchPacket, kernel_object), 32);

std::thread_local! {
    /// The packet of the launch the calling OS thread runs (its teams' fibers read it).
    static PACKET: UnsafeCell<DispatchPacket> = const {
        UnsafeCell::new(DispatchPacket {
            header: 0,
            setup: 3,
            workgroup_size: [1; 3],
            reserved0: 0,
            grid_size: [1; 3],
            private_segment_size: 0,
            group_segment_size: 0,
            kernel_object: 0,
            kernarg_address: 0,
            reserved2: 0,
            completion_signal: 0,
        })
    };
}

/// Fills the calling OS thread's dispatch packet for a launch of `grid` workgroups of `block`
/// work-items (each dimension as HSA counts it: at most 65535 work-items per workgroup side).
pub fn set_dispatch_packet(grid: [u32; 3], block: [u32; 3]) {
    PACKET.with(|p| {
        // SAFETY: the packet is this thread's; no kernel of it runs while the launch is set up.
        let packet = unsafe { &mut *p.get() };
        for axis in 0..3 {
            packet.workgroup_size[axis] = block[axis].min(u16::MAX as u32) as u16;
            packet.grid_size[axis] = grid[axis].saturating_mul(block[axis]);
        }
    });
}

registers! {
    __vgpu_amdgcn_workitem_id_x => thread_index(0);
    __vgpu_amdgcn_workitem_id_y => thread_index(1);
    __vgpu_amdgcn_workitem_id_z => thread_index(2);
    __vgpu_amdgcn_workgroup_id_x => block_index(0);
    __vgpu_amdgcn_workgroup_id_y => block_index(1);
    __vgpu_amdgcn_workgroup_id_z => block_index(2);
    __vgpu_amdgcn_wavefrontsize => geometry().4;
}

/// `dispatch.ptr`: the launch's packet (constant memory on a GPU; nothing writes it).
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_amdgcn_dispatch_ptr() -> *const u8 {
    PACKET.with(|p| p.get() as *const u8)
}

// `implicitarg.ptr` is not emulated: the device runtime reads the packet instead, and an image
// that reads the hidden arguments fails to link naming it.

/// The lanes below the caller's in `mask`'s low half, plus `base` (`v_mbcnt_lo_u32_b32`).
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_amdgcn_mbcnt_lo(mask: u32, base: u32) -> u32 {
    let below = (1u64 << lane()) - 1;
    base + (mask & below as u32).count_ones()
}

/// As `mbcnt_lo`, for the lanes 32 to 63 (`v_mbcnt_hi_u32_b32`).
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_amdgcn_mbcnt_hi(mask: u32, base: u32) -> u32 {
    let below = (1u64 << lane()) - 1;
    base + (mask & (below >> 32) as u32).count_ones()
}

/// The lanes executing together meet and exchange `value`: each lane's value, and the lanes
/// that met (the execution mask).
fn executing_together(value: u32) -> ([u32; 64], u64) {
    let lanes = team::executing_lanes();
    team::warp_exchange(lanes, value)
}

/// `ballot.i64`: the executing lanes whose predicate is true.
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_amdgcn_ballot_i64(pred: u8) -> u64 {
    let (values, met) = executing_together(bit(pred) as u32);
    (0..64)
        .filter(|&l| met & (1 << l) != 0 && values[l] != 0)
        .fold(0u64, |b, l| b | 1 << l)
}

/// `ds_bpermute`: each executing lane reads `value` of the lane at byte address `index` (the
/// lane times 4, modulo the wavefront); a lane that is not executing gives 0.
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_amdgcn_ds_bpermute(index: u32, value: u32) -> u32 {
    let (values, met) = executing_together(value);
    let source = ((index >> 2) % geometry().4) as usize;
    if met & (1 << source) != 0 {
        values[source]
    } else {
        0
    }
}

/// `readfirstlane`: the value of the lowest executing lane.
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_amdgcn_readfirstlane_i32(value: u32) -> u32 {
    let (values, met) = executing_together(value);
    values[met.trailing_zeros().min(63) as usize]
}

/// `wave.barrier`: on a GPU the lanes run in lock step and this only keeps the compiler from
/// moving memory operations across it; here the executing lanes meet, so that what each wrote
/// before is there for the others after, as lock step gives.
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_amdgcn_wave_barrier() {
    let lanes = team::executing_lanes();
    team::warp_sync(lanes)
}

/// `s_barrier`: every work-item of the workgroup that has not exited.
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_amdgcn_s_barrier() {
    team::team_barrier()
}

/// `s_sleep`: a spin-wait's pause; the other work-items run.
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_amdgcn_s_sleep(_clocks_of_64: i32) {
    team::pause(Pause::Spinning)
}

/// `s_memrealtime`: the constant 100 MHz counter.
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_amdgcn_s_memrealtime() -> u64 {
    clock_ns() / 10
}

/// `s_memtime`: the shader clock (here nanoseconds).
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_amdgcn_s_memtime() -> u64 {
    clock_ns()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registers::{block_dimension, grid_dimension};

    /// The launch's workgroup and grid sizes in the packet.
    fn packet_sizes() -> ([u16; 3], [u32; 3]) {
        PACKET.with(|p| {
            // SAFETY: read on the thread that owns it.
            let packet = unsafe { &*p.get() };
            (packet.workgroup_size, packet.grid_size)
        })
    }

    use crate::team::{run_team, thread, Family};
    use std::cell::RefCell;
    use std::rc::Rc;

    /// Runs `threads` work-items in wavefronts of 64, each calling `body`; returns what each
    /// recorded.
    fn wavefront(threads: u32, body: impl Fn(u32) -> u64 + Clone + 'static) -> Vec<u64> {
        let seen = Rc::new(RefCell::new(vec![u64::MAX; threads as usize]));
        let s = Rc::clone(&seen);
        run_team(0, 1, threads, 64, Family::Amdgcn, 64 << 10, move || {
            let v = body(thread());
            s.borrow_mut()[thread() as usize] = v;
        })
        .unwrap();
        let out = seen.borrow().clone();
        out
    }

    #[test]
    fn a_shuffle_reads_the_next_lane_of_64() {
        // The device runtime's shuffle down by one: lane l reads lane l + 1 (the last its own).
        let got = wavefront(64, |t| {
            let lane = __vgpu_amdgcn_mbcnt_hi(!0, __vgpu_amdgcn_mbcnt_lo(!0, 0));
            let source = if lane + 1 < 64 { lane + 1 } else { lane };
            u64::from(__vgpu_amdgcn_ds_bpermute(source << 2, t * 10))
        });
        let want: Vec<u64> = (0..64u64).map(|l| (l + 1).min(63) * 10).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn consecutive_cross_lane_operations_see_the_whole_wavefront() {
        // Lanes leave one meeting one by one; the first out must not take the others, still
        // leaving, for lanes elsewhere (every lane's ballot of the second round is full).
        let got = wavefront(128, |t| {
            let first = __vgpu_amdgcn_ballot_i64(1);
            let second = __vgpu_amdgcn_ballot_i64((t % 2) as u8);
            assert_eq!(first, u64::MAX, "thread {t}");
            second
        });
        assert!(got.iter().all(|&b| b == 0xaaaa_aaaa_aaaa_aaaa), "{got:x?}");
    }

    #[test]
    fn lanes_a_spin_lets_go_are_in_the_next_mask() {
        // Lanes 0-62 spin on a flag lane 63 sets: on a GPU they leave the loop in lock step and
        // ballot together; the lane that set it must not ballot alone.
        let flag = Rc::new(std::cell::Cell::new(false));
        let got = wavefront(64, move |t| {
            if t == 63 {
                flag.set(true);
            } else {
                while !flag.get() {
                    __vgpu_amdgcn_s_sleep(1);
                }
            }
            __vgpu_amdgcn_ballot_i64(1)
        });
        assert!(got.iter().all(|&b| b == u64::MAX), "{got:x?}");
    }

    #[test]
    fn lanes_still_spinning_are_not_waited_for() {
        // Lanes 1-63 spin until lane 0 has balloted: lane 0's mask is its own.
        let flag = Rc::new(std::cell::Cell::new(false));
        let got = wavefront(64, move |t| {
            if t == 0 {
                let mask = __vgpu_amdgcn_ballot_i64(1);
                flag.set(true);
                mask
            } else {
                while !flag.get() {
                    __vgpu_amdgcn_s_sleep(1);
                }
                0
            }
        });
        assert_eq!(got[0], 1);
    }

    #[test]
    fn lanes_at_a_barrier_are_not_in_the_mask() {
        // Lanes 0-15 ballot while the others wait at the team barrier: a mask of 16 lanes.
        let got = wavefront(64, |t| {
            let mask = if t < 16 {
                __vgpu_amdgcn_ballot_i64(1)
            } else {
                0
            };
            __vgpu_amdgcn_s_barrier();
            mask
        });
        assert!(got[..16].iter().all(|&m| m == 0xffff), "{got:x?}");
    }

    #[test]
    fn the_packet_counts_work_items_in_the_grid() {
        crate::registers::set_dimensions([3, 2, 1], [64, 4, 1]);
        assert_eq!(packet_sizes(), ([64, 4, 1], [192, 8, 1]));
        // The device runtime reads the sizes at bytes 4.. and 12.. of the packet.
        let p = __vgpu_amdgcn_dispatch_ptr();
        // SAFETY: the packet is 64 bytes, aligned.
        let (wg_x, grid_y) = unsafe {
            (
                (p.add(4) as *const u16).read(),
                (p.add(16) as *const u32).read(),
            )
        };
        assert_eq!((wg_x, grid_y), (64, 8));
        assert_eq!((grid_dimension(0), block_dimension(1)), (3, 4));
    }
}
