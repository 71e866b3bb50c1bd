//! The seam between the host's logic and an adapter: one typed method per WIT
//! function, per contract (conversation store, display store). [`WasmBackend`]
//! calls a component; tests use an in-memory fake. Nothing here checks answers:
//! that is the checked client's job, once, for every backend.
//!
//! [`WasmBackend`]: super::wasm::WasmBackend

use std::future::Future;

use super::raw::{
    AppendReply, DisplayPosition, InsertReply, Range, RawInfo, RawLocated, RawMeta, RawStored, RawStoredDisplay,
    TruncateReply,
};
use crate::error::Error;
use crate::model::Scope;
use crate::wit::ContractVersion;

/// What a backend's contract version lets the host rely on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Features {
    pub version: ContractVersion,
    /// Records keep the host's tags (0.2.0).
    pub tags: bool,
    /// The host numbers appends and display inserts (0.2.0).
    pub host_seqs: bool,
    /// `find-by-status` pages with a position (0.2.0).
    pub paged_sweep: bool,
}

impl Features {
    pub fn of(version: ContractVersion) -> Self {
        let v2 = version >= ContractVersion::V0_2;
        Self { version, tags: v2, host_seqs: v2, paged_sweep: v2 }
    }
}

/// `conversation-store`, as the host calls it.
pub trait ConversationBackend: Send + Sync + 'static {
    fn features(&self) -> Features;
    fn open(
        &self,
        scope: &Scope,
        id: &str,
        meta: RawMeta,
        now: i64,
    ) -> impl Future<Output = Result<RawInfo, Error>> + Send;
    fn info(&self, scope: &Scope, id: &str) -> impl Future<Output = Result<RawInfo, Error>> + Send;
    fn update_meta(&self, scope: &Scope, id: &str, meta: RawMeta) -> impl Future<Output = Result<(), Error>> + Send;
    fn append(
        &self,
        scope: &Scope,
        id: &str,
        messages: Vec<RawStored>,
        expected_version: Option<u64>,
        now: i64,
    ) -> impl Future<Output = Result<AppendReply, Error>> + Send;
    fn replace(
        &self,
        scope: &Scope,
        id: &str,
        messages: Vec<RawStored>,
        expected_version: Option<u64>,
        now: i64,
    ) -> impl Future<Output = Result<u64, Error>> + Send;
    fn load(
        &self,
        scope: &Scope,
        id: &str,
        range: Range,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<RawStored>, Error>> + Send;
    fn truncate_after(
        &self,
        scope: &Scope,
        id: &str,
        seq: u64,
        expected_version: Option<u64>,
        now: i64,
    ) -> impl Future<Output = Result<TruncateReply, Error>> + Send;
    fn delete(&self, scope: &Scope, id: &str) -> impl Future<Output = Result<bool, Error>> + Send;
    fn list(
        &self,
        scope: &Scope,
        after: Option<String>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<RawInfo>, Error>> + Send;
}

/// `display-store`, as the host calls it.
pub trait DisplayBackend: Send + Sync + 'static {
    fn display_insert(
        &self,
        scope: &Scope,
        id: &str,
        records: Vec<RawStoredDisplay>,
    ) -> impl Future<Output = Result<InsertReply, Error>> + Send;
    fn display_by_call(
        &self,
        scope: &Scope,
        id: &str,
        call_id: &str,
    ) -> impl Future<Output = Result<Vec<RawStoredDisplay>, Error>> + Send;
    fn display_update(
        &self,
        scope: &Scope,
        id: &str,
        record: RawStoredDisplay,
    ) -> impl Future<Output = Result<(), Error>> + Send;
    fn display_list(
        &self,
        scope: &Scope,
        id: &str,
        after: u64,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<RawStoredDisplay>, Error>> + Send;
    fn display_find_by_status(
        &self,
        statuses: Vec<String>,
        after: Option<DisplayPosition>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<RawLocated>, Error>> + Send;
}
