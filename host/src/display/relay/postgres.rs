//! The relay on PostgreSQL: a journal table in the store's schema
//! (`stowage_display_journal`), read by every host with a cursor.
//!
//! - **Lease.** A transaction on a connection of the host's own pool, holding
//!   `pg_advisory_xact_lock` on the conversation (transaction-scoped: poolers and
//!   pools cannot leak it). An abandoned lease closes its connection, so the
//!   server rolls it back and the lock goes.
//! - **Order.** Committing takes one more transaction lock, the journal's, before
//!   it numbers and inserts its entries, and holds it to the commit. Entries are
//!   therefore committed in id order: a reader that has seen id *n* will never
//!   see a smaller id appear later, so its cursor skips nothing.
//! - **Reading.** A task on the PostgreSQL runtime polls `id > cursor` every
//!   [`POLL`] (at once after this host commits), checks each entry
//!   ([`super::entry`]) and feeds it to the local subscribers. It starts at the
//!   journal's end when the relay starts; a lease waits until it has.
//! - **Retention.** Entries older than [`RETENTION`] are deleted (by any host);
//!   a host that could not read the journal for that long warns that it may
//!   have missed events (its subscribers should reload).
//!
//! Whoever can write the schema (the adapter's SQL included) can delete entries
//! (availability), not forge, alter, move or replay them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use deadpool_postgres::Object;
use tokio::sync::{Notify, broadcast, watch};
use tokio::task::AbortHandle;

use super::entry::{self, Entry, Reader};
use super::{Lease, Relay};
use crate::capability::sql::{PostgresServer, PostgresSettings, spawn_on_postgres_runtime};
use crate::display::storage::BoxFuture;
use crate::error::Error;
use crate::integrity::Protector;
use crate::model::{DisplayEvent, Scope};

/// How often a host looks for other hosts' events.
pub const POLL: Duration = Duration::from_millis(20);
/// How long entries are kept.
pub const RETENTION: Duration = Duration::from_secs(600);
/// Entries read per round trip.
const BATCH: i64 = 512;
/// First key of every advisory lock the relay takes ("STOW").
const LOCK_CLASS: i32 = 0x5354_4f57;
/// Second keys of the journal-wide locks (conversation locks hash to others).
const JOURNAL_LOCK: i32 = 0;
const DDL_LOCK: i32 = 1;

const DDL: &str = "CREATE TABLE IF NOT EXISTS stowage_display_journal (
    id bigserial PRIMARY KEY,
    origin text NOT NULL,
    counter bigint NOT NULL,
    tenant text NOT NULL,
    user_id text NOT NULL,
    conversation_id text NOT NULL,
    payload bytea NOT NULL,
    tag bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now());
CREATE INDEX IF NOT EXISTS stowage_display_journal_created ON stowage_display_journal (created_at);";

struct Shared {
    server: PostgresServer,
    protector: Arc<Protector>,
    store: String,
    origin: String,
    /// The last counter given to an entry of this host.
    counter: AtomicU64,
    /// Set once the reader knows where the journal ends.
    ready: watch::Receiver<bool>,
    wake: Notify,
    /// How long a lease waits for the reader, and for the server.
    wait: Duration,
}

/// Display events through a PostgreSQL journal.
pub struct PgRelay {
    shared: Arc<Shared>,
    reader: AbortHandle,
}

