//! The calls waiting for an adapter instance, and the threads that work through
//! them.
//!
//! When every instance is busy, a call is queued here instead of waiting for a
//! permit on its own task. A permit then never goes back to the semaphore while
//! calls wait: whoever finishes with it hands it to a *drainer*, a blocking
//! thread that runs queued calls back to back, in arrival order, until none is
//! left. Under load a call thus starts on a thread that is already running,
//! right after the one before it, instead of after two thread wake-ups (the
//! permit's waiter, then the blocking thread it sends the call to); the callers
//! are woken with their answers meanwhile, off that path.
//!
//! Every decision to queue, to start a drainer or to release a permit is taken
//! under one lock, so a call is never left queued with no drainer coming.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};

/// A queued call: runs on a drainer's thread with the pool it was queued in and
/// what the drainer keeps between calls.
pub type Job<P> = Box<dyn FnOnce(&P, &mut <P as Drained>::Drain) + Send>;

/// Something whose calls queue on a [`Backlog`] (the instance pool).
pub trait Drained: Send + Sync + Sized + 'static {
    /// What a drainer keeps from one call to the next (an instance, answers
    /// held for a group commit).
    type Drain: Default;
    fn backlog(&self) -> &Backlog<Self>;
    /// The queue is empty: settle what `drain` holds before the drainer's
    /// permit goes back (calls queued meanwhile are run first).
    fn settle(&self, drain: &mut Self::Drain);
}

/// The pool is closed: no call is queued any more.
#[derive(Debug)]
pub struct Closed;

/// The queue of one pool, with the pool's permits (one per instance).
pub struct Backlog<P: Drained> {
    permits: Arc<Semaphore>,
    jobs: Mutex<VecDeque<Job<P>>>,
}

impl<P: Drained> Backlog<P> {
    pub fn new(permits: usize) -> Self {
        Self { permits: Arc::new(Semaphore::new(permits)), jobs: Mutex::new(VecDeque::new()) }
    }

    fn jobs(&self) -> MutexGuard<'_, VecDeque<Job<P>>> {
        self.jobs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Calls queued now.
    pub fn queued(&self) -> usize {
        self.jobs().len()
    }

    /// A permit to run a call at once, on the caller's thread: only when one is
    /// free and no call is queued (a queued call goes first).
    pub fn run_now(&self) -> Option<OwnedSemaphorePermit> {
        let jobs = self.jobs();
        if !jobs.is_empty() {
            return None;
        }
        let permit = Arc::clone(&self.permits).try_acquire_owned().ok();
        drop(jobs);
        permit
    }

    /// Queues `job` behind the calls already waiting, starting a drainer if a
    /// permit is free. `Err` once the pool is closed (the job is dropped).
    pub fn push(&self, pool: &Arc<P>, job: Job<P>) -> Result<(), Closed> {
        let mut jobs = self.jobs();
        let free = match Arc::clone(&self.permits).try_acquire_owned() {
            Ok(permit) => Some(permit),
            Err(TryAcquireError::NoPermits) => None,
            Err(TryAcquireError::Closed) => return Err(Closed),
        };
        jobs.push_back(job);
        drop(jobs);
        if let Some(permit) = free {
            start_drainer(Arc::clone(pool), permit);
        }
        Ok(())
    }

    /// A caller is done with `permit`: it goes to a drainer if calls are
    /// queued, back to the semaphore otherwise.
    pub fn release(&self, pool: &Arc<P>, permit: OwnedSemaphorePermit) {
        let jobs = self.jobs();
        if jobs.is_empty() {
            drop(permit);
            return;
        }
        drop(jobs);
        start_drainer(Arc::clone(pool), permit);
    }

    /// The next queued call, if any.
    fn pop(&self) -> Option<Job<P>> {
        self.jobs().pop_front()
    }

    /// The next queued call, or `None` (then `permit` is released, under the
    /// same lock as `push` looks for a free one).
    fn next(&self, permit: &mut Option<OwnedSemaphorePermit>) -> Option<Job<P>> {
        let mut jobs = self.jobs();
        let job = jobs.pop_front();
        if job.is_none() {
            *permit = None;
        }
        job
    }

    /// Waits until every permit is back, then refuses new calls; calls queued
    /// meanwhile (no permit left to run them) are dropped, their callers told
    /// by their dropped answer channels.
    pub async fn close(&self, permits: u32) {
        if let Ok(all) = self.permits.acquire_many(permits).await {
            all.forget();
        }
        self.permits.close();
        let dropped: Vec<Job<P>> = self.jobs().drain(..).collect();
        drop(dropped);
    }
}

