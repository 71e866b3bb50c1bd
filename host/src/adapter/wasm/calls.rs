//! The conversation-store backend trait for [`WasmBackend`]: each method picks the
//! tenant's pool and calls the adapter's export for its contract version,
//! converting on the thread that runs the call (`display_calls.rs` does the same
//! for the display store).

use std::future::Future;

use super::plan::{self, Appended, Planned};
use super::{WasmBackend, v0_1, v0_2};
use crate::adapter::backend::{ConversationBackend, Features};
use crate::adapter::pool::{Bindings, Head, Instance};
use crate::adapter::raw::{AppendReply, Range, RawInfo, RawMeta, RawStored, TruncateReply};
use crate::error::Error;
use crate::model::Scope;

/// Remembers the head of an `info` the adapter answered as the next append's
/// guess, if the append plan may still run; passes the answer on.
fn saw(i: &mut Instance, scope: &Scope, id: &str, info: Result<RawInfo, Error>) -> Result<RawInfo, Error> {
    if let Ok(info) = &info
        && i.append_plan.may_run()
    {
        i.heads.set(scope, id, Head { version: info.version, last_seq: info.last_seq });
    }
    info
}

impl WasmBackend {
    /// Runs `f` on an instance of `tenant`'s pool; `f` returns the contract result.
    pub(super) async fn call<R, F>(&self, tenant: &str, f: F) -> Result<R, Error>
    where
        R: Send + 'static,
        F: FnOnce(&mut Instance) -> wasmtime::Result<Result<R, Error>> + Send + 'static,
    {
        self.pool_for(tenant).await?.run(f).await?
    }
}

impl ConversationBackend for WasmBackend {
    fn features(&self) -> Features {
        Features::of(self.version())
    }

    fn open(
        &self,
        scope: &Scope,
        id: &str,
        meta: RawMeta,
        now: i64,
    ) -> impl Future<Output = Result<RawInfo, Error>> + Send {
        let (scope, id) = (scope.clone(), id.to_owned());
        async move {
            self.call(&scope.tenant.clone(), move |i| match &i.bindings {
                Bindings::V0_2(b) => {
                    let info = b
                        .stowage_store_conversation_store()
                        .call_open(&mut i.store, &v0_2::scope(&scope), &id, &v0_2::meta(meta), now)?
                        .map(v0_2::info_back)
                        .map_err(v0_2::error);
                    Ok(saw(i, &scope, &id, info))
                }
                Bindings::V0_1(b) => {
                    let meta = match v0_1::meta(&meta) {
                        Ok(meta) => meta,
                        Err(e) => return Ok(Err(e)),
                    };
                    Ok(b.stowage_store_conversation_store()
                        .call_open(&mut i.store, &v0_1::scope(&scope), &id, &meta, now)?
                        .map_err(v0_1::error)
                        .and_then(v0_1::info_back))
                }
            })
            .await
        }
    }

    fn info(&self, scope: &Scope, id: &str) -> impl Future<Output = Result<RawInfo, Error>> + Send {
        let (scope, id) = (scope.clone(), id.to_owned());
        async move {
            self.call(&scope.tenant.clone(), move |i| match &i.bindings {
                Bindings::V0_2(b) => {
                    let info = b
                        .stowage_store_conversation_store()
                        .call_info(&mut i.store, &v0_2::scope(&scope), &id)?
                        .map(v0_2::info_back)
                        .map_err(v0_2::error);
                    Ok(saw(i, &scope, &id, info))
                }
                Bindings::V0_1(b) => Ok(b
                    .stowage_store_conversation_store()
                    .call_info(&mut i.store, &v0_1::scope(&scope), &id)?
                    .map_err(v0_1::error)
                    .and_then(v0_1::info_back)),
            })
            .await
        }
    }

    fn update_meta(&self, scope: &Scope, id: &str, meta: RawMeta) -> impl Future<Output = Result<(), Error>> + Send {
        let (scope, id) = (scope.clone(), id.to_owned());
        async move {
            self.call(&scope.tenant.clone(), move |i| match &i.bindings {
                Bindings::V0_2(b) => Ok(b
                    .stowage_store_conversation_store()
                    .call_update_meta(&mut i.store, &v0_2::scope(&scope), &id, &v0_2::meta(meta))?
                    .map_err(v0_2::error)),
                Bindings::V0_1(_) => Ok(Err(Error::Unsupported(
                    "changing a conversation's meta needs an adapter built for 0.2.0".into(),
                ))),
            })
            .await
        }
    }

