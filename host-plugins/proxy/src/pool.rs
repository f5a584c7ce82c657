//! The proxy's threads, leader and followers: one thread at a time (the leader) waits for the
//! next request and handles it itself, so a request costs no hand-over between threads.
//!
//! **Lazy hand-over.** The leader keeps the role while it handles a request; when it is done it
//! waits for the next one. Only when the request takes longer than [`HANDOFF_GRACE`] (a kernel
//! of an hour, a large copy) does a follower (looking every millisecond) take the role over and wait for the next request
//! meanwhile, so a long request never holds up the next, and a ping is always answered. When no
//! follower is left, a new thread starts (up to a bound), so requests in flight at once
//! (`nowait` regions, copies between ranks) are served at once.
//!
//! Why lazy: handing the role on at every request put two threads in MPI at once for each
//! launch (one sending the reply, one polling for the next request); under
//! `MPI_THREAD_MULTIPLE` they contend for the MPI library's locks, and on a loaded machine a
//! preempted lock holder made a launch 100-500x an MPI round trip. With the role kept, a short
//! request is one thread's work from request to reply.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Threads at most; past it, requests wait in MPI's queue for a free thread.
const MAX_THREADS: usize = 64;

/// How long the leader may handle a request before a follower takes the role over.
const HANDOFF_GRACE: Duration = Duration::from_micros(500);

/// How often a follower looks whether the leader has started a long request (the leader
/// itself polls MPI about as often when idle).
const FOLLOWER_LOOK: Duration = Duration::from_millis(1);

/// What the leader is doing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Leader {
    /// Nobody leads: the next thread to look takes the role.
    None,
    /// Waiting for the next request.
    Waiting,
    /// Handling a request since then.
    Handling(Instant),
}

struct State {
    leader: Leader,
    /// Incremented each time the role changes hands, so a handler knows whether it still
    /// leads when it is done.
    term: u64,
    /// Threads waiting to lead.
    followers: usize,
    threads: usize,
}

struct Pool<R, H> {
    receive: R,
    handle: H,
    state: Mutex<State>,
    changed: Condvar,
    started: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

/// Serves requests until `receive` returns `None` (the proxy stops); returns when every
/// thread has finished its request.
pub fn serve<M, R, H>(receive: R, handle: H)
where
    M: Send + 'static,
    R: Fn() -> Option<M> + Send + Sync + 'static,
    H: Fn(M) + Send + Sync + 'static,
{
    let pool = Arc::new(Pool {
        receive,
        handle,
        state: Mutex::new(State {
            leader: Leader::None,
            term: 0,
            followers: 0,
            threads: 1,
        }),
        changed: Condvar::new(),
        started: Mutex::new(Vec::new()),
    });
    work(&pool);
    // The others end too once they lead (receive says None to each).
    loop {
        let next = pool.started.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match next {
            Some(thread) => {
                let _ = thread.join();
            }
            None => break,
        }
    }
}

fn work<M, R, H>(pool: &Arc<Pool<R, H>>)
where
    M: Send + 'static,
    R: Fn() -> Option<M> + Send + Sync + 'static,
    H: Fn(M) + Send + Sync + 'static,
{
    let mut leading = false;
    loop {
        if !leading {
            follow(pool);
        }
        // The leader: wait for a request.
        let Some(message) = (pool.receive)() else {
            let mut state = pool.state.lock().unwrap_or_else(|e| e.into_inner());
            state.leader = Leader::None;
            state.term += 1;
            drop(state);
            pool.changed.notify_all();
            return;
        };
        let (term, grow) = {
            let mut state = pool.state.lock().unwrap_or_else(|e| e.into_inner());
            state.leader = Leader::Handling(Instant::now());
            let grow = state.followers == 0 && state.threads < MAX_THREADS;
            if grow {
                state.threads += 1;
            }
            (state.term, grow)
        };
        if grow && !spawn(pool) {
            pool.state.lock().unwrap_or_else(|e| e.into_inner()).threads -= 1;
        }
        (pool.handle)(message);
        let mut state = pool.state.lock().unwrap_or_else(|e| e.into_inner());
        leading = state.term == term;
        if leading {
            state.leader = Leader::Waiting;
        }
    }
}

/// Waits until this thread takes the leader's role: nobody leads, or the leader has been
/// handling one request for longer than the grace.
fn follow<R, H>(pool: &Pool<R, H>) {
    let mut state = pool.state.lock().unwrap_or_else(|e| e.into_inner());
    state.followers += 1;
    loop {
        match state.leader {
            Leader::None => break,
            Leader::Handling(since) if since.elapsed() >= HANDOFF_GRACE => break,
            Leader::Handling(since) => {
                let left = HANDOFF_GRACE.saturating_sub(since.elapsed());
                state = pool
                    .changed
                    .wait_timeout(state, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            Leader::Waiting => {
                // Not woken when the leader starts handling (a wake-up per request would put
                // a second thread on a core every launch): look again a little later.
                state = pool
                    .changed
                    .wait_timeout(state, FOLLOWER_LOOK)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        }
    }
    state.followers -= 1;
    state.leader = Leader::Waiting;
    state.term += 1;
}

/// Starts one more thread; false if the system refused.
fn spawn<M, R, H>(pool: &Arc<Pool<R, H>>) -> bool
where
    M: Send + 'static,
    R: Fn() -> Option<M> + Send + Sync + 'static,
    H: Fn(M) + Send + Sync + 'static,
{
    let worker = pool.clone();
    let started = std::thread::Builder::new()
        .name("rustomp-proxy".into())
        .spawn(move || work(&worker));
    match started {
        Ok(thread) => {
            pool.started
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(thread);
            true
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::serve;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Barrier};

    /// Three requests that each wait for the others are served together: each needs its own
    /// thread, which the pool starts when nobody is left to lead.
    #[test]
    fn requests_in_flight_together_are_served_together() {
        let next = Arc::new(AtomicUsize::new(0));
        let meet = Arc::new(Barrier::new(3));
        let done = Arc::new(AtomicUsize::new(0));
        let (n, m, d) = (next.clone(), meet.clone(), done.clone());
        serve(
            move || {
                let i = n.fetch_add(1, Ordering::SeqCst);
                // Three requests, then stop once all three were handled.
                if i < 3 {
                    return Some(i);
                }
                while d.load(Ordering::SeqCst) < 3 {
                    std::thread::yield_now();
                }
                None
            },
            move |_request: usize| {
                m.wait();
                done.fetch_add(1, Ordering::SeqCst);
            },
        );
        assert!(next.load(Ordering::SeqCst) >= 4);
    }
}
