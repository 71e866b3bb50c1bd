//! Supervision of an adapter's instances: counters, consecutive failures, the
//! restart back-off and a half-open circuit breaker.
//!
//! A trap, timeout or memory-cap hit (or a failed instantiation) is a failure.
//! Each failure makes the next replacement instance wait longer (back-off × n,
//! capped); the wait happens on the async side before an instance permit is taken,
//! so it never blocks a thread or holds a permit. After `restart_budget`
//! consecutive failures the adapter is unhealthy: calls are refused at once for
//! the cool-down, then one probe call is let through; its failure re-arms the
//! breaker, its success heals it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::config::Limits;
use crate::error::Error;

/// Counters of a store's adapter, cumulative across swaps and tenants.
#[derive(Debug, Default)]
pub struct Counters {
    pub calls: AtomicU64,
    pub errors: AtomicU64,
    pub traps: AtomicU64,
    pub timeouts: AtomicU64,
    pub memory_limit_hits: AtomicU64,
    pub instantiations: AtomicU64,
    /// Instances created to replace one lost to a failure.
    pub restarts: AtomicU64,
    /// Calls refused because the adapter was unhealthy.
    pub refused: AtomicU64,
    pub swaps: AtomicU64,
    /// Calls whose writes were committed in a commit group with other calls.
    pub grouped: AtomicU64,
    /// Loads the host answered by running the adapter's load plan itself.
    pub planned_loads: AtomicU64,
    /// Appends the host stored by running the adapter's append plan itself.
    pub planned_appends: AtomicU64,
}

impl Counters {
    /// Adds every counter of `other` into this one (a swap candidate's calls).
    pub fn absorb(&self, other: &Counters) {
        for (into, from) in [
            (&self.calls, &other.calls),
            (&self.errors, &other.errors),
            (&self.traps, &other.traps),
            (&self.timeouts, &other.timeouts),
            (&self.memory_limit_hits, &other.memory_limit_hits),
            (&self.instantiations, &other.instantiations),
            (&self.restarts, &other.restarts),
            (&self.refused, &other.refused),
            (&self.grouped, &other.grouped),
            (&self.planned_loads, &other.planned_loads),
            (&self.planned_appends, &other.planned_appends),
        ] {
            into.fetch_add(from.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }
}

#[derive(Debug, Default)]
struct State {
    consecutive_failures: u32,
    last_error: Option<String>,
    unhealthy_since: Option<Instant>,
    /// Set while the one probe call after a cool-down is running.
    probing: bool,
}

/// A snapshot of the supervisor's view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthSnapshot {
    pub consecutive_failures: u32,
    pub last_error: Option<String>,
    /// Set while unhealthy: how long until a call is tried again.
    pub retry_in: Option<Duration>,
}

/// Whether a call was admitted as the breaker's probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    Normal,
    Probe,
}

pub struct Supervisor {
    store: String,
    restart_budget: u32,
    backoff: Duration,
    max_backoff: Duration,
    cooldown: Duration,
    state: Mutex<State>,
}