    fn append(
        &self,
        scope: &Scope,
        id: &str,
        messages: Vec<RawStored>,
        expected_version: Option<u64>,
        now: i64,
    ) -> impl Future<Output = Result<AppendReply, Error>> + Send {
        let (scope, id) = (scope.clone(), id.to_owned());
        let store = self.store_name().to_owned();
        async move {
            self.call(&scope.tenant.clone(), move |i| {
                let mut messages = messages;
                // A 0.1.0 instance has no plan (and so no heads): the adapter answers.
                match plan::append(i, &scope, &id, &mut messages, expected_version, now)? {
                    Appended::Stored(version) => {
                        let seqs: Vec<u64> = messages.iter().map(|m| m.seq).collect();
                        let stored = u32::try_from(seqs.len()).unwrap_or(u32::MAX);
                        return Ok(Ok(AppendReply::Stored { version, seqs, stored }));
                    }
                    Appended::Violation(what) => {
                        let message = format!("conversation `{id}`: {what}");
                        return Ok(Err(Error::ContractViolation { store, message }));
                    }
                    Appended::Storage(reason) => {
                        return Ok(Err(Error::Storage(format!("conversation `{id}`: storing the batch: {reason}"))));
                    }
                    Appended::AskAdapter => {}
                }
                match &i.bindings {
                    Bindings::V0_2(b) => {
                        let seqs: Vec<u64> = messages.iter().map(|m| m.seq).collect();
                        let wit: Vec<_> = messages.into_iter().map(v0_2::stored).collect();
                        let reply = b
                            .stowage_store_conversation_store()
                            .call_append(&mut i.store, &v0_2::scope(&scope), &id, &wit, expected_version, now)?
                            .map(|o| v0_2::append_back(o, seqs))
                            .map_err(v0_2::error);
                        match &reply {
                            Ok(AppendReply::Stored { version, seqs, .. }) if i.append_plan.may_run() => {
                                let last_seq = seqs.iter().copied().max().unwrap_or_default();
                                i.heads.set(&scope, &id, Head { version: *version, last_seq });
                            }
                            _ => i.heads.forget(&scope, &id),
                        }
                        Ok(reply)
                    }
                    Bindings::V0_1(b) => {
                        let wit = match v0_1::messages(&messages) {
                            Ok(wit) => wit,
                            Err(e) => return Ok(Err(e)),
                        };
                        Ok(b.stowage_store_conversation_store()
                            .call_append(&mut i.store, &v0_1::scope(&scope), &id, &wit, expected_version, now)?
                            .map(v0_1::append_back)
                            .map_err(v0_1::error))
                    }
                }
            })
            .await
        }
    }

    fn replace(
        &self,
        scope: &Scope,
        id: &str,
        messages: Vec<RawStored>,
        expected_version: Option<u64>,
        now: i64,
    ) -> impl Future<Output = Result<u64, Error>> + Send {
        let (scope, id) = (scope.clone(), id.to_owned());
        async move {
            self.call(&scope.tenant.clone(), move |i| {
                // The head changes (or goes): the next append asks the adapter.
                i.heads.forget(&scope, &id);
                match &i.bindings {
                    Bindings::V0_2(b) => {
                        let wit: Vec<_> = messages.into_iter().map(v0_2::stored).collect();
                        Ok(b.stowage_store_conversation_store()
                            .call_replace(&mut i.store, &v0_2::scope(&scope), &id, &wit, expected_version, now)?
                            .map_err(v0_2::error))
                    }
                    Bindings::V0_1(b) => {
                        let wit = match v0_1::messages(&messages) {
                            Ok(wit) => wit,
                            Err(e) => return Ok(Err(e)),
                        };
                        Ok(b.stowage_store_conversation_store()
                            .call_replace(&mut i.store, &v0_1::scope(&scope), &id, &wit, expected_version, now)?
                            .map_err(v0_1::error))
                    }
                }
            })
            .await
        }
    }

