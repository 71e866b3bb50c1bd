//! Test fixture (contract `stowage:store@0.2.0`): an adapter that misbehaves on
//! request. `open` picks the behaviour from the conversation id:
//!
//! - `loop`: spins forever (the host's deadline must stop it);
//! - `memory-bomb`: allocates until memory runs out (the host's cap must stop it);
//! - `trap`: panics;
//! - `escape:<host path>` or `escape:<host path>|<sibling database>`: tries to get
//!   out of its data directory, and reports every attempt:
//!   - with Rust std: reads and lists `<host path>` and other places outside
//!     `/data` (its sibling `secret.txt`, `/etc/passwd`, `/`), reads the
//!     environment and arguments, opens a TCP connection;
//!   - with raw WASI calls on the `/data` preopen: creates symlinks in `/data`
//!     pointing outside (relative `../..` targets, the absolute `<host path>`,
//!     `/etc/passwd`, and `<sibling database>`, another store's database, by
//!     default `../sibling/stowage.sqlite3`) and one placed outside `/data`,
//!     follows every symlink it made; creates hard links (of its own file, inside
//!     and outside `/data`, of files outside, of `/data/stowage.sqlite3`); and
//!     replaces `/data/stowage.sqlite3` (the host's database file name) with a
//!     symlink to `<sibling database>`, `../..` and `<host path>`. A real SQLite
//!     database found at `/data/stowage.sqlite3` counts as an escape. Whatever
//!     it creates it removes again, and a database it moved aside it puts back;
//!
//!   it fails with `access-denied(<every refusal>)` when everything was refused,
//!   and with `storage("ESCAPED: <what got through> | refused: <the rest>")` when
//!   anything got through;
//! - anything else: succeeds, reporting in `message-count` how many calls this
//!   instance has served (so tests can tell a fresh instance from a reused one).
//!
//! Every other function fails with `unsupported`.

wit_bindgen::generate!({
    path: "../../../wit/v0.2.0",
    world: "adapter",
});

mod escape;
mod links;
mod report;

use std::sync::atomic::{AtomicU64, Ordering};

use exports::stowage::store::conversation_store::{
    AppendOutcome, ConversationInfo, ConversationMeta, Guest as ConversationStore, MessageRange, Scope, StoredMessage,
    TruncateOutcome,
};
use exports::stowage::store::display_store::{
    DisplayPosition, Guest as DisplayStore, InsertOutcome, LocatedDisplayRecord, StoredDisplayRecord,
};
use stowage::store::types::Error;

/// Symlink target naming another store's database when the id names none.
const DEFAULT_SIBLING_DATABASE: &str = "../sibling/stowage.sqlite3";

static CALLS: AtomicU64 = AtomicU64::new(0);

fn unsupported<T>() -> Result<T, Error> {
    Err(Error::Unsupported("hostile test adapter".to_owned()))
}

/// Runs every escape attempt; never succeeds.
fn escape(target: &str) -> Error {
    let (host_path, sibling_database) = target.split_once('|').unwrap_or((target, DEFAULT_SIBLING_DATABASE));
    let mut report = report::Report::default();
    escape::std_attempts(&mut report, host_path);
    links::link_attempts(&mut report, host_path, sibling_database);
    report.into_error()
}

struct Hostile;

impl ConversationStore for Hostile {
    fn open(
        scope: Scope,
        conversation_id: String,
        meta: ConversationMeta,
        now: i64,
    ) -> Result<ConversationInfo, Error> {
        let calls = CALLS.fetch_add(1, Ordering::Relaxed) + 1;
        match conversation_id.as_str() {
            "loop" => loop {
                std::hint::black_box(calls);
            },
            "memory-bomb" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "trap" => panic!("hostile adapter trapped on purpose"),
            id if id.starts_with("escape:") => Err(escape(&id["escape:".len()..])),
            _ => Ok(ConversationInfo {
                id: conversation_id,
                scope,
                meta,
                created_at: now,
                updated_at: now,
                message_count: calls,
                last_seq: 0,
                version: 0,
            }),
        }
    }

    fn info(_: Scope, _: String) -> Result<ConversationInfo, Error> {
        unsupported()
    }
    fn update_meta(_: Scope, _: String, _: ConversationMeta) -> Result<(), Error> {
        unsupported()
    }
    fn append(_: Scope, _: String, _: Vec<StoredMessage>, _: Option<u64>, _: i64) -> Result<AppendOutcome, Error> {
        unsupported()
    }
    fn replace(_: Scope, _: String, _: Vec<StoredMessage>, _: Option<u64>, _: i64) -> Result<u64, Error> {
        unsupported()
    }
    fn load(_: Scope, _: String, _: MessageRange, _: u32) -> Result<Vec<StoredMessage>, Error> {
        unsupported()
    }
    fn truncate_after(_: Scope, _: String, _: u64, _: Option<u64>, _: i64) -> Result<TruncateOutcome, Error> {
        unsupported()
    }
    fn delete(_: Scope, _: String) -> Result<bool, Error> {
        unsupported()
    }
    fn list(_: Scope, _: Option<String>, _: u32) -> Result<Vec<ConversationInfo>, Error> {
        unsupported()
    }
}

impl DisplayStore for Hostile {
    fn insert(_: Scope, _: String, _: Vec<StoredDisplayRecord>) -> Result<InsertOutcome, Error> {
        unsupported()
    }
    fn by_tool_call_id(_: Scope, _: String, _: String) -> Result<Vec<StoredDisplayRecord>, Error> {
        unsupported()
    }
    fn update(_: Scope, _: String, _: StoredDisplayRecord) -> Result<(), Error> {
        unsupported()
    }
    fn list(_: Scope, _: String, _: u64, _: u32) -> Result<Vec<StoredDisplayRecord>, Error> {
        unsupported()
    }
    fn find_by_status(_: Vec<String>, _: Option<DisplayPosition>, _: u32) -> Result<Vec<LocatedDisplayRecord>, Error> {
        unsupported()
    }
}

export!(Hostile);
