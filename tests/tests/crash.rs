//! A host process killed with SIGKILL in the middle of an append loop, many times
//! over: everything acknowledged before each kill is there afterwards, exactly
//! once and in order, and the store opens cleanly.
//!
//! The test binary plays both parts: run with `STOWAGE_CRASH_CHILD` set, the
//! `crash_child` test below becomes the child that appends and prints `ack N`.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use stowage::{Builtin, ConversationMeta, Message, NewMessage, Role, Scope, Store, StoreConfig};
use stowage_tests::fresh_runtime;

const CHILD_ENV: &str = "STOWAGE_CRASH_CHILD";
/// Marks an acknowledgment in the child's output (libtest may print on the same line).
const ACK: &str = "STOWAGE-ACK";

fn scope() -> Scope {
    Scope::new("t", "u")
}

fn config(adapter: &str, dir: &Path) -> anyhow::Result<StoreConfig> {
    let builtin = Builtin::from_name(adapter).context("unknown adapter")?;
    Ok(StoreConfig::builtin(builtin, dir))
}

async fn all(store: &Store) -> anyhow::Result<Vec<Message>> {
    stowage_tests::all_messages(store, &scope(), "c").await
}

/// The child: append `m{N}` one message at a time, forever, acknowledging each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_child() -> anyhow::Result<()> {
    let Ok(spec) = std::env::var(CHILD_ENV) else { return Ok(()) }; // not a child: nothing to do
    let (adapter, dir) = spec.split_once(':').context("spec is adapter:dir")?;
    let store = fresh_runtime()?.open_store(config(adapter, Path::new(dir))?).await?;
    store.open(&scope(), "c", ConversationMeta::default()).await?;
    let mut next = store.info(&scope(), "c").await?.message_count;
    loop {
        let id = format!("m{next}");
        let out = store.append(&scope(), "c", vec![NewMessage::text(Role::User, &id).with_id(&id)], None).await?;
        // Flushed at once: an acknowledgment must leave the process before the next append.
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{ACK} {next} seq {}", out.seqs[0])?;
        stdout.flush()?;
        next += 1;
    }
}

fn kill_child_after_acks(
    adapter: &str,
    dir: &Path,
    acks_before_kill: usize,
    acked: &mut Vec<u64>,
) -> anyhow::Result<()> {
    let mut child = Command::new(std::env::current_exe()?)
        .args(["crash_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{adapter}:{}", dir.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let stdout = child.stdout.take().context("child stdout")?;
    let started = Instant::now();
    let mut lines = BufReader::new(stdout).lines();
    let mut seen = 0;
    let record = |line: &str, acked: &mut Vec<u64>| -> anyhow::Result<bool> {
        if let Some((_, rest)) = line.split_once(ACK) {
            acked.push(rest.split_whitespace().next().context("ack number")?.parse()?);
            return Ok(true);
        }
        Ok(false)
    };
    for line in lines.by_ref() {
        if record(&line?, acked)? {
            seen += 1;
            if seen >= acks_before_kill {
                break;
            }
        }
        ensure!(started.elapsed() < Duration::from_secs(60), "the child made no progress");
    }
    child.kill()?; // SIGKILL, while the child keeps appending
    child.wait()?;
    // Acknowledgments printed before the kill but not yet read count too.
    for line in lines {
        record(&line?, acked)?;
    }
    Ok(())
}

async fn kill_repeatedly(adapter: &str) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let mut acked = Vec::new();
    // Kill after varying numbers of acknowledged appends, mid-loop each time.
    for (round, acks) in [1usize, 7, 3, 20, 2, 13, 5, 31, 4, 9].into_iter().enumerate() {
        kill_child_after_acks(adapter, dir.path(), acks, &mut acked)?;
        let store = fresh_runtime()?.open_store(config(adapter, dir.path())?).await?;
        let stored = all(&store).await?;
        ensure!(
            stored.iter().map(|m| m.seq).eq(1..=stored.len() as u64),
            "{adapter} round {round}: seqs not contiguous"
        );
        let ids: Vec<String> = stored.iter().map(|m| m.id.clone()).collect();
        let unique: std::collections::HashSet<&String> = ids.iter().collect();
        ensure!(unique.len() == ids.len(), "{adapter} round {round}: a message is stored twice");
        for n in &acked {
            ensure!(
                ids.get(*n as usize) == Some(&format!("m{n}")),
                "{adapter} round {round}: acknowledged m{n} missing or out of order"
            );
        }
        // At most the one append in flight at the kill may have landed unacknowledged.
        ensure!(
            ids.len() <= acked.len() + 1,
            "{adapter} round {round}: {} stored, {} acknowledged; last stored {:?}, last acknowledged {:?}",
            ids.len(),
            acked.len(),
            &ids[ids.len().saturating_sub(4)..],
            &acked[acked.len().saturating_sub(4)..]
        );
        acked.truncate(0);
        acked.extend(0..ids.len() as u64);
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_append_loses_nothing_acknowledged_sqlite() -> anyhow::Result<()> {
    if std::env::var(CHILD_ENV).is_ok() {
        return Ok(());
    }
    kill_repeatedly("sqlite").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_append_loses_nothing_acknowledged_filesystem() -> anyhow::Result<()> {
    if std::env::var(CHILD_ENV).is_ok() {
        return Ok(());
    }
    kill_repeatedly("filesystem").await
}
