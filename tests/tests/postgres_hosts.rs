//! Many hosts, one database: four host processes on one PostgreSQL schema start
//! at the same moment and append to the same conversations concurrently.
//!
//! - The schema is migrated exactly once (one row per migration in the adapter's
//!   `stowage_migrations`, no host saw a migration fail).
//! - Every conversation's seqs are contiguous from 1, no message is stored twice,
//!   and every acknowledged message is stored at the seq it was acknowledged with
//!   (each host retries a message until it is acknowledged, so what is stored is
//!   exactly what was acknowledged).
//!
//! The test binary plays every part: run with `STOWAGE_PG_HOST_CHILD` set, the
//! `pg_host_child` test becomes one host. Hosts share the integrity keys (as
//! hosts sharing a database must) but not their data directories.

mod support;

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use stowage::{Builtin, ConversationMeta, KeySource, SqlTarget, StoreConfig};
use stowage_tests::fresh_runtime;
use stowage_tests::postgres::{self as pg, Schema};
use support::{all, check_contiguous, scope, text};

const CHILD_ENV: &str = "STOWAGE_PG_HOST_CHILD";
const ACK: &str = "STOWAGE-ACK";
const READY: &str = "STOWAGE-READY";
const FAILED: &str = "STOWAGE-FAILED";
const HOSTS: usize = 4;
const CONVERSATIONS: usize = 3;
const MESSAGES_PER_HOST: usize = 40;
/// The keys every host shares (a test key, not a secret).
const KEYS: &str = "1:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

fn config(url: &str, dir: &Path) -> StoreConfig {
    let mut config = StoreConfig::builtin(Builtin::Sqlite, dir).with_keys(KeySource::Inline(KEYS.into()));
    config.sql = SqlTarget { url: Some(url.to_owned()) };
    config
}

/// One host: opens its store, says it is ready, waits for the go file, then
/// appends its messages round-robin over the conversations, acknowledging each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_host_child() -> anyhow::Result<()> {
    let Ok(spec) = std::env::var(CHILD_ENV) else { return Ok(()) }; // not a child: nothing to do
    let mut parts = spec.splitn(4, '|');
    let (Some(host), Some(dir), Some(go), Some(url)) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        bail!("spec is host|dir|go|url");
    };
    let store = fresh_runtime()?.open_store(config(url, Path::new(dir))).await?;
    println!("{READY} {host}");
    let started = Instant::now();
    while !Path::new(go).exists() {
        ensure!(started.elapsed() < Duration::from_secs(60), "no go signal");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for n in 0..MESSAGES_PER_HOST {
        let conversation = format!("c{}", n % CONVERSATIONS);
        let id = format!("h{host}-m{n}");
        let mut attempts = 0;
        loop {
            let meta = ConversationMeta::default();
            match store.append_creating(&scope(), &conversation, meta, vec![text(&id)]).await {
                Ok(out) => {
                    println!("{ACK} {conversation} {id} {}", out.seqs[0]);
                    break;
                }
                Err(e) => {
                    println!("{FAILED} {id}: {e}");
                    attempts += 1;
                    ensure!(attempts < 50, "{id}: gave up after {attempts} attempts: {e}");
                }
            }
        }
    }
    store.close().await;
    Ok(())
}

#[test]
fn four_hosts_append_to_the_same_conversations() -> anyhow::Result<()> {
    if !pg::available("four_hosts_append_to_the_same_conversations")? {
        return Ok(());
    }
    let schema = Schema::create("hosts")?;
    let scratch = tempfile::tempdir()?;
    let go = scratch.path().join("go");
    let mut children = Vec::new();
    for host in 0..HOSTS {
        let dir = scratch.path().join(format!("host-{host}"));
        let mut child = Command::new(std::env::current_exe()?)
            .args(["pg_host_child", "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, format!("{host}|{}|{}|{}", dir.display(), go.display(), schema.url))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdout = child.stdout.take().context("child stdout")?;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || -> Vec<String> {
            let mut lines = Vec::new();
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.contains(READY) {
                    let _ = ready_tx.send(());
                }
                lines.push(line);
            }
            lines
        });
        children.push((child, reader, ready_rx));
    }
    for (host, (_, _, ready)) in children.iter().enumerate() {
        ready.recv_timeout(Duration::from_secs(120)).with_context(|| format!("host {host} never got ready"))?;
    }
    std::fs::write(&go, b"go")?; // every host starts its first call now
    let mut acked: BTreeMap<String, Vec<(String, u64)>> = BTreeMap::new();
    let mut failures = Vec::new();
    for (host, (mut child, reader, _)) in children.into_iter().enumerate() {
        let status = child.wait()?;
        let lines = reader.join().map_err(|_| anyhow::anyhow!("reader of host {host} panicked"))?;
        ensure!(status.success(), "host {host} failed:\n{}", lines.join("\n"));
        for line in &lines {
            if let Some((_, rest)) = line.split_once(ACK) {
                let fields: Vec<&str> = rest.split_whitespace().collect();
                let [conversation, id, seq] = fields[..] else { bail!("bad ack line {line:?}") };
                acked.entry(conversation.to_owned()).or_default().push((id.to_owned(), seq.parse()?));
            } else if let Some((_, rest)) = line.split_once(FAILED) {
                failures.push(rest.trim().to_owned());
            }
        }
    }
    println!("{} appends were retried, e.g. {:?}", failures.len(), failures.first());
    for failure in &failures {
        ensure!(
            !failure.contains("migrat") && !failure.contains("already exists"),
            "a host failed migrating: {failure}"
        );
    }
    let total: usize = acked.values().map(Vec::len).sum();
    ensure!(total == HOSTS * MESSAGES_PER_HOST, "{total} acknowledgments");

    // Exactly one row per migration: the schema was migrated once.
    let migrations = pg::admin_rows(&format!(
        "SELECT version, count(*) FROM {}.stowage_migrations GROUP BY version ORDER BY version",
        schema.name
    ))?;
    let expected: Vec<Vec<Option<String>>> =
        ["1", "2", "3", "4"].iter().map(|v| vec![Some((*v).to_owned()), Some("1".to_owned())]).collect();
    ensure!(migrations == expected, "migrations table: {migrations:?}");

    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async {
        let store = fresh_runtime()?.open_store(config(&schema.url, &scratch.path().join("checker"))).await?;
        for (conversation, acked) in &acked {
            let stored = all(&store, conversation).await?;
            check_contiguous(&stored, conversation)?;
            let by_id: BTreeMap<&str, u64> = stored.iter().map(|m| (m.id.as_str(), m.seq)).collect();
            for (id, seq) in acked {
                ensure!(
                    by_id.get(id.as_str()) == Some(seq),
                    "{conversation}: {id} acknowledged at seq {seq}, stored {:?}",
                    by_id.get(id.as_str())
                );
            }
            let acked_ids: HashSet<&str> = acked.iter().map(|(id, _)| id.as_str()).collect();
            ensure!(
                acked_ids.len() == stored.len(),
                "{conversation}: {} stored, {} acknowledged",
                stored.len(),
                acked_ids.len()
            );
        }
        store.close().await;
        anyhow::Ok(())
    })
}
