//! Bytes on disk against the benchmark's native baseline (WORKLOAD.md phase D):
//! 100 conversations × 100 messages of ~1 KiB, appended 4 per call. The adapter
//! stores content the size of the baseline's body (plus the host's 1-byte
//! prefix), a 32-byte tag and a UUID id, so the ratio measures the schema alone.

use std::path::Path;

use rusqlite::Connection;

use super::{Fixture, Sqlite, meta, scope};
use crate::conversations as conv;
use crate::db::Db;
use crate::exports::stowage::store::conversation_store::{AppendOutcome, StoredMessage};
use crate::migrate;
use crate::stowage::store::types::{Message, Role};

const WORDS: [&str; 16] = [
    "agent", "tool", "memory", "vector", "query", "result", "store", "token", "model", "prompt", "context", "window",
    "search", "index", "record", "stream",
];

/// A compact JSON body of 1,024–1,032 bytes for message `m` of conversation `c`.
fn body(c: u64, m: u64) -> String {
    let mut state = (c << 32) + m + 20_261_122;
    let mut text = String::new();
    while 28 + text.len() < 1024 {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(WORDS[(state >> 60) as usize]);
    }
    format!(r#"{{"role":"user","content":"{text}"}}"#)
}

fn bytes_in(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .expect("list the directory")
        .map(|entry| entry.expect("an entry").metadata().expect("metadata").len())
        .sum()
}

fn checkpoint(path: &Path) {
    let conn = Connection::open(path).expect("open");
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).expect("checkpoint");
}

#[test]
fn bytes_on_disk_stay_within_a_tenth_of_the_native_baseline() {
    let (conversations, turns) = (100u64, 25u64);
    let adapter = Fixture::sqlite();
    let path = adapter.sqlite_path().expect("sqlite");
    {
        let sql = Sqlite::open(&path);
        sql.raw("PRAGMA synchronous = OFF");
        let db = Db::new(&sql);
        migrate::run(&db).expect("migrates");
        for c in 0..conversations {
            conv::open(&db, scope("tenant", "user"), format!("conv-{c:04}"), meta(b"\x01{}"), 1).expect("open");
        }
        for t in 0..turns {
            for c in 0..conversations {
                let batch: Vec<StoredMessage> = (4 * t..4 * t + 4)
                    .map(|m| {
                        let mut content = vec![0x01];
                        content.extend_from_slice(body(c, m).as_bytes());
                        let message = Message {
                            id: format!("0190a1b2-c3d4-7e5f-8a9b-{:012x}", (c << 20) + m),
                            role: Role::User,
                            created_at: 1_763_800_000_000 + m as i64,
                            content,
                            tag: vec![0xA5; 32],
                        };
                        StoredMessage { seq: m + 1, message }
                    })
                    .collect();
                let outcome = conv::append(&db, scope("tenant", "user"), format!("conv-{c:04}"), batch, None, 2);
                assert!(matches!(outcome, Ok(AppendOutcome::Stored(_))), "{outcome:?}");
            }
        }
    }
    checkpoint(&path);

    let baseline = Fixture::sqlite();
    let base_path = baseline.sqlite_path().expect("sqlite");
    {
        let conn = Connection::open(&base_path).expect("open");
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF;
             CREATE TABLE messages (id INTEGER PRIMARY KEY, conv TEXT NOT NULL, body TEXT NOT NULL);
             CREATE INDEX messages_conv ON messages (conv, id);",
        )
        .expect("baseline schema");
        for t in 0..turns {
            for c in 0..conversations {
                let tx = conn.unchecked_transaction().expect("begin");
                for m in 4 * t..4 * t + 4 {
                    tx.execute(
                        "INSERT INTO messages (conv, body) VALUES (?1, ?2)",
                        (format!("conv-{c:04}"), body(c, m)),
                    )
                    .expect("insert");
                }
                tx.commit().expect("commit");
            }
        }
    }
    checkpoint(&base_path);

    let (ours, theirs) = (bytes_in(path.parent().expect("dir")), bytes_in(base_path.parent().expect("dir")));
    let ratio = ours as f64 / theirs as f64;
    eprintln!("bytes on disk: adapter {ours}, baseline {theirs}, ratio {ratio:.3}");
    assert!(ratio <= 1.10, "adapter {ours} bytes vs baseline {theirs} bytes: ratio {ratio:.3}");
}
