//! An adapter instance: its wasmtime store with the capabilities its store
//! grants, its exports, and what the host keeps beside them (its plans and
//! the heads the append plan runs from; the current call's deadline is its SQL
//! session's).

use std::sync::atomic::Ordering;

use wasmtime::component::ResourceTable;
use wasmtime_wasi::WasiCtx;

use super::super::loader::{PlanIndices, Pre};
use super::super::state::{AdapterState, Limiter};
use super::super::supervisor::Counters;
use super::{AppendPlan, Heads, InstancePool, LoadPlan};
use crate::capability::log::LogSink;
use crate::capability::sql::SqlSession;
use crate::capability::{Capability, filesystem};
use crate::error::{Error, LoadError};
use crate::wit::{v0_1, v0_2};

/// An instance's exports, per contract version.
pub enum Bindings {
    V0_1(v0_1::SqlAdapter),
    V0_2(v0_2::SqlAdapter),
}

/// One live adapter instance.
pub struct Instance {
    pub store: wasmtime::Store<AdapterState>,
    pub bindings: Bindings,
    /// The adapter's load plan, when it exports one.
    pub load_plan: LoadPlan,
    /// The adapter's append plan, when it exports one.
    pub append_plan: AppendPlan,
    /// The heads this instance last saw, which its append plan runs from.
    pub heads: Heads,
    /// Appends stored from the append plan since the last call began (added to
    /// the pool's counters after each call).
    pub planned_appends: u64,
    /// Loads answered from the plan since the last call began (added to the
    /// pool's counters after each call).
    pub planned_loads: u64,
}

impl InstancePool {
    pub(super) fn instantiate(&self, counters: &Counters) -> Result<Instance, Error> {
        let settings = &self.settings;
        let fail = |reason: String| Error::Load(LoadError::Instantiate { what: self.image.what.clone(), reason });
        let mut wasi = WasiCtx::builder();
        // Calls already run on a blocking thread: let WASI do file I/O in place.
        wasi.allow_blocking_current_thread(true);
        if settings.grants.contains(Capability::Filesystem) {
            filesystem::preopen(&mut wasi, &settings.adapter_dir)
                .map_err(|e| fail(format!("preopening {}: {e:#}", settings.adapter_dir.display())))?;
        }
        #[cfg(feature = "fault-injection")]
        let power_loss = filesystem::power_loss::attach(settings.power_loss.as_ref(), &mut wasi, &settings.adapter_dir)
            .map_err(|e| fail(e.to_string()))?;
        let state = AdapterState {
            wasi: wasi.build(),
            table: ResourceTable::new(),
            limiter: Limiter { memory_bytes: settings.limits.memory_bytes, table_elements: 100_000 },
            log: LogSink::new(settings.store_name.clone()),
            sql: settings.sql.clone().map_or_else(SqlSession::ungranted, SqlSession::new),
            #[cfg(feature = "fault-injection")]
            power_loss,
        };
        let mut store = wasmtime::Store::new(&self.engine, state);
        store.limiter(|state| &mut state.limiter);
        store.set_epoch_deadline(settings.deadline_ticks);
        store.epoch_deadline_trap();
        let limits = &settings.limits;
        let bindings = match &self.image.pre {
            Pre::V0_1(pre) => {
                pre.instantiate(&mut store).map(|b| (Bindings::V0_1(b), LoadPlan::None, AppendPlan::None))
            }
            Pre::V0_2(pre, Some(plans)) if limits.load_plans || limits.append_plans => {
                let PlanIndices { contract, reader, writer } = &**plans;
                pre.instance_pre().instantiate(&mut store).and_then(|instance| {
                    let bindings = Bindings::V0_2(contract.load(&mut store, &instance)?);
                    let load = match reader.as_ref().filter(|_| limits.load_plans) {
                        Some(reader) => LoadPlan::Unasked(reader.load(&mut store, &instance)?),
                        None => LoadPlan::None,
                    };
                    let append = match writer.as_ref().filter(|_| limits.append_plans) {
                        Some(writer) => AppendPlan::Unasked(writer.load(&mut store, &instance)?),
                        None => AppendPlan::None,
                    };
                    Ok((bindings, load, append))
                })
            }
            Pre::V0_2(pre, _) => {
                pre.instantiate(&mut store).map(|b| (Bindings::V0_2(b), LoadPlan::None, AppendPlan::None))
            }
        };
        let (bindings, load_plan, append_plan) =
            bindings.map_err(|err| self.classify(err, "instantiating", counters))?;
        counters.instantiations.fetch_add(1, Ordering::Relaxed);
        Ok(Instance {
            store,
            bindings,
            load_plan,
            append_plan,
            heads: Heads::default(),
            planned_appends: 0,
            planned_loads: 0,
        })
    }
}
