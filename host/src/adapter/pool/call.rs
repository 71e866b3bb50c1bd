//! One call on one instance: taking an idle instance (or creating one), running
//! the call under its deadline, and keeping or discarding the instance after it.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::super::supervisor::{Admission, Counters};
use super::{Instance, InstancePool, PendingSync};
use crate::error::Error;
use crate::wit::SqlErrorKind;

impl InstancePool {
    pub(super) fn run_blocking<R, F>(
        &self,
        call: F,
        admission: Admission,
        restarting: bool,
        counters: &Counters,
    ) -> Result<(R, PendingSync), Error>
    where
        F: FnOnce(&mut Instance) -> wasmtime::Result<R>,
    {
        let mut slot = None;
        let done = self.call_in(&mut slot, &mut None, call, admission, restarting, counters);
        if let Some(instance) = slot {
            self.keep(instance);
        }
        done
    }

    /// An idle instance, or a new one.
    pub(super) fn take_instance(
        &self,
        admission: Admission,
        restarting: bool,
        counters: &Counters,
    ) -> Result<Instance, Error> {
        if let Some(instance) = self.idle.lock().ok().and_then(|mut idle| idle.pop()) {
            return Ok(instance);
        }
        match self.instantiate(counters) {
            Ok(instance) => {
                if restarting {
                    counters.restarts.fetch_add(1, Ordering::Relaxed);
                }
                Ok(instance)
            }
            Err(error) => {
                self.supervisor.failure(&error, admission);
                Err(error)
            }
        }
    }

    /// Gives an instance back to the idle ones (dropped once the pool closed).
    pub(super) fn keep(&self, instance: Instance) {
        if !self.closed.load(Ordering::Acquire)
            && let Ok(mut idle) = self.idle.lock()
        {
            idle.push(instance);
        }
    }

    /// Runs `call` on the instance in `slot` (an idle or a new one if empty) and
    /// leaves it there if it may serve again. A discarded instance's commit
    /// group is closed first, its outcome put in `group`.
    pub(super) fn call_in<R, F>(
        &self,
        slot: &mut Option<Instance>,
        group: &mut Option<Result<PendingSync, SqlErrorKind>>,
        call: F,
        admission: Admission,
        restarting: bool,
        counters: &Counters,
    ) -> Result<(R, PendingSync), Error>
    where
        F: FnOnce(&mut Instance) -> wasmtime::Result<R>,
    {
        let mut instance = match slot.take() {
            Some(instance) => instance,
            None => self.take_instance(admission, restarting, counters)?,
        };
        instance.store.data_mut().log.reset();
        instance.store.set_epoch_deadline(self.settings.deadline_ticks);
        // The same deadline for the statements the call sends (and the host's
        // plans run for it), which no epoch reaches; cleared before the host's
        // own statements after the call (a group's commit, a rollback).
        let sql = &instance.store.data().sql;
        sql.set_deadline(Some(Instant::now() + self.settings.limits.call_timeout));
        let outcome = call(&mut instance);
        instance.store.data().sql.set_deadline(None);
        // Only a call that ran a plan touches the shared counters: every other
        // call skips the atomic adds.
        if instance.planned_loads > 0 {
            counters.planned_loads.fetch_add(std::mem::take(&mut instance.planned_loads), Ordering::Relaxed);
        }
        if instance.planned_appends > 0 {
            counters.planned_appends.fetch_add(std::mem::take(&mut instance.planned_appends), Ordering::Relaxed);
        }
        let sql = &mut instance.store.data_mut().sql;
        let commit = sql.take_ticket();
        match outcome {
            Ok(value) => {
                // A transaction the adapter left open is rolled back; if that fails
                // the connection may still hold the write lock: never reuse it.
                let reusable = match sql.reset() {
                    Ok(false) => true,
                    Ok(true) => {
                        tracing::warn!(store = %self.settings.store_name, "adapter returned with a SQL transaction open; rolled back");
                        true
                    }
                    Err(e) => {
                        tracing::warn!(store = %self.settings.store_name, error = ?e, "rolling back an abandoned transaction failed; discarding the instance");
                        false
                    }
                };
                if reusable {
                    *slot = Some(instance);
                } else {
                    *group = Some(sql.close_group());
                }
                self.supervisor.success();
                Ok((value, commit))
            }
            Err(err) => {
                let error = self.classify(err, "during the call", counters);
                tracing::warn!(store = %self.settings.store_name, %error, "discarding adapter instance");
                // The calls before it in its commit group keep their writes.
                *group = Some(sql.close_group());
                drop(instance);
                self.supervisor.failure(&error, admission);
                Err(error)
            }
        }
    }
}
