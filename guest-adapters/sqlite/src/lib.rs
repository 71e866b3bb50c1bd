//! The SQL adapter (contract `stowage:store@0.2.0`, world `sql-adapter`): keeps
//! message histories and display records in the database the host lends through
//! the `sql` capability, SQLite or PostgreSQL, with the same logic for both and
//! SQL text per dialect ([`dialect`]).
//!
//! The adapter stores what the host hands it — opaque content and tags, at the
//! seqs the host assigned — and enforces the contract's check order; it never
//! interprets content. Every write is one transaction: all of it or none of it.
//!
//! Layout: [`db`] is the seam to the database; [`batch`] holds the pure write
//! decisions; [`conversations`] and [`display`] implement the two interfaces;
//! [`schema`], [`migrate`], [`legacy`] and [`legacy_import`] bring any database
//! (fresh, or written by the 0.1.0 adapter) to the current schema, once. On
//! SQLite the adapter also names the statements the host may run itself: its
//! loads' SELECTs ([`reads::plan`], `stowage:reads`) and its appends' INSERTs
//! ([`append_plan`], `stowage:writes`).

mod append_plan;
mod batch;
mod conversations;
mod db;
// Before `dialect`: its SQLite texts use the head's column macros.
#[macro_use]
mod head;
mod dialect;
mod display;
mod display_tables;
mod fast_append;
mod heads;
mod legacy;
mod legacy_import;
mod migrate;
mod model;
mod reads;
mod schema;
// Needs rusqlite and a PostgreSQL client, so native only.
#[cfg(all(test, not(target_family = "wasm")))]
mod tests;

use std::sync::atomic::{AtomicBool, Ordering};

wit_bindgen::generate!({
    path: ["../../wit/v0.2.0", "../../wit/reads-v0.1.0", "../../wit/writes-v0.1.0"],
    world: "stowage:writes/sql-adapter",
    additional_derives: [PartialEq],
    // The contract's interfaces live in the other packages: generate them too.
    generate_all,
});

use exports::stowage::reads::load_plan::{Dialect as PlanDialect, Guest as LoadPlan, MessageStatements};
use exports::stowage::store::conversation_store::{
    AppendOutcome, ConversationInfo, ConversationMeta, Guest as ConversationStore, MessageRange, Scope, StoredMessage,
    TruncateOutcome,
};
use exports::stowage::store::display_store::{
    DisplayPosition, Guest as DisplayStore, InsertOutcome, LocatedDisplayRecord, StoredDisplayRecord,
};
use exports::stowage::writes::append_plan::{
    Dialect as AppendPlanDialect, Guest as AppendPlan, MessageStatements as AppendStatements,
};
use stowage::store::types::Error;

use db::{Db, HostSql};
use heads::Heads;

/// Set once this instance has seen the database at the current schema, so the
/// migration check costs one query per instance, not per call.
static MIGRATED: AtomicBool = AtomicBool::new(false);

/// The conversations' heads this instance saw last ([`fast_append`]).
static HEADS: Heads = Heads::new();

/// Set once this instance has seen the display tables ([`display_tables`]).
static DISPLAY_TABLES: AtomicBool = AtomicBool::new(false);

/// Set when this instance made the database's schema, until its first `open`:
/// a database just made holds no conversation, so that open need not look.
static MADE: AtomicBool = AtomicBool::new(false);

/// The host's database, migrated.
fn database() -> Result<Db<'static>, Error> {
    let db = Db::new(&HostSql).with_heads(&HEADS).with_display_tables(&DISPLAY_TABLES);
    if !MIGRATED.load(Ordering::Acquire) {
        if migrate::run(&db)? {
            MADE.store(true, Ordering::Release);
        }
        MIGRATED.store(true, Ordering::Release);
    }
    Ok(db)
}

struct SqlAdapter;