impl Drop for PgRelay {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl PgRelay {
    /// Starts the relay of store `store` on the server at `url`; events read
    /// from the journal go to `sink`.
    pub fn start(
        store: &str,
        url: &str,
        settings: &PostgresSettings,
        protector: Arc<Protector>,
        sink: broadcast::Sender<DisplayEvent>,
    ) -> Result<Self, String> {
        let server = PostgresServer::open(url, settings)?;
        let mut origin = [0u8; 16];
        getrandom::fill(&mut origin).map_err(|e| format!("no randomness for an origin id: {e}"))?;
        let (ready_tx, ready) = watch::channel(false);
        let shared = Arc::new(Shared {
            server,
            protector,
            store: store.to_owned(),
            origin: origin.iter().map(|b| format!("{b:02x}")).collect(),
            counter: AtomicU64::new(0),
            ready,
            wake: Notify::new(),
            wait: settings.busy_timeout.max(Duration::from_secs(5)),
        });
        let reader = spawn_on_postgres_runtime(read_loop(Arc::clone(&shared), ready_tx, sink))?.abort_handle();
        Ok(Self { shared, reader })
    }
}

impl Relay for PgRelay {
    fn lease(&self, scope: Scope, conversation: String) -> BoxFuture<'_, Result<Box<dyn Lease>, Error>> {
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let fail = |why: String| Error::Storage(format!("display events of store `{}`: {why}", shared.store));
            let mut ready = shared.ready.clone();
            match tokio::time::timeout(shared.wait, ready.wait_for(|r| *r)).await {
                Ok(Ok(_)) => {}
                _ => return Err(fail(format!("the journal on {} is not readable yet", shared.server.location()))),
            }
            let conn = shared.server.connection().await.map_err(fail)?;
            let key = conversation_key(&scope, &conversation);
            let begun = async {
                conn.batch_execute("BEGIN").await?;
                conn.execute("SELECT pg_advisory_xact_lock($1, $2)", &[&LOCK_CLASS, &key]).await
            };
            match tokio::time::timeout(shared.wait, begun).await {
                Ok(Ok(_)) => Ok(Box::new(PgLease { shared: Arc::clone(&shared), conn: Some(conn) }) as Box<dyn Lease>),
                Ok(Err(e)) => {
                    discard(conn);
                    Err(fail(format!("locking the conversation failed (another host holds it too long?): {e}")))
                }
                Err(_) => {
                    discard(conn);
                    Err(fail("no answer from the server while locking the conversation".into()))
                }
            }
        })
    }
}

/// A lease: an open transaction holding the conversation's lock.
struct PgLease {
    shared: Arc<Shared>,
    conn: Option<Object>,
}

impl Drop for PgLease {
    fn drop(&mut self) {
        // Not committed: close the connection, the server rolls back.
        if let Some(conn) = self.conn.take() {
            discard(conn);
        }
    }
}

impl Lease for PgLease {
    fn commit(mut self: Box<Self>, events: Vec<DisplayEvent>) -> BoxFuture<'static, Result<(), Error>> {
        let shared = Arc::clone(&self.shared);
        let conn = self.conn.take();
        Box::pin(async move {
            let Some(conn) = conn else { return Err(Error::Internal("a lease committed twice".into())) };
            let written = tokio::time::timeout(shared.wait, record(&shared, &conn, &events)).await;
            match written {
                Ok(Ok(())) => {
                    drop(conn); // back to the pool, outside any transaction
                    shared.wake.notify_one();
                    Ok(())
                }
                failed => {
                    discard(conn);
                    let why = match failed {
                        Ok(Err(e)) => e,
                        _ => "no answer from the server".into(),
                    };
                    Err(Error::Storage(format!("display events of store `{}` not journaled: {why}", shared.store)))
                }
            }
        })
    }
}

/// Numbers, seals and inserts `events`, then commits.
async fn record(shared: &Shared, conn: &Object, events: &[DisplayEvent]) -> Result<(), String> {
    let sql = |e: tokio_postgres::Error| e.to_string();
    if !events.is_empty() {
        conn.execute("SELECT pg_advisory_xact_lock($1, $2)", &[&LOCK_CLASS, &JOURNAL_LOCK]).await.map_err(sql)?;
        let insert = conn
            .prepare_cached(
                "INSERT INTO stowage_display_journal (origin, counter, tenant, user_id, conversation_id, payload, tag) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .await
            .map_err(sql)?;
        for event in events {
            // Numbered under the journal lock: counters grow in journal order.
            let counter = shared.counter.fetch_add(1, Ordering::SeqCst) + 1;
            let e = entry::seal(&shared.protector, &shared.origin, counter, event)?;
            let counter = i64::try_from(e.counter).map_err(|_| "counter overflow".to_owned())?;
            conn.execute(
                &insert,
                &[&e.origin, &counter, &e.scope.tenant, &e.scope.user, &e.conversation_id, &e.payload, &e.tag],
            )
            .await
            .map_err(sql)?;
        }
    }
    conn.batch_execute("COMMIT").await.map_err(sql)
}

/// The second key of a conversation's lock: 32 bits of SHA-256 (stable across
/// processes, unlike the standard hasher), never a journal-wide key.
fn conversation_key(scope: &Scope, conversation: &str) -> i32 {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for part in [&scope.tenant, &scope.user, conversation] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    let digest = hash.finalize();
    let key = i32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]);
    if key == JOURNAL_LOCK || key == DDL_LOCK { 2 } else { key }
}

fn discard(conn: Object) {
    drop(Object::take(conn));
}

