//! A host process killed with SIGKILL in the middle of an append loop, many times
//! over: everything acknowledged before each kill is there afterwards, exactly
//! once and in order, and the store opens cleanly.
//!
//! The test binary plays both parts: run with `STOWAGE_CRASH_CHILD` set, the
//! `crash_child` test below becomes the child that appends and prints an
//! acknowledgment after each append returns. Every round must see at least the
//! acknowledgments it waits for before killing the child; a child that exits or
//! stalls first fails the test with the end of its standard error.

mod support;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use stowage::{Builtin, ConversationMeta, NewMessage, Role, Runtime, RuntimeConfig, StoreConfig};
use stowage_tests::shared_runtime;
use support::{all, check_contiguous, scope};

const CHILD_ENV: &str = "STOWAGE_CRASH_CHILD";
/// Marks an acknowledgment in the child's output (libtest may print on the same line).
const ACK: &str = "STOWAGE-ACK";
/// How long a child may take to acknowledge its next append.
const PATIENCE: Duration = Duration::from_secs(120);
/// Lines of the child's standard error kept for failure messages.
const STDERR_LINES: usize = 40;

fn config(adapter: &str, dir: &Path) -> anyhow::Result<StoreConfig> {
    let builtin = Builtin::from_name(adapter).with_context(|| format!("unknown adapter {adapter}"))?;
    Ok(StoreConfig::builtin(builtin, dir))
}

/// The child: append `m{N}` one message at a time, forever, acknowledging each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_child() -> anyhow::Result<()> {
    let Ok(spec) = std::env::var(CHILD_ENV) else { return Ok(()) }; // not a child: nothing to do
    let mut parts = spec.splitn(3, '\n');
    let (Some(adapter), Some(dir), Some(cache)) = (parts.next(), parts.next(), parts.next()) else {
        bail!("{CHILD_ENV} is adapter, data dir and cache dir, one per line: {spec:?}");
    };
    // Compiled adapters are cached on disk so each child starts quickly.
    let runtime = Runtime::new(RuntimeConfig { cache_dir: Some(PathBuf::from(cache)), ..RuntimeConfig::default() })?;
    let store = runtime.open_store(config(adapter, Path::new(dir))?).await?;
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

/// Reads a pipe line by line on a thread of its own.
fn lines_of(pipe: impl Read + Send + 'static) -> (mpsc::Receiver<String>, JoinHandle<()>) {
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    (rx, reader)
}

/// The child's standard error, keeping the last lines.
fn collect_stderr(pipe: impl Read + Send + 'static) -> JoinHandle<VecDeque<String>> {
    std::thread::spawn(move || {
        let mut last = VecDeque::with_capacity(STDERR_LINES);
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if last.len() == STDERR_LINES {
                last.pop_front();
            }
            last.push_back(line);
        }
        last
    })
}

/// The acknowledged message number on `line`, if it is an acknowledgment.
fn ack(line: &str) -> anyhow::Result<Option<u64>> {
    match line.split_once(ACK) {
        Some((_, rest)) => Ok(Some(rest.split_whitespace().next().context("ack number")?.parse()?)),
        None => Ok(None),
    }
}

/// Kills the child and returns the end of its standard error.
fn kill(mut child: Child, stderr: JoinHandle<VecDeque<String>>) -> anyhow::Result<String> {
    child.kill()?; // SIGKILL
    child.wait()?;
    let lines = stderr.join().map_err(|_| anyhow::anyhow!("the stderr reader panicked"))?;
    Ok(lines.into_iter().collect::<Vec<_>>().join("\n"))
}

/// Starts a child, waits for `acks_before_kill` acknowledgments, SIGKILLs it
/// mid-loop and returns every message number it acknowledged.
fn kill_child_after_acks(adapter: &str, dir: &Path, cache: &Path, acks_before_kill: usize) -> anyhow::Result<Vec<u64>> {
    let mut child = Command::new(std::env::current_exe()?)
        .args(["crash_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{adapter}\n{}\n{}", dir.display(), cache.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let (lines, reader) = lines_of(child.stdout.take().context("child stdout")?);
    let stderr = collect_stderr(child.stderr.take().context("child stderr")?);
    let (mut acked, mut other_output) = (Vec::new(), VecDeque::new());
    let mut last_progress = Instant::now();
    while acked.len() < acks_before_kill {
        let wait = PATIENCE.saturating_sub(last_progress.elapsed());
        match lines.recv_timeout(wait) {
            Ok(line) => match ack(&line)? {
                Some(n) => {
                    acked.push(n);
                    last_progress = Instant::now();
                }
                None if other_output.len() < STDERR_LINES => other_output.push_back(line),
                None => {}
            },
            Err(e) => {
                let status = child.try_wait()?;
                let why = match (e, status) {
                    (mpsc::RecvTimeoutError::Timeout, _) => format!("acknowledged nothing for {PATIENCE:?}"),
                    (_, Some(status)) => format!("exited ({status})"),
                    (_, None) => "closed its standard output".to_owned(),
                };
                let stderr = kill(child, stderr)?;
                let stdout = other_output.into_iter().collect::<Vec<_>>().join("\n");
                bail!(
                    "the child {why} after {} of the {acks_before_kill} acknowledgments awaited.\n\
                     its stdout began:\n{stdout}\nits stderr ends:\n{stderr}",
                    acked.len()
                );
            }
        }
    }
    // Killed while it keeps appending.
    kill(child, stderr)?;
    // Acknowledgments printed before the kill but not yet read count too.
    reader.join().map_err(|_| anyhow::anyhow!("the stdout reader panicked"))?;
    for line in lines.try_iter() {
        if let Some(n) = ack(&line)? {
            acked.push(n);
        }
    }
    Ok(acked)
}

async fn kill_repeatedly(adapter: &str) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (data, cache) = (dir.path().join("data"), dir.path().join("cache"));
    // Everything stored before this round: acknowledged, or in flight at a kill.
    let mut before = 0u64;
    for (round, acks) in [1usize, 7, 3, 20, 2, 13, 5, 31, 4, 9].into_iter().enumerate() {
        let acked = kill_child_after_acks(adapter, &data, &cache, acks)?;
        ensure!(acked.len() >= acks, "{adapter} round {round}: only {} acknowledgments", acked.len());
        ensure!(
            acked.iter().copied().eq(before..before + acked.len() as u64),
            "{adapter} round {round}: the child acknowledged {acked:?}, expected to continue from m{before}"
        );
        let store = shared_runtime()?.open_store(config(adapter, &data)?).await?;
        let stored = all(&store, "c").await.with_context(|| format!("{adapter} round {round}: reading back"))?;
        store.close().await;
        check_contiguous(&stored, &format!("{adapter} round {round}"))?;
        let ids: Vec<&str> = stored.iter().map(|m| m.id.as_str()).collect();
        for n in 0..before + acked.len() as u64 {
            ensure!(
                ids.get(n as usize) == Some(&format!("m{n}").as_str()),
                "{adapter} round {round}: m{n} (acknowledged) is missing or out of order; stored ends {:?}",
                &ids[ids.len().saturating_sub(4)..]
            );
        }
        // At most the one append in flight at the kill landed unacknowledged.
        let acknowledged = before as usize + acked.len();
        ensure!(
            ids.len() <= acknowledged + 1,
            "{adapter} round {round}: {} stored, {acknowledged} acknowledged; stored ends {:?}",
            ids.len(),
            &ids[ids.len().saturating_sub(4)..]
        );
        println!("{adapter} round {round}: killed after {} acknowledgments; {} stored in all", acked.len(), ids.len());
        before = ids.len() as u64;
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
