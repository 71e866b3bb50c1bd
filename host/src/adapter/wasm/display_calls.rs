//! The display-store backend trait for [`WasmBackend`], like `calls.rs` for the
//! conversation store; the start-up sweep visits every tenant's pool.

use std::future::Future;

use super::{WasmBackend, v0_1, v0_2};
use crate::adapter::backend::DisplayBackend;
use crate::adapter::pool::Bindings;
use crate::adapter::raw::{DisplayPosition, InsertReply, RawLocated, RawStoredDisplay};
use crate::error::Error;
use crate::model::Scope;

impl DisplayBackend for WasmBackend {
    fn display_insert(
        &self,
        scope: &Scope,
        id: &str,
        records: Vec<RawStoredDisplay>,
    ) -> impl Future<Output = Result<InsertReply, Error>> + Send {
        let (scope, id) = (scope.clone(), id.to_owned());
        async move {
            self.call(&scope.tenant.clone(), move |i| match &i.bindings {
                Bindings::V0_2(b) => {
                    let seqs: Vec<u64> = records.iter().map(|r| r.seq).collect();
                    let wit: Vec<_> = records.into_iter().map(v0_2::display).collect();
                    Ok(b.stowage_store_display_store()
                        .call_insert(&mut i.store, &v0_2::scope(&scope), &id, &wit)?
                        .map(|o| v0_2::insert_back(o, seqs))
                        .map_err(v0_2::error))
                }
                Bindings::V0_1(b) => {
                    let wit = match records.iter().map(|r| v0_1::display(&r.record)).collect::<Result<Vec<_>, _>>() {
                        Ok(wit) => wit,
                        Err(e) => return Ok(Err(e)),
                    };
                    Ok(b.stowage_store_display_store()
                        .call_insert(&mut i.store, &v0_1::scope(&scope), &id, &wit)?
                        .map(|seqs| InsertReply::Stored { seqs })
                        .map_err(v0_1::error))
                }
            })
            .await
        }
    }

    fn display_by_call(
        &self,
        scope: &Scope,
        id: &str,
        call_id: &str,
    ) -> impl Future<Output = Result<Vec<RawStoredDisplay>, Error>> + Send {
        let (scope, id, call) = (scope.clone(), id.to_owned(), call_id.to_owned());
        async move {
            self.call(&scope.tenant.clone(), move |i| match &i.bindings {
                Bindings::V0_2(b) => Ok(b
                    .stowage_store_display_store()
                    .call_by_tool_call_id(&mut i.store, &v0_2::scope(&scope), &id, &call)?
                    .map(|found| found.into_iter().map(v0_2::display_back).collect())
                    .map_err(v0_2::error)),
                Bindings::V0_1(b) => Ok(b
                    .stowage_store_display_store()
                    .call_by_tool_call_id(&mut i.store, &v0_1::scope(&scope), &id, &call)?
                    .map_err(v0_1::error)
                    .and_then(|found| found.into_iter().map(v0_1::display_back).collect())),
            })
            .await
        }
    }

    fn display_update(
        &self,
        scope: &Scope,
        id: &str,
        record: RawStoredDisplay,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        let (scope, id) = (scope.clone(), id.to_owned());
        async move {
            self.call(&scope.tenant.clone(), move |i| match &i.bindings {
                Bindings::V0_2(b) => Ok(b
                    .stowage_store_display_store()
                    .call_update(&mut i.store, &v0_2::scope(&scope), &id, &v0_2::display(record))?
                    .map_err(v0_2::error)),
                Bindings::V0_1(b) => {
                    let wit = match v0_1::display(&record.record) {
                        Ok(wit) => wit,
                        Err(e) => return Ok(Err(e)),
                    };
                    Ok(b.stowage_store_display_store()
                        .call_update(&mut i.store, &v0_1::scope(&scope), &id, record.seq, &wit)?
                        .map_err(v0_1::error))
                }
            })
            .await
        }
    }

    fn display_list(
        &self,
        scope: &Scope,
        id: &str,
        after: u64,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<RawStoredDisplay>, Error>> + Send {
        let (scope, id) = (scope.clone(), id.to_owned());
        async move {
            self.call(&scope.tenant.clone(), move |i| match &i.bindings {
                Bindings::V0_2(b) => Ok(b
                    .stowage_store_display_store()
                    .call_list(&mut i.store, &v0_2::scope(&scope), &id, after, limit)?
                    .map(|found| found.into_iter().map(v0_2::display_back).collect())
                    .map_err(v0_2::error)),
                Bindings::V0_1(b) => Ok(b
                    .stowage_store_display_store()
                    .call_list(&mut i.store, &v0_1::scope(&scope), &id, after, limit)?
                    .map_err(v0_1::error)
                    .and_then(|found| found.into_iter().map(v0_1::display_back).collect())),
            })
            .await
        }
    }

    async fn display_find_by_status(
        &self,
        statuses: Vec<String>,
        after: Option<DisplayPosition>,
        limit: u32,
    ) -> Result<Vec<RawLocated>, Error> {
        let tenants = self.sweep_tenants(after.as_ref()).await?;
        let mut found = Vec::new();
        for tenant in tenants {
            let want = limit.saturating_sub(u32::try_from(found.len()).unwrap_or(u32::MAX));
            if want == 0 {
                break;
            }
            let (statuses, after) = (statuses.clone(), after.clone());
            let page: Vec<RawLocated> = self
                .call(&tenant, move |i| match &i.bindings {
                    Bindings::V0_2(b) => {
                        let position = after.as_ref().map(v0_2::position);
                        Ok(b.stowage_store_display_store()
                            .call_find_by_status(&mut i.store, &statuses, position.as_ref(), want)?
                            .map(|found| found.into_iter().map(v0_2::located_back).collect())
                            .map_err(v0_2::error))
                    }
                    Bindings::V0_1(b) => Ok(b
                        .stowage_store_display_store()
                        .call_find_by_status(&mut i.store, &statuses, want)?
                        .map_err(v0_1::error)
                        .and_then(|found| found.into_iter().map(v0_1::located_back).collect())),
                })
                .await?;
            found.extend(page);
        }
        Ok(found)
    }
}

impl WasmBackend {
    /// The tenants a sweep must visit from `after` on: the shared pool's (one
    /// pass), or every tenant directory from `after`'s tenant, in byte order.
    async fn sweep_tenants(&self, after: Option<&DisplayPosition>) -> Result<Vec<String>, Error> {
        if self.generation_now().shared.is_some() {
            return Ok(vec![String::new()]);
        }
        let layout = self.shared.setup.layout.clone();
        let tenants = tokio::task::spawn_blocking(move || layout.tenants())
            .await
            .map_err(|e| Error::Internal(format!("listing tenants failed: {e}")))??;
        let from = after.map(|p| p.scope.tenant.as_str()).unwrap_or("");
        Ok(tenants.into_iter().filter(|t| t.as_str() >= from).collect())
    }
}
