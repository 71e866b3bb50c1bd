//! The native PostgreSQL baseline (`native-pg`): tokio-postgres connections in a
//! deadpool-postgres pool, like the host's, on the server of [`crate::pg`]. The schema of
//! the native SQLite row: `messages(id BIGINT identity PRIMARY KEY, conv TEXT NOT NULL,
//! body TEXT NOT NULL)` with an index on `(conv, id)`, bodies as compact JSON.
//!
//! Input: `serde_json::Value`, serialised inside the timed call. Output: `serde_json::Value`,
//! decoded with serde_json inside the timed call. One append is one statement, so one
//! transaction and one round trip: a single `INSERT … VALUES`, or for a batch
//! `INSERT … SELECT $1, body FROM unnest($2::text[]) WITH ORDINALITY … ORDER BY ordinality`.
//! A call returns after the server's commit, as durable as its `synchronous_commit`.
//!
//! Each store is a fresh schema ([`PgSchema`]), dropped when it closes. The sequential
//! phases use one connection; phase E a pool of min(agents, `e_pool`) connections (the
//! suite passes the Stowage rows' instance cap, so both PostgreSQL rows get as many
//! connections). Connections are made, and their statements prepared, before any timer.

use std::path::Path;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use serde_json::Value;
use tokio_postgres::NoTls;

use crate::error::{BenchError, Result};
use crate::pg::{PgSchema, describe_server};
use crate::runner::{OpenFor, POSTGRES_SYNC, RowDescription, StoreKind, StoreRunner};
use crate::workload::Message;

/// The row id.
pub const ROW: &str = "native-pg";

const SCHEMA: &str = "CREATE TABLE messages (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, conv TEXT NOT NULL, body TEXT NOT NULL);
     CREATE INDEX messages_conv_id ON messages (conv, id);";
const INSERT_ONE: &str = "INSERT INTO messages (conv, body) VALUES ($1, $2)";
const INSERT_MANY: &str = "INSERT INTO messages (conv, body) \
     SELECT $1, b.body FROM unnest($2::text[]) WITH ORDINALITY AS b(body, n) ORDER BY b.n";
const NEWEST: &str = "SELECT body FROM messages WHERE conv = $1 ORDER BY id DESC LIMIT $2";
const ALL: &str = "SELECT body FROM messages WHERE conv = $1 ORDER BY id";

/// Opens native PostgreSQL stores.
#[derive(Clone, Debug)]
pub struct NativePgKind {
    /// The server's URL (without a schema).
    pub url: String,
    /// Connections in phase E's pool (at most one per agent).
    pub e_pool: usize,
    server: String,
}

impl NativePgKind {
    /// A kind on the server at `url`; fails when it does not answer.
    pub async fn new(url: String, e_pool: usize) -> Result<Self> {
        let server = describe_server(&url).await?;
        Ok(Self { url, e_pool: e_pool.max(1), server })
    }
}

impl StoreKind for NativePgKind {
    type Runner = NativePgRunner;

    fn describe(&self) -> RowDescription {
        RowDescription {
            row: ROW.into(),
            label: "native tokio-postgres".into(),
            sync: POSTGRES_SYNC.into(),
            baseline: true,
            input: "serde_json::Value; serialised to compact JSON inside the call".into(),
            output: "serde_json::Value; decoded with serde_json inside the call".into(),
            notes: vec![
                format!("server: {}", self.server),
                "one statement (one transaction, one round trip) per append: INSERT … VALUES, or for a batch \
                 INSERT … SELECT FROM unnest($2::text[]) WITH ORDINALITY; a fresh schema per store"
                    .into(),
                format!(
                    "deadpool-postgres pool: 1 connection in A–D, min(agents, {}) in phase E; connections made and \
                     statements prepared before the timers",
                    self.e_pool
                ),
            ],
        }
    }

    async fn open(&self, _dir: &Path, purpose: OpenFor) -> Result<NativePgRunner> {
        let size = match purpose {
            OpenFor::Sequential => 1,
            OpenFor::Concurrent { agents } => self.e_pool.clamp(1, agents.max(1)),
        };
        let schema = PgSchema::create(&self.url).await?;
        let mut config: tokio_postgres::Config = schema.url.parse()?;
        config.application_name("stowage-bench");
        let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager)
            .max_size(size)
            .build()
            .map_err(|e| BenchError::Postgres(format!("building the connection pool: {e}")))?;
        // Make every connection and prepare its statements now, outside the timers.
        let mut connections: Vec<Object> = Vec::with_capacity(size);
        for i in 0..size {
            let client = pool.get().await?;
            if i == 0 {
                client.batch_execute(SCHEMA).await?;
            }
            for sql in [INSERT_ONE, INSERT_MANY, NEWEST, ALL] {
                client.prepare_cached(sql).await?;
            }
            connections.push(client);
        }
        drop(connections);
        Ok(NativePgRunner { pool, schema })
    }
}

/// One open native PostgreSQL store: a pool on a schema of its own.
pub struct NativePgRunner {
    pool: Pool,
    schema: PgSchema,
}

impl NativePgRunner {
    async fn load(&self, conv: &str, newest: Option<usize>) -> Result<Vec<Value>> {
        let client = self.pool.get().await?;
        let rows = match newest {
            Some(n) => {
                let limit = i64::try_from(n).unwrap_or(i64::MAX);
                client.query(&client.prepare_cached(NEWEST).await?, &[&conv, &limit]).await?
            }
            None => client.query(&client.prepare_cached(ALL).await?, &[&conv]).await?,
        };
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let body: &str = row.try_get(0)?;
            out.push(serde_json::from_str(body)?);
        }
        if newest.is_some() {
            out.reverse();
        }
        Ok(out)
    }
}

impl StoreRunner for NativePgRunner {
    type Input = Value;
    type Output = Value;

    fn prepare(&self, message: &Message) -> Result<Value> {
        message.value()
    }

    async fn open_conversation(&self, _conv: &str) -> Result<()> {
        Ok(())
    }

    async fn append(&self, conv: &str, batch: Vec<Value>) -> Result<()> {
        let client = self.pool.get().await?;
        if let [single] = batch.as_slice() {
            let body = serde_json::to_string(single)?;
            client.execute(&client.prepare_cached(INSERT_ONE).await?, &[&conv, &body]).await?;
            return Ok(());
        }
        let bodies = batch.iter().map(serde_json::to_string).collect::<Result<Vec<String>, _>>()?;
        let inserted = client.execute(&client.prepare_cached(INSERT_MANY).await?, &[&conv, &bodies]).await?;
        if inserted != bodies.len() as u64 {
            return Err(BenchError::Store(format!("inserted {inserted} rows of a batch of {}", bodies.len())));
        }
        Ok(())
    }

    async fn load_newest(&self, conv: &str, n: usize) -> Result<Vec<Value>> {
        self.load(conv, Some(n)).await
    }

    async fn load_all(&self, conv: &str) -> Result<Vec<Value>> {
        self.load(conv, None).await
    }

    fn canonical(&self, output: &Value) -> Result<String> {
        Ok(serde_json::to_string(output)?)
    }

    async fn server_bytes(&self) -> Result<Option<u64>> {
        self.schema.bytes().await.map(Some)
    }

    async fn close(self) -> Result<()> {
        self.pool.close();
        self.schema.drop_now().await
    }
}