/// A blocking thread that runs queued calls until none is left.
fn start_drainer<P: Drained>(pool: Arc<P>, permit: OwnedSemaphorePermit) {
    tokio::task::spawn_blocking(move || {
        let mut permit = Some(permit);
        let mut drain = P::Drain::default();
        loop {
            let job = match pool.backlog().pop() {
                Some(job) => job,
                None => {
                    pool.settle(&mut drain);
                    match pool.backlog().next(&mut permit) {
                        Some(job) => job,
                        None => break,
                    }
                }
            };
            // A job reports its own outcome; one that panics drops its answer
            // channel (its caller gets an error) and the queue goes on.
            if catch_unwind(AssertUnwindSafe(|| job(&pool, &mut drain))).is_err() {
                tracing::error!("a queued adapter call panicked");
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    struct Pool {
        backlog: Backlog<Pool>,
        ran: Mutex<Vec<usize>>,
        threads: Mutex<Vec<std::thread::ThreadId>>,
    }

    impl Drained for Pool {
        type Drain = ();
        fn backlog(&self) -> &Backlog<Self> {
            &self.backlog
        }
        fn settle(&self, _: &mut ()) {}
    }

    fn pool(permits: usize) -> Arc<Pool> {
        Arc::new(Pool { backlog: Backlog::new(permits), ran: Mutex::default(), threads: Mutex::default() })
    }

    /// Queues a job recording `n`, answering on the returned channel.
    fn queue(pool: &Arc<Pool>, n: usize) -> tokio::sync::oneshot::Receiver<usize> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job<Pool> = Box::new(move |p: &Pool, _: &mut ()| {
            p.ran.lock().unwrap_or_else(PoisonError::into_inner).push(n);
            p.threads.lock().unwrap_or_else(PoisonError::into_inner).push(std::thread::current().id());
            let _ = tx.send(n);
        });
        assert!(pool.backlog.push(pool, job).is_ok());
        rx
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn queued_calls_run_in_order_on_one_thread_once_the_holder_hands_over()
    -> Result<(), Box<dyn std::error::Error>> {
        let pool = pool(1);
        let held = pool.backlog.run_now().ok_or("the only permit is free")?;
        assert!(pool.backlog.run_now().is_none(), "no second permit");
        let answers: Vec<_> = (0..50).map(|n| queue(&pool, n)).collect();
        assert_eq!(pool.backlog.queued(), 50, "nothing runs while the permit is held");
        pool.backlog.release(&pool, held);
        for (n, answer) in answers.into_iter().enumerate() {
            assert_eq!(answer.await?, n);
        }
        assert_eq!(*pool.ran.lock().unwrap_or_else(PoisonError::into_inner), (0..50).collect::<Vec<_>>());
        let threads = pool.threads.lock().unwrap_or_else(PoisonError::into_inner).clone();
        assert!(threads.iter().all(|t| *t == threads[0]), "one drainer ran them back to back");
        // The drainer gave the permit back once the queue was empty.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while pool.backlog.run_now().is_none() {
            assert!(std::time::Instant::now() < deadline, "the permit never came back");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_queued_with_a_permit_free_starts_at_once_and_none_is_ever_stranded()
    -> Result<(), Box<dyn std::error::Error>> {
        let pool = pool(3);
        let done = Arc::new(AtomicUsize::new(0));
        let mut callers = Vec::new();
        for n in 0..400 {
            let (pool, done) = (Arc::clone(&pool), Arc::clone(&done));
            callers.push(tokio::spawn(async move {
                // Half run at once when they can, half always queue: both paths race.
                if n % 2 == 0
                    && let Some(permit) = pool.backlog.run_now()
                {
                    done.fetch_add(1, Ordering::Relaxed);
                    pool.backlog.release(&pool, permit);
                    return Ok(n);
                }
                let answer = queue(&pool, n).await;
                done.fetch_add(1, Ordering::Relaxed);
                answer
            }));
        }
        for (n, caller) in callers.into_iter().enumerate() {
            let answer = tokio::time::timeout(Duration::from_secs(30), caller).await??;
            assert_eq!(answer?, n);
        }
        assert_eq!(done.load(Ordering::Relaxed), 400);
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_call_fails_alone_and_closing_refuses_new_ones() -> Result<(), Box<dyn std::error::Error>> {
        let pool = pool(1);
        let held = pool.backlog.run_now().ok_or("the only permit is free")?;
        let (tx, panicked) = tokio::sync::oneshot::channel::<()>();
        let job: Job<Pool> = Box::new(move |_, _| {
            let _keep = tx;
            panic!("a bug in a call");
        });
        assert!(pool.backlog.push(&pool, job).is_ok());
        let after = queue(&pool, 7);
        pool.backlog.release(&pool, held);
        assert!(panicked.await.is_err(), "the panicking call's caller hears of it");
        assert_eq!(after.await?, 7, "the call behind it still runs");
        pool.backlog.close(1).await;
        let refused = pool.backlog.push(&pool, Box::new(|_, _| {}));
        assert!(refused.is_err(), "a closed pool queues nothing");
        assert!(pool.backlog.run_now().is_none(), "nor runs anything");
        Ok(())
    }
}
