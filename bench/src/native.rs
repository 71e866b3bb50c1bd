//! The native baseline of `WORKLOAD.md` §3: rusqlite (the workspace's bundled SQLite) in
//! WAL mode with `synchronous` FULL or NORMAL, table
//! `messages(id INTEGER PRIMARY KEY, conv TEXT NOT NULL, body TEXT NOT NULL)` with an index
//! on `(conv, id)`. Bodies are compact JSON.
//!
//! Input: `serde_json::Value`, serialised with `serde_json::to_string` inside the timed
//! call. Output: `serde_json::Value`, decoded with serde_json inside the timed call.
//! One batch is one transaction (`BEGIN IMMEDIATE … COMMIT`; a single message is one
//! autocommit statement), so a call returns only after SQLite's commit at the row's
//! `synchronous` setting. Auto-checkpoint stays at SQLite's default (1,000 pages).
//!
//! Phase E: a pool of connections behind fair (FIFO) async mutexes; a conversation always
//! uses the same connection. The default pool is one connection, so concurrent agents
//! queue for it and every commit pays its own fsync: no group commit, which is what the
//! issue's target is measured against.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior, params};
use serde_json::Value;
use tokio::sync::Mutex;

use crate::error::{BenchError, Result};
use crate::runner::{OpenFor, RowDescription, StoreKind, StoreRunner};
use crate::workload::Message;

/// The database file inside a run's directory.
pub const DB_FILE: &str = "native.db";

/// SQLite's `synchronous` setting in WAL mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// fsync on every commit: survives power loss.
    Full,
    /// fsync only at checkpoints: survives a process crash.
    Normal,
}

impl Durability {
    /// SQLite's name for the setting.
    pub fn pragma(self) -> &'static str {
        match self {
            Self::Full => "FULL",
            Self::Normal => "NORMAL",
        }
    }
}

/// Opens native baseline stores.
#[derive(Clone, Debug)]
pub struct NativeKind {
    pub durability: Durability,
    /// Connections used in phase E (at most one per agent).
    pub e_pool: usize,
}

impl NativeKind {
    pub fn new(durability: Durability) -> Self {
        Self { durability, e_pool: 1 }
    }
}

impl StoreKind for NativeKind {
    type Runner = NativeRunner;

    fn describe(&self) -> RowDescription {
        let sync = self.durability.pragma();
        RowDescription {
            row: format!("native-{}", sync.to_ascii_lowercase()),
            label: "native rusqlite".into(),
            sync: sync.into(),
            baseline: true,
            input: "serde_json::Value; serialised to compact JSON inside the call".into(),
            output: "serde_json::Value; decoded with serde_json inside the call".into(),
            notes: vec![
                format!("SQLite {} (bundled), WAL, synchronous={sync}, wal_autocheckpoint=1000", rusqlite::version()),
                format!(
                    "phase E: {} connection(s) behind FIFO async mutexes, work done inline on the tokio worker",
                    self.e_pool
                ),
            ],
        }
    }

    async fn open(&self, dir: &Path, purpose: OpenFor) -> Result<NativeRunner> {
        let pool = match purpose {
            OpenFor::Sequential => 1,
            OpenFor::Concurrent { agents } => self.e_pool.clamp(1, agents.max(1)),
        };
        NativeRunner::open(&dir.join(DB_FILE), self.durability, pool)
    }
}

/// One open native store: one connection (sequential phases) or a small pool (phase E).
pub struct NativeRunner {
    connections: Vec<Mutex<Connection>>,
}

impl NativeRunner {
    /// Opens (creating) the database at `path` with `pool` connections.
    pub fn open(path: &Path, durability: Durability, pool: usize) -> Result<Self> {
        let mut connections = Vec::with_capacity(pool.max(1));
        for i in 0..pool.max(1) {
            let connection = Connection::open(path)?;
            let mode: String = connection.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(BenchError::Config(format!("journal_mode WAL refused (got {mode})")));
            }
            connection.pragma_update(None, "synchronous", durability.pragma())?;
            connection.busy_timeout(Duration::from_secs(30))?;
            if i == 0 {
                connection.execute_batch(
                    "CREATE TABLE IF NOT EXISTS messages (
                        id INTEGER PRIMARY KEY, conv TEXT NOT NULL, body TEXT NOT NULL);
                     CREATE INDEX IF NOT EXISTS messages_conv_id ON messages (conv, id);",
                )?;
            }
            connections.push(Mutex::new(connection));
        }
        Ok(Self { connections })
    }

    fn connection_for(&self, conv: &str) -> &Mutex<Connection> {
        let slot = match self.connections.len() {
            0 | 1 => 0,
            // FNV-1a: a conversation always lands on the same connection.
            n => {
                (conv.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
                    % n as u64) as usize
            }
        };
        &self.connections[slot]
    }
}