/// The reader: creates the journal if needed, starts at its end, then feeds
/// every new entry to `sink`, in order, until the relay is dropped.
async fn read_loop(shared: Arc<Shared>, ready: watch::Sender<bool>, sink: broadcast::Sender<DisplayEvent>) {
    let mut state = ReadState { cursor: None, reader: Reader::default(), pruned: None, last_read: Instant::now() };
    let mut failing = false;
    loop {
        match read_once(&shared, &mut state, &sink).await {
            Ok(more) => {
                if failing {
                    tracing::info!(store = %shared.store, "display event journal readable again");
                    failing = false;
                }
                let _ = ready.send_replace(true);
                if more {
                    continue;
                }
                tokio::select! {
                    _ = shared.wake.notified() => {}
                    _ = tokio::time::sleep(POLL) => {}
                }
            }
            Err(error) => {
                if !failing {
                    tracing::warn!(store = %shared.store, %error, "reading the display event journal failed; retrying");
                    failing = true;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

struct ReadState {
    /// The last id read; `None` until the journal's end is known.
    cursor: Option<i64>,
    reader: Reader,
    pruned: Option<Instant>,
    last_read: Instant,
}

/// One round: set-up if needed, pruning now and then, one batch. Whether a full
/// batch came (read again at once).
async fn read_once(
    shared: &Shared,
    state: &mut ReadState,
    sink: &broadcast::Sender<DisplayEvent>,
) -> Result<bool, String> {
    let conn = shared.server.connection().await?;
    let result = read_on(shared, &conn, state, sink).await;
    if result.is_err() {
        discard(conn); // it may be inside a failed set-up transaction
    }
    result
}

async fn read_on(
    shared: &Shared,
    conn: &Object,
    state: &mut ReadState,
    sink: &broadcast::Sender<DisplayEvent>,
) -> Result<bool, String> {
    let sql = |e: tokio_postgres::Error| e.to_string();
    let cursor = match state.cursor {
        Some(cursor) => cursor,
        None => {
            let ddl = format!("BEGIN; SELECT pg_advisory_xact_lock({LOCK_CLASS}, {DDL_LOCK}); {DDL} COMMIT;");
            conn.batch_execute(&ddl).await.map_err(sql)?;
            let end: i64 = conn
                .query_one("SELECT coalesce(max(id), 0)::bigint FROM stowage_display_journal", &[])
                .await
                .map_err(sql)?
                .try_get(0)
                .map_err(sql)?;
            state.cursor = Some(end);
            end
        }
    };
    if state.pruned.is_none_or(|at| at.elapsed() > RETENTION / 10) {
        let secs = RETENTION.as_secs() as f64;
        conn.execute(
            "DELETE FROM stowage_display_journal WHERE created_at < now() - make_interval(secs => $1)",
            &[&secs],
        )
        .await
        .map_err(sql)?;
        state.pruned = Some(Instant::now());
    }
    if state.last_read.elapsed() > RETENTION {
        tracing::warn!(
            store = %shared.store,
            "the display event journal was unreadable for longer than it keeps events: some may be missed"
        );
    }
    let rows = conn
        .query(
            "SELECT id, origin, counter, tenant, user_id, conversation_id, payload, tag FROM stowage_display_journal \
             WHERE id > $1 ORDER BY id LIMIT $2",
            &[&cursor, &BATCH],
        )
        .await
        .map_err(sql)?;
    state.last_read = Instant::now();
    for row in &rows {
        // Columns are read with checks: the table is in reach of the adapter's SQL.
        let id: i64 = row.try_get(0).map_err(sql)?;
        state.cursor = Some(id);
        let entry = match entry_of(row) {
            Ok(entry) => entry,
            Err(e) => {
                tracing::warn!(store = %shared.store, id, error = %e, "dropped a malformed display event journal row");
                continue;
            }
        };
        let (conversation, counter) = (entry.conversation_id.clone(), entry.counter);
        match state.reader.open(&shared.protector, entry) {
            Ok(event) => {
                let _ = sink.send(event); // no subscriber is fine
            }
            Err(why) => tracing::warn!(
                store = %shared.store, %conversation, counter, reason = %why,
                "dropped a display event journal entry"
            ),
        }
    }
    Ok(rows.len() as i64 == BATCH)
}

fn entry_of(row: &tokio_postgres::Row) -> Result<Entry, tokio_postgres::Error> {
    let counter: i64 = row.try_get(2)?;
    Ok(Entry {
        origin: row.try_get(1)?,
        counter: u64::try_from(counter).unwrap_or(0),
        scope: Scope::new(row.try_get::<_, String>(3)?, row.try_get::<_, String>(4)?),
        conversation_id: row.try_get(5)?,
        payload: row.try_get(6)?,
        tag: row.try_get(7)?,
    })
}