    fn load(
        &self,
        scope: &Scope,
        id: &str,
        range: Range,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<RawStored>, Error>> + Send {
        let (scope, id) = (scope.clone(), id.to_owned());
        let store = self.store_name().to_owned();
        async move {
            self.call(&scope.tenant.clone(), move |i| match plan::load(i, &scope, &id, range, limit)? {
                Planned::Records(found) => Ok(Ok(found)),
                Planned::Malformed(what) => {
                    Ok(Err(Error::ContractViolation { store, message: format!("conversation `{id}`: {what}") }))
                }
                Planned::Damaged(what) => Ok(Err(Error::Storage(format!("conversation `{id}`: {what}")))),
                Planned::AskAdapter | Planned::Writes => match &i.bindings {
                    Bindings::V0_2(b) => Ok(b
                        .stowage_store_conversation_store()
                        .call_load(&mut i.store, &v0_2::scope(&scope), &id, v0_2::range(range), limit)?
                        .map(|found| found.into_iter().map(v0_2::stored_back).collect())
                        .map_err(v0_2::error)),
                    Bindings::V0_1(b) => Ok(b
                        .stowage_store_conversation_store()
                        .call_load(&mut i.store, &v0_1::scope(&scope), &id, v0_1::range(range), limit)?
                        .map_err(v0_1::error)
                        .and_then(|found| found.into_iter().map(v0_1::stored_back).collect())),
                },
            })
            .await
        }
    }

    fn truncate_after(
        &self,
        scope: &Scope,
        id: &str,
        seq: u64,
        expected_version: Option<u64>,
        now: i64,
    ) -> impl Future<Output = Result<TruncateReply, Error>> + Send {
        let (scope, id) = (scope.clone(), id.to_owned());
        async move {
            self.call(&scope.tenant.clone(), move |i| {
                // The head changes (or goes): the next append asks the adapter.
                i.heads.forget(&scope, &id);
                match &i.bindings {
                    Bindings::V0_2(b) => Ok(b
                        .stowage_store_conversation_store()
                        .call_truncate_after(&mut i.store, &v0_2::scope(&scope), &id, seq, expected_version, now)?
                        .map(v0_2::truncate_back)
                        .map_err(v0_2::error)),
                    Bindings::V0_1(b) => Ok(b
                        .stowage_store_conversation_store()
                        .call_truncate_after(&mut i.store, &v0_1::scope(&scope), &id, seq, expected_version, now)?
                        .map(|o| TruncateReply { removed: o.removed, version: o.version })
                        .map_err(v0_1::error)),
                }
            })
            .await
        }
    }

    fn delete(&self, scope: &Scope, id: &str) -> impl Future<Output = Result<bool, Error>> + Send {
        let (scope, id) = (scope.clone(), id.to_owned());
        async move {
            self.call(&scope.tenant.clone(), move |i| {
                // The head changes (or goes): the next append asks the adapter.
                i.heads.forget(&scope, &id);
                match &i.bindings {
                    Bindings::V0_2(b) => Ok(b
                        .stowage_store_conversation_store()
                        .call_delete(&mut i.store, &v0_2::scope(&scope), &id)?
                        .map_err(v0_2::error)),
                    Bindings::V0_1(b) => Ok(b
                        .stowage_store_conversation_store()
                        .call_delete(&mut i.store, &v0_1::scope(&scope), &id)?
                        .map_err(v0_1::error)),
                }
            })
            .await
        }
    }

    fn list(
        &self,
        scope: &Scope,
        after: Option<String>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<RawInfo>, Error>> + Send {
        let scope = scope.clone();
        async move {
            self.call(&scope.tenant.clone(), move |i| match &i.bindings {
                Bindings::V0_2(b) => Ok(b
                    .stowage_store_conversation_store()
                    .call_list(&mut i.store, &v0_2::scope(&scope), after.as_deref(), limit)?
                    .map(|found| found.into_iter().map(v0_2::info_back).collect())
                    .map_err(v0_2::error)),
                Bindings::V0_1(b) => Ok(b
                    .stowage_store_conversation_store()
                    .call_list(&mut i.store, &v0_1::scope(&scope), after.as_deref(), limit)?
                    .map_err(v0_1::error)
                    .and_then(|found| found.into_iter().map(v0_1::info_back).collect())),
            })
            .await
        }
    }
}