fn append_blocking(connection: &mut Connection, conv: &str, batch: &[Value]) -> Result<()> {
    const INSERT: &str = "INSERT INTO messages (conv, body) VALUES (?1, ?2)";
    if let [single] = batch {
        let body = serde_json::to_string(single)?;
        connection.prepare_cached(INSERT)?.execute(params![conv, body])?;
        return Ok(());
    }
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    {
        let mut insert = tx.prepare_cached(INSERT)?;
        for value in batch {
            let body = serde_json::to_string(value)?;
            insert.execute(params![conv, body])?;
        }
    }
    tx.commit()?;
    Ok(())
}

fn load_blocking(connection: &Connection, conv: &str, newest: Option<usize>) -> Result<Vec<Value>> {
    let (sql, limit) = match newest {
        Some(n) => ("SELECT body FROM messages WHERE conv = ?1 ORDER BY id DESC LIMIT ?2", n as i64),
        None => ("SELECT body FROM messages WHERE conv = ?1 ORDER BY id LIMIT ?2", -1),
    };
    let mut statement = connection.prepare_cached(sql)?;
    let mut rows = statement.query(params![conv, limit])?;
    let mut out = Vec::with_capacity(newest.unwrap_or(128));
    while let Some(row) = rows.next()? {
        let body = row.get_ref(0)?.as_str().map_err(|e| BenchError::Store(format!("body column: {e}")))?;
        out.push(serde_json::from_str(body)?);
    }
    if newest.is_some() {
        out.reverse();
    }
    Ok(out)
}

impl StoreRunner for NativeRunner {
    type Input = Value;
    type Output = Value;

    fn prepare(&self, message: &Message) -> Result<Value> {
        message.value()
    }

    async fn open_conversation(&self, _conv: &str) -> Result<()> {
        Ok(())
    }

    async fn append(&self, conv: &str, batch: Vec<Value>) -> Result<()> {
        let mut connection = self.connection_for(conv).lock().await;
        append_blocking(&mut connection, conv, &batch)
    }

    async fn load_newest(&self, conv: &str, n: usize) -> Result<Vec<Value>> {
        let connection = self.connection_for(conv).lock().await;
        load_blocking(&connection, conv, Some(n))
    }

    async fn load_all(&self, conv: &str) -> Result<Vec<Value>> {
        let connection = self.connection_for(conv).lock().await;
        load_blocking(&connection, conv, None)
    }

    fn canonical(&self, output: &Value) -> Result<String> {
        Ok(serde_json::to_string(output)?)
    }

    async fn close(self) -> Result<()> {
        for connection in self.connections {
            connection.into_inner().close().map_err(|(_, e)| BenchError::Sqlite(e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{Message, conversation};

    #[tokio::test]
    async fn appends_and_loads_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let kind = NativeKind::new(Durability::Normal);
        let store = kind.open(dir.path(), OpenFor::Sequential).await.unwrap();
        let messages = conversation(0, 12);
        store.append("conv-0000", vec![store.prepare(&messages[0]).unwrap()]).await.unwrap();
        let rest: Vec<Value> = messages[1..].iter().map(|m| store.prepare(m).unwrap()).collect();
        store.append("conv-0000", rest).await.unwrap();
        store.append("conv-0001", vec![store.prepare(&Message::new(1, 0)).unwrap()]).await.unwrap();

        let newest = store.load_newest("conv-0000", 5).await.unwrap();
        let got: Vec<String> = newest.iter().map(|v| store.canonical(v).unwrap()).collect();
        let want: Vec<String> = messages[7..].iter().map(|m| m.canonical.clone()).collect();
        assert_eq!(got, want);
        let all = store.load_all("conv-0000").await.unwrap();
        assert_eq!(all.len(), 12);
        assert_eq!(store.canonical(&all[0]).unwrap(), messages[0].canonical);
        store.close().await.unwrap();
        assert!(dir.path().join(DB_FILE).exists());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_pool_keeps_each_conversation_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let kind = NativeKind { durability: Durability::Normal, e_pool: 3 };
        let store = std::sync::Arc::new(kind.open(dir.path(), OpenFor::Concurrent { agents: 8 }).await.unwrap());
        assert_eq!(store.connections.len(), 3);
        let mut tasks = Vec::new();
        for c in 0..8 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                for m in 0..6 {
                    let value = Message::new(c, m).value().unwrap();
                    store.append(&crate::workload::conv_id(c), vec![value]).await.unwrap();
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        for c in 0..8 {
            let all = store.load_all(&crate::workload::conv_id(c)).await.unwrap();
            let got: Vec<String> = all.iter().map(|v| store.canonical(v).unwrap()).collect();
            let want: Vec<String> = conversation(c, 6).into_iter().map(|m| m.canonical).collect();
            assert_eq!(got, want);
        }
    }
}
