//! A fair in-process lock on a SQLite database's write transactions.
//!
//! SQLite lets one writer in at a time and makes the others poll with growing
//! sleeps (its busy handler), which is unfair: under many concurrent writers one
//! of them can wait past the busy timeout while others get in again and again.
//! Every connection of one host to one database file therefore queues here
//! first, first come first served, and is woken the moment the writer before it
//! finishes. SQLite's own locking still guards against other processes.

use std::collections::BTreeSet;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::wit::SqlErrorKind;

#[derive(Default)]
struct Queue {
    /// The next ticket to hand out.
    next: u64,
    /// The ticket whose holder may write.
    serving: u64,
    /// Tickets whose holders gave up waiting.
    abandoned: BTreeSet<u64>,
    /// Callers asleep on the condition variable: a turn ends without waking
    /// anyone (a system call) when there are none, as for every lone writer.
    sleeping: usize,
}

impl Queue {
    /// Moves to the next ticket still waited for.
    fn advance(&mut self) {
        self.serving += 1;
        while self.abandoned.remove(&self.serving) {
            self.serving += 1;
        }
    }
}

/// The write queue of one database file.
#[derive(Default)]
pub struct WriteGate {
    queue: Mutex<Queue>,
    turn: Condvar,
}

/// The right to write, until dropped.
pub struct WriteTurn {
    gate: Arc<WriteGate>,
}

impl Drop for WriteTurn {
    fn drop(&mut self) {
        let mut queue = self.gate.queue();
        queue.advance();
        let wake = queue.sleeping > 0;
        drop(queue);
        if wake {
            self.gate.turn.notify_all();
        }
    }
}

impl WriteGate {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for this caller's turn to write, at most `timeout`; `busy` after.
    pub fn enter(self: &Arc<Self>, timeout: Duration) -> Result<WriteTurn, SqlErrorKind> {
        let deadline = Instant::now() + timeout;
        let mut queue = self.queue();
        let ticket = queue.next;
        queue.next += 1;
        while queue.serving != ticket {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                queue.abandoned.insert(ticket);
                return Err(SqlErrorKind::Busy);
            }
            queue.sleeping += 1;
            queue = self.turn.wait_timeout(queue, left).unwrap_or_else(PoisonError::into_inner).0;
            queue.sleeping -= 1;
        }
        Ok(WriteTurn { gate: Arc::clone(self) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writers_enter_one_at_a_time_in_arrival_order() -> Result<(), Box<dyn std::error::Error>> {
        let gate = Arc::new(WriteGate::default());
        let first = gate.enter(Duration::from_secs(5)).map_err(|e| format!("{e:?}"))?;
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for i in 0..4 {
            let (queued, order) = (Arc::clone(&gate), Arc::clone(&order));
            waiters.push(std::thread::spawn(move || {
                let turn = queued.enter(Duration::from_secs(30));
                order.lock().unwrap_or_else(PoisonError::into_inner).push((i, turn.is_ok()));
            }));
            // Queue them in a known order.
            while gate.queue().next < i + 2 {
                std::thread::yield_now();
            }
        }
        drop(first);
        for waiter in waiters {
            waiter.join().map_err(|_| "a waiter panicked")?;
        }
        let order = order.lock().unwrap_or_else(PoisonError::into_inner).clone();
        assert_eq!(order, vec![(0, true), (1, true), (2, true), (3, true)]);
        assert_eq!(gate.queue().sleeping, 0, "every sleeper was woken and counted out");
        Ok(())
    }

    #[test]
    fn a_writer_that_gives_up_does_not_block_the_next() -> Result<(), Box<dyn std::error::Error>> {
        let gate = Arc::new(WriteGate::default());
        let holder = gate.enter(Duration::ZERO).map_err(|e| format!("{e:?}"))?;
        assert!(matches!(gate.enter(Duration::ZERO), Err(SqlErrorKind::Busy)), "a timed-out wait is busy");
        assert!(
            matches!(gate.enter(Duration::from_millis(20)), Err(SqlErrorKind::Busy)),
            "a wait that slept and timed out is busy"
        );
        assert_eq!(gate.queue().sleeping, 0, "a sleeper that timed out is counted out");
        drop(holder);
        gate.enter(Duration::ZERO).map_err(|e| format!("the abandoned ticket is skipped: {e:?}"))?;
        Ok(())
    }
}
