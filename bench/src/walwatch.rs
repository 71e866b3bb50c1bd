//! Observes SQLite WAL checkpoints of any store from outside, through its files.
//!
//! After a checkpoint has copied the whole WAL back into the database, the next write
//! restarts the WAL from its beginning and rewrites its header with the checkpoint
//! sequence number (bytes 12..16) incremented and a new salt (bytes 16..20). Reading those
//! 8 bytes after every call (untimed) therefore tells which call ran a checkpoint: when the
//! header changed during call `i`, the checkpoint ran during call `i − 1`, the commit that
//! crossed the auto-checkpoint threshold. A checkpoint that was not followed by another
//! write yet is not seen. The Python harness uses the same method.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Watches every `*-wal` file under a store's directory.
#[derive(Debug)]
pub struct WalWatch {
    dir: PathBuf,
    wals: Vec<(File, Option<[u8; 8]>)>,
    restarts: u64,
    observations: u64,
}

impl WalWatch {
    pub fn new(dir: &Path) -> Self {
        Self { dir: dir.to_path_buf(), wals: Vec::new(), restarts: 0, observations: 0 }
    }

    /// Reads the WAL headers; returns true when a WAL restarted (after a checkpoint)
    /// since the previous observation. I/O errors count as "nothing seen".
    ///
    /// WAL files are looked for until found, at the 1st, 2nd, 4th, 8th, …
    /// observation: a store that never has one (the null and filesystem adapters)
    /// had its directories listed after every call (6 directory reads and 3 opens),
    /// which, untimed as it was, still took the CPU's caches from the next call.
    pub fn observe(&mut self) -> bool {
        self.observations += 1;
        if self.wals.is_empty() && self.observations.is_power_of_two() {
            self.wals =
                find_wals(&self.dir, 3).into_iter().filter_map(|p| File::open(p).ok()).map(|f| (f, None)).collect();
        }
        let mut restarted = false;
        for (file, last) in &mut self.wals {
            let mut header = [0u8; 8];
            if file.read_exact_at(&mut header, 12).is_err() {
                continue;
            }
            if let Some(previous) = last
                && *previous != header
            {
                restarted = true;
                self.restarts += 1;
            }
            *last = Some(header);
        }
        restarted
    }

    /// WAL restarts seen so far: checkpoints that were followed by a write.
    pub fn restarts(&self) -> u64 {
        self.restarts
    }
}

/// Indices of the calls that ran a checkpoint, from per-call "restart seen" flags.
pub fn checkpoint_calls(restart_seen: &[bool]) -> Vec<usize> {
    restart_seen.iter().enumerate().filter(|&(i, &seen)| seen && i > 0).map(|(i, _)| i - 1).collect()
}

fn find_wals(dir: &Path, depth: u32) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return found };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(kind) if kind.is_dir() && depth > 0 => found.extend(find_wals(&path, depth - 1)),
            Ok(kind) if kind.is_file() && path.to_string_lossy().ends_with("-wal") => found.push(path),
            _ => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::{Connection, params};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    /// Replays SQLite's own auto-checkpoint in a WAL hook, so the test knows exactly which
    /// commit checkpointed, and checks the watcher attributes each one to the same call.
    #[test]
    fn sees_every_checkpoint_on_the_call_that_ran_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = Connection::open(dir.path().join("t.db")).unwrap();
        let _: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)).unwrap();
        conn.pragma_update(None, "synchronous", "OFF").unwrap();
        conn.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)").unwrap();
        let ran = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicU64::new(0));
        let (hook_ran, hook_count) = (ran.clone(), count.clone());
        conn.wal_hook(Some(move |wal: &mut rusqlite::hooks::Wal, pages| {
            if pages >= 100 {
                hook_ran.store(true, Ordering::SeqCst);
                hook_count.fetch_add(1, Ordering::SeqCst);
                return wal.checkpoint();
            }
            Ok(())
        }))
        .unwrap();

        let mut watch = WalWatch::new(dir.path());
        let (mut hook_calls, mut seen) = (Vec::new(), Vec::new());
        let body = "x".repeat(3000);
        for i in 0..400 {
            ran.store(false, Ordering::SeqCst);
            conn.execute("INSERT INTO t (body) VALUES (?1)", params![body]).unwrap();
            if ran.load(Ordering::SeqCst) {
                hook_calls.push(i);
            }
            seen.push(watch.observe());
        }
        let total = count.load(Ordering::SeqCst);
        assert!(total >= 3, "checkpoints: {total}");
        let observed = checkpoint_calls(&seen);
        // Every observed checkpoint is one the hook ran; only a last, unfollowed one may be missing.
        assert_eq!(observed, hook_calls[..observed.len()].to_vec());
        assert!(hook_calls.len() - observed.len() <= 1);
        assert_eq!(watch.restarts(), observed.len() as u64);
    }

    #[test]
    fn no_wal_means_nothing_seen() {
        let dir = tempfile::tempdir().unwrap();
        let mut watch = WalWatch::new(dir.path());
        assert!(!watch.observe());
        assert_eq!(checkpoint_calls(&[true, false, true]), vec![1]);
    }
}