impl ConversationStore for SqlAdapter {
    fn open(
        scope: Scope,
        conversation_id: String,
        meta: ConversationMeta,
        now: i64,
    ) -> Result<ConversationInfo, Error> {
        let db = database()?;
        conversations::open_in(&db, scope, conversation_id, meta, now, MADE.swap(false, Ordering::AcqRel))
    }

    fn info(scope: Scope, conversation_id: String) -> Result<ConversationInfo, Error> {
        conversations::info(&database()?, scope, conversation_id)
    }

    fn update_meta(scope: Scope, conversation_id: String, meta: ConversationMeta) -> Result<(), Error> {
        conversations::update_meta(&database()?, scope, conversation_id, meta)
    }

    fn append(
        scope: Scope,
        conversation_id: String,
        messages: Vec<StoredMessage>,
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<AppendOutcome, Error> {
        conversations::append(&database()?, scope, conversation_id, messages, expected_version, now)
    }

    fn replace(
        scope: Scope,
        conversation_id: String,
        messages: Vec<StoredMessage>,
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<u64, Error> {
        conversations::replace(&database()?, scope, conversation_id, messages, expected_version, now)
    }

    fn load(
        scope: Scope,
        conversation_id: String,
        range: MessageRange,
        limit: u32,
    ) -> Result<Vec<StoredMessage>, Error> {
        reads::load(&database()?, scope, conversation_id, range, limit)
    }

    fn truncate_after(
        scope: Scope,
        conversation_id: String,
        seq: u64,
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<TruncateOutcome, Error> {
        conversations::truncate_after(&database()?, scope, conversation_id, seq, expected_version, now)
    }

    fn delete(scope: Scope, conversation_id: String) -> Result<bool, Error> {
        conversations::delete(&database()?, scope, conversation_id)
    }

    fn list(scope: Scope, after: Option<String>, limit: u32) -> Result<Vec<ConversationInfo>, Error> {
        reads::list(&database()?, scope, after, limit)
    }
}

impl DisplayStore for SqlAdapter {
    fn insert(
        scope: Scope,
        conversation_id: String,
        records: Vec<StoredDisplayRecord>,
    ) -> Result<InsertOutcome, Error> {
        display::insert(&database()?, scope, conversation_id, records)
    }

    fn by_tool_call_id(
        scope: Scope,
        conversation_id: String,
        tool_call_id: String,
    ) -> Result<Vec<StoredDisplayRecord>, Error> {
        display::by_tool_call_id(&database()?, scope, conversation_id, tool_call_id)
    }

    fn update(scope: Scope, conversation_id: String, record: StoredDisplayRecord) -> Result<(), Error> {
        display::update(&database()?, scope, conversation_id, record)
    }

    fn list(scope: Scope, conversation_id: String, after: u64, limit: u32) -> Result<Vec<StoredDisplayRecord>, Error> {
        display::list(&database()?, scope, conversation_id, after, limit)
    }

    fn find_by_status(
        statuses: Vec<String>,
        after: Option<DisplayPosition>,
        limit: u32,
    ) -> Result<Vec<LocatedDisplayRecord>, Error> {
        display::find_by_status(&database()?, statuses, after, limit)
    }
}

impl LoadPlan for SqlAdapter {
    /// Asked before the host runs any load itself, so the schema is brought
    /// current first; a database that cannot be migrated gets no plan (its
    /// loads then call `load`, which reports the failure).
    fn message_plan(dialect: PlanDialect) -> Option<MessageStatements> {
        reads::plan(&database().ok()?, dialect)
    }
}

impl AppendPlan for SqlAdapter {
    /// Asked before the host runs any append itself, so the schema is brought
    /// current first; a database that cannot be migrated gets no plan (its
    /// appends then call `append`, which reports the failure).
    fn message_plan(dialect: AppendPlanDialect) -> Option<AppendStatements> {
        append_plan::plan(&database().ok()?, dialect)
    }
}

export!(SqlAdapter);
