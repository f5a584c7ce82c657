//! The host side of `__llvm_omp_host_call` (see `rustomp_abi::HostCallPort`): a backend
//! allocates a port the device can reach, publishes its address to the image, and calls
//! [`serve`] while a kernel of that image runs.

use core::ffi::c_void;
use core::sync::atomic::{fence, AtomicU32, Ordering};
use rustomp_abi::{host_call_state, HostCallPort, HOST_CALL_DATA_BYTES};

/// The host function a device asks for: `u64 function(void *data)`.
pub type HostFunction = unsafe extern "C" fn(*mut c_void) -> u64;

/// Serves the request waiting in `port`, if any. Returns whether one was served. Safe to call
/// from several host threads at once (the first to take the request serves it).
///
/// # Safety
/// `port` points at a live port shared with device code that follows the protocol; the
/// function address a device posts is a host function of type [`HostFunction`].
pub unsafe fn serve(port: *mut HostCallPort) -> bool {
    // SAFETY: the state word is only ever accessed atomically by both sides.
    let state = unsafe { AtomicU32::from_ptr(&raw mut (*port).state) };
    if state
        .compare_exchange(
            host_call_state::REQUEST,
            host_call_state::SERVING,
            Ordering::Acquire,
            Ordering::Relaxed,
        )
        .is_err()
    {
        return false;
    }
    // SAFETY: the device wrote the request before REQUEST and waits for DONE.
    let (function, size) = unsafe {
        (
            (&raw const (*port).function).read_volatile(),
            (&raw const (*port).size).read_volatile(),
        )
    };
    let size = (size as usize).min(HOST_CALL_DATA_BYTES);
    // An aligned private copy: the function may keep or change its argument.
    let mut data = vec![0u64; size.div_ceil(8).max(1)];
    // SAFETY: `size` bytes of the port's data, into a buffer at least that large.
    unsafe {
        core::ptr::copy_nonoverlapping(
            (&raw const (*port).data) as *const u8,
            data.as_mut_ptr() as *mut u8,
            size,
        )
    };
    let result = if function == 0 {
        0
    } else {
        // SAFETY: guaranteed by the caller (the program passed a host function).
        // The address crossed the device as an integer: take back the provenance the program
        // exposed when it passed the function's address.
        let f: HostFunction = unsafe {
            core::mem::transmute::<*const (), HostFunction>(core::ptr::with_exposed_provenance(
                function as usize,
            ))
        };
        // SAFETY: as above.
        unsafe { f(data.as_mut_ptr() as *mut c_void) }
    };
    // SAFETY: the device reads the result only after DONE.
    unsafe { (&raw mut (*port).result).write_volatile(result) };
    fence(Ordering::SeqCst);
    state.store(host_call_state::DONE, Ordering::Release);
    true
}

/// How a backend's wait loop idles between polls while a kernel that may call the host runs:
/// spinning at first (short kernels end within microseconds, and a request is answered at
/// once), then sleeping for growing spans up to [`Backoff::MAX_SLEEP`] (a long kernel costs no
/// host core; it is seen finished at most that much later). Serving a request starts over.
#[derive(Debug, Default)]
pub struct Backoff {
    idle_polls: u32,
}

impl Backoff {
    /// Polls that only spin before the first sleep.
    const SPINS: u32 = 256;
    pub const MAX_SLEEP: std::time::Duration = std::time::Duration::from_micros(200);

    /// Waits before the next poll; `served` says whether this poll found work.
    pub fn wait(&mut self, served: bool) {
        if served {
            self.idle_polls = 0;
            return;
        }
        self.idle_polls = self.idle_polls.saturating_add(1);
        match self.sleep() {
            None => std::thread::yield_now(),
            Some(span) => std::thread::sleep(span),
        }
    }

    /// How long the current idle poll sleeps: nothing while spinning, then doubling spans.
    fn sleep(&self) -> Option<std::time::Duration> {
        let past_spins = self
            .idle_polls
            .checked_sub(Self::SPINS)
            .filter(|&n| n > 0)?;
        let doublings = past_spins.min(8);
        Some(std::time::Duration::from_micros(1 << doublings).min(Self::MAX_SLEEP))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn add_pair(data: *mut c_void) -> u64 {
        // SAFETY: the test passes two u64.
        let pair = unsafe { *(data as *const [u64; 2]) };
        pair[0] + pair[1]
    }

    #[test]
    fn idle_waits_spin_then_sleep_a_bounded_time() {
        let mut backoff = Backoff::default();
        for _ in 0..Backoff::SPINS {
            backoff.wait(false);
            assert_eq!(backoff.sleep(), None, "spinning does not sleep");
        }
        let mut previous = std::time::Duration::ZERO;
        for _ in 0..20 {
            backoff.wait(false);
            let span = backoff
                .sleep()
                .expect("past the spins, an idle poll sleeps");
            assert!(span >= previous && span <= Backoff::MAX_SLEEP, "{span:?}");
            previous = span;
        }
        assert_eq!(previous, Backoff::MAX_SLEEP, "the sleeps grow to the bound");
        assert_eq!(backoff.idle_polls, Backoff::SPINS + 20);
        backoff.wait(true);
        assert_eq!(backoff.idle_polls, 0, "serving a request starts over");
    }

    #[test]
    fn a_posted_request_is_served_once() {
        let mut port: Box<HostCallPort> = Box::new(HostCallPort {
            state: host_call_state::FREE,
            reserved: 0,
            function: 0,
            size: 0,
            result: 0,
            data: [0; HOST_CALL_DATA_BYTES],
        });
        // Every access goes through the raw pointer while `serve` may use it (as the device's
        // and the host's do), never through the box it came from.
        let p: *mut HostCallPort = &mut *port;
        // SAFETY: a live port; nothing is pending.
        assert!(!unsafe { serve(p) });
        // SAFETY: no `serve` runs while the test writes the request.
        unsafe {
            (*p).function = add_pair as unsafe extern "C" fn(*mut c_void) -> u64 as usize as u64;
            (*p).size = 16;
            let data = &mut (*p).data;
            data[..8].copy_from_slice(&40u64.to_ne_bytes());
            data[8..16].copy_from_slice(&2u64.to_ne_bytes());
            (*p).state = host_call_state::REQUEST;
        }
        // SAFETY: as above, with a request for `add_pair`.
        assert!(unsafe { serve(p) });
        assert_eq!(
            // SAFETY: `serve` returned.
            unsafe { ((*p).state, (*p).result) },
            (host_call_state::DONE, 42)
        );
        // SAFETY: as above.
        assert!(!unsafe { serve(p) }, "served once");
    }
}
