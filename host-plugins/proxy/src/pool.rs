//! The proxy's threads, leader and followers: one thread at a time (the leader) waits for the
//! next request; when one arrives it hands the leadership on and handles the request itself,
//! so a request costs no hand-over between threads and a long one (a kernel of an hour, a
//! large copy) never holds up the next. When no thread is left waiting, a new one starts (up
//! to a bound), so requests in flight at once (`nowait` regions, copies between ranks) are
//! served at once, and a ping is always answered.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Threads at most; past it, requests wait in MPI's queue for a free thread.
const MAX_THREADS: usize = 64;

/// How long a new leader lets the threads handling requests have MPI to themselves before it
/// polls for the next request. Most requests (a launch, a small copy) end within it, so in the
/// common case one thread at a time is in MPI: under MPI_THREAD_MULTIPLE a poller beside the
/// thread sending a reply contends for the MPI library's locks, and on a loaded machine a
/// preempted lock holder made launches 100-500x an MPI round trip. A longer request gets the
/// concurrency it needs (pings answered, requests in flight served) after this grace.
const HANDOFF_GRACE: Duration = Duration::from_micros(200);

struct Pool<R, H> {
    receive: R,
    handle: H,
    leader: Mutex<()>,
    /// Threads not handling a request (leading or waiting to).
    idle: AtomicUsize,
    /// Threads handling a request.
    busy: AtomicUsize,
    threads: AtomicUsize,
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
        leader: Mutex::new(()),
        idle: AtomicUsize::new(1),
        busy: AtomicUsize::new(0),
        threads: AtomicUsize::new(1),
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
    loop {
        let message = {
            let _leading = pool.leader.lock().unwrap_or_else(|e| e.into_inner());
            let start = Instant::now();
            while pool.busy.load(Ordering::Acquire) > 0 && start.elapsed() < HANDOFF_GRACE {
                std::thread::yield_now();
            }
            (pool.receive)()
        };
        let Some(message) = message else { return };
        pool.busy.fetch_add(1, Ordering::AcqRel);
        if pool.idle.fetch_sub(1, Ordering::AcqRel) == 1 {
            spawn(pool);
        }
        (pool.handle)(message);
        pool.busy.fetch_sub(1, Ordering::AcqRel);
        pool.idle.fetch_add(1, Ordering::AcqRel);
    }
}

fn spawn<M, R, H>(pool: &Arc<Pool<R, H>>)
where
    M: Send + 'static,
    R: Fn() -> Option<M> + Send + Sync + 'static,
    H: Fn(M) + Send + Sync + 'static,
{
    if pool.threads.fetch_add(1, Ordering::AcqRel) >= MAX_THREADS {
        pool.threads.fetch_sub(1, Ordering::AcqRel);
        return;
    }
    pool.idle.fetch_add(1, Ordering::AcqRel);
    let worker = pool.clone();
    let started = std::thread::Builder::new()
        .name("rustomp-proxy".into())
        .spawn(move || work(&worker));
    match started {
        Ok(thread) => pool
            .started
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(thread),
        Err(_) => {
            pool.threads.fetch_sub(1, Ordering::AcqRel);
            pool.idle.fetch_sub(1, Ordering::AcqRel);
        }
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