impl Supervisor {
    pub fn new(store: String, limits: &Limits) -> Self {
        Self {
            store,
            restart_budget: limits.restart_budget,
            backoff: Duration::from_millis(limits.restart_backoff_ms),
            max_backoff: Duration::from_millis(limits.max_restart_backoff_ms),
            cooldown: Duration::from_millis(limits.unhealthy_cooldown_ms),
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    pub fn health(&self) -> HealthSnapshot {
        let s = self.state();
        HealthSnapshot {
            consecutive_failures: s.consecutive_failures,
            last_error: s.last_error.clone(),
            retry_in: s.unhealthy_since.map(|since| self.cooldown.saturating_sub(since.elapsed())),
        }
    }

    /// Refuses calls while unhealthy; after the cool-down lets exactly one call
    /// through as a probe (others keep being refused until it ends).
    pub fn admit(&self, counters: &Counters) -> Result<Admission, Error> {
        let mut s = self.state();
        let Some(since) = s.unhealthy_since else { return Ok(Admission::Normal) };
        if since.elapsed() >= self.cooldown && !s.probing {
            s.probing = true;
            return Ok(Admission::Probe);
        }
        counters.refused.fetch_add(1, Ordering::Relaxed);
        Err(Error::Unhealthy { store: self.store.clone(), last_error: s.last_error.clone().unwrap_or_default() })
    }

    /// A failure (trap, timeout, memory cap, failed instantiation).
    pub fn failure(&self, error: &Error, admission: Admission) {
        let mut s = self.state();
        s.consecutive_failures = s.consecutive_failures.saturating_add(1);
        s.last_error = Some(error.to_string());
        if admission == Admission::Probe {
            // The probe failed: the breaker opens again for a full cool-down.
            s.probing = false;
            s.unhealthy_since = Some(Instant::now());
        } else if s.consecutive_failures >= self.restart_budget && s.unhealthy_since.is_none() {
            tracing::error!(store = %self.store, %error, failures = s.consecutive_failures, "adapter unhealthy: restart budget spent");
            s.unhealthy_since = Some(Instant::now());
        }
    }

    /// A call that completed (whatever its contract result).
    pub fn success(&self) {
        let mut s = self.state();
        if s.consecutive_failures > 0 || s.unhealthy_since.is_some() || s.probing {
            *s = State::default();
        }
    }

    /// The call ended without reaching the adapter (e.g. cancelled while waiting):
    /// a probe slot it held is given back.
    pub fn abandoned(&self, admission: Admission) {
        if admission == Admission::Probe {
            self.state().probing = false;
        }
    }

    /// How long to wait before creating a replacement instance: grows with each
    /// consecutive failure, capped; `None` when healthy.
    pub fn backoff(&self) -> Option<Duration> {
        let failures = self.state().consecutive_failures;
        (failures > 0).then(|| self.backoff.saturating_mul(failures).min(self.max_backoff))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            restart_budget: 2,
            restart_backoff_ms: 100,
            max_restart_backoff_ms: 250,
            unhealthy_cooldown_ms: 0,
            ..Limits::default()
        }
    }

    fn trap() -> Error {
        Error::Trap { store: "s".into(), message: "boom".into() }
    }

    #[test]
    fn back_off_grows_with_each_failure_and_is_capped() {
        let s = Supervisor::new("s".into(), &Limits { restart_budget: 100, ..limits() });
        assert_eq!(s.backoff(), None);
        let waits: Vec<_> = (0..4)
            .map(|_| {
                s.failure(&trap(), Admission::Normal);
                s.backoff().map(|d| d.as_millis())
            })
            .collect();
        assert_eq!(waits, [Some(100), Some(200), Some(250), Some(250)]);
        s.success();
        assert_eq!(s.backoff(), None);
    }

    #[test]
    fn the_breaker_lets_one_probe_through_and_a_failed_probe_rearms_it() -> Result<(), Error> {
        let counters = Counters::default();
        let s = Supervisor::new("s".into(), &limits());
        for _ in 0..2 {
            s.failure(&trap(), s.admit(&counters)?);
        }
        assert!(s.health().retry_in.is_some(), "unhealthy after the budget");
        assert_eq!(s.admit(&counters)?, Admission::Probe, "cool-down of 0: a probe goes through");
        assert!(matches!(s.admit(&counters), Err(Error::Unhealthy { .. })), "only one probe at a time");
        assert_eq!(counters.refused.load(Ordering::Relaxed), 1);
        s.failure(&trap(), Admission::Probe);
        assert!(s.health().retry_in.is_some(), "a failed probe re-arms the breaker");
        assert_eq!(s.admit(&counters)?, Admission::Probe);
        s.success();
        assert_eq!(s.health(), HealthSnapshot { consecutive_failures: 0, last_error: None, retry_in: None });
        assert_eq!(s.admit(&counters)?, Admission::Normal);
        Ok(())
    }
}
