//! Native tests of the adapter's logic against real engines: a SQLite file (the
//! engine the host embeds) and a PostgreSQL server.
//!
//! PostgreSQL comes from `STOWAGE_TEST_POSTGRES_URL` (default: the local server,
//! database `test`). Each fixture works in its own schema and drops it afterwards.
//! Without a server the PostgreSQL half of each test is skipped and says so on
//! stderr; with `STOWAGE_TEST_POSTGRES_REQUIRED` set, a missing server fails.

mod append_plan;
mod concurrency;
mod display;
mod fast_append;
mod head;
mod history;
mod load_plan;
mod migration;
mod plans;
mod postgres;
mod size;
mod sqlite;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::db::{Db, Sql};
use crate::exports::stowage::store::conversation_store::{ConversationMeta, Scope, StoredMessage};
use crate::exports::stowage::store::display_store::{DisplayRecord, StoredDisplayRecord};
use crate::migrate;
use crate::stowage::store::types::{Message, Role};

pub use self::postgres::Postgres;
pub use self::sqlite::Sqlite;

const DEFAULT_POSTGRES_URL: &str = "host=127.0.0.1 port=5432 user=postgres dbname=test";

static NEXT: AtomicUsize = AtomicUsize::new(0);

fn unique(prefix: &str) -> String {
    format!("{prefix}_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A fresh, empty database of one dialect. Dropping it removes it.
pub enum Fixture {
    Sqlite { dir: PathBuf },
    Postgres { url: String, schema: String },
}

impl Fixture {
    pub fn sqlite() -> Fixture {
        let dir = std::env::temp_dir().join(unique("stowage-sql-adapter"));
        std::fs::create_dir_all(&dir).expect("create the test directory");
        Fixture::Sqlite { dir }
    }

    /// `None` (with a note on stderr) when no server is reachable.
    pub fn postgres() -> Option<Fixture> {
        let url = std::env::var("STOWAGE_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_POSTGRES_URL.to_owned());
        let schema = unique("stowage_sql_adapter");
        match ::postgres::Client::connect(&url, ::postgres::NoTls) {
            Ok(mut client) => {
                client.batch_execute(&format!("CREATE SCHEMA {schema}")).expect("create the test schema");
                Some(Fixture::Postgres { url, schema })
            }
            Err(e) if std::env::var_os("STOWAGE_TEST_POSTGRES_REQUIRED").is_some() => {
                panic!("PostgreSQL is required but unreachable at {url}: {e}")
            }
            Err(e) => {
                eprintln!("SKIPPED (PostgreSQL half): no server at {url}: {e}");
                None
            }
        }
    }

    /// A new connection to the fixture's database.
    pub fn connect(&self) -> Box<dyn Sql + Send> {
        match self {
            Fixture::Sqlite { dir } => Box::new(Sqlite::open(&dir.join("store.db"))),
            Fixture::Postgres { url, schema } => Box::new(Postgres::connect(url, schema).expect("connect")),
        }
    }

    /// A new connection to the fixture's database, brought to the latest schema.
    pub fn migrated(&self) -> Box<dyn Sql + Send> {
        let sql = self.connect();
        migrate::run(&Db::new(&*sql)).expect("migrations apply");
        sql
    }

    pub fn sqlite_path(&self) -> Option<PathBuf> {
        match self {
            Fixture::Sqlite { dir } => Some(dir.join("store.db")),
            Fixture::Postgres { .. } => None,
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        match self {
            Fixture::Sqlite { dir } => {
                let _ = std::fs::remove_dir_all(dir);
            }
            Fixture::Postgres { url, schema } => {
                if let Ok(mut client) = ::postgres::Client::connect(url, ::postgres::NoTls) {
                    let _ = client.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"));
                }
            }
        }
    }
}

/// Runs `test` on a fresh SQLite database, then on a fresh PostgreSQL one.
pub fn each_backend(test: impl Fn(&Fixture)) {
    test(&Fixture::sqlite());
    if let Some(postgres) = Fixture::postgres() {
        test(&postgres);
    }
}

pub fn scope(tenant: &str, user: &str) -> Scope {
    Scope { tenant: tenant.to_owned(), user: user.to_owned() }
}

pub fn meta(content: &[u8]) -> ConversationMeta {
    ConversationMeta { content: content.to_vec(), tag: vec![0xAA; 4] }
}

/// A message whose bytes depend on its id and seq: content starts with 0x02 (a
/// sealed host record) and includes a NUL and a 0xFF byte.
pub fn message(id: &str, seq: u64) -> StoredMessage {
    let mut content = vec![0x02, 0x00, 0xFF];
    content.extend_from_slice(id.as_bytes());
    StoredMessage {
        seq,
        message: Message {
            id: id.to_owned(),
            role: Role::Assistant,
            created_at: 1_700_000_000_000 + seq as i64,
            content,
            tag: seq.to_be_bytes().to_vec(),
        },
    }
}

/// Messages `ids` numbered from `first`.
pub fn batch(ids: &[&str], first: u64) -> Vec<StoredMessage> {
    ids.iter().zip(first..).map(|(id, seq)| message(id, seq)).collect()
}

pub fn record(seq: u64, tool_call_id: Option<&str>, status: Option<&str>) -> StoredDisplayRecord {
    StoredDisplayRecord {
        seq,
        record: DisplayRecord {
            message_id: Some(format!("m{seq}")),
            message_type: "assistant".to_owned(),
            content_type: if tool_call_id.is_some() { "tool_call" } else { "text" }.to_owned(),
            tool_call_id: tool_call_id.map(str::to_owned),
            status: status.map(str::to_owned),
            body: vec![0x02, seq as u8, 0x00, 0xFF],
            created_at: 10 + seq as i64,
            updated_at: 20 + seq as i64,
            tag: vec![0x5A; 32],
        },
    }
}
