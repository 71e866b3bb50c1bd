//! Where a run happens: the temp-directory rule (normal filesystem, never tmpfs), the
//! bytes a store left on disk, and a description of the machine for the report.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{BenchError, Result};

/// File systems that keep data in memory: a run there would not measure the disk.
const MEMORY_FILESYSTEMS: [&str; 4] = ["tmpfs", "ramfs", "devtmpfs", "hugetlbfs"];

/// The file-system type holding `path` (longest mount point prefix in `/proc/self/mounts`).
pub fn filesystem_of(path: &Path) -> Result<String> {
    let path = path.canonicalize().map_err(|e| BenchError::io(path, e))?;
    let mounts = std::fs::read_to_string("/proc/self/mounts").map_err(|e| BenchError::io("/proc/self/mounts", e))?;
    let mut best: Option<(usize, String)> = None;
    for line in mounts.lines() {
        let mut fields = line.split_whitespace();
        let (Some(_source), Some(target), Some(kind)) = (fields.next(), fields.next(), fields.next()) else { continue };
        // /proc/self/mounts escapes spaces as \040.
        let target = target.replace("\\040", " ");
        if path.starts_with(&target) && best.as_ref().is_none_or(|(len, _)| target.len() >= *len) {
            best = Some((target.len(), kind.to_string()));
        }
    }
    best.map(|(_, kind)| kind).ok_or_else(|| BenchError::Config(format!("no mount found for {}", path.display())))
}

/// The base directory for runs: `requested`, or the system temp dir. Fails on a memory
/// file system (tmpfs): pass a directory on the normal file system instead.
pub fn run_base(requested: Option<&Path>) -> Result<(PathBuf, String)> {
    let base = requested.map(Path::to_path_buf).unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&base).map_err(|e| BenchError::io(&base, e))?;
    let kind = filesystem_of(&base)?;
    if MEMORY_FILESYSTEMS.contains(&kind.as_str()) {
        return Err(BenchError::Config(format!(
            "{} is on {kind}: the workload requires the normal file system; pass --tmp-dir on disk",
            base.display()
        )));
    }
    Ok((base, kind))
}

/// Total bytes of every file under `dir`, recursively.
pub fn bytes_under(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).map_err(|e| BenchError::io(dir, e))? {
        let entry = entry.map_err(|e| BenchError::io(dir, e))?;
        let meta = entry.metadata().map_err(|e| BenchError::io(entry.path(), e))?;
        total += if meta.is_dir() { bytes_under(&entry.path())? } else { meta.len() };
    }
    Ok(total)
}

/// The device's flush latency right now: median µs of `rounds` × (write 4 KiB, `fdatasync`)
/// in a scratch file under `dir`. Recorded before and after each run, because on shared
/// machines it can change by an order of magnitude from one minute to the next.
pub fn fsync_probe(dir: &Path, rounds: usize) -> Result<f64> {
    use std::os::unix::fs::FileExt;
    let path = dir.join("fsync-probe");
    let file = std::fs::File::create(&path).map_err(|e| BenchError::io(&path, e))?;
    let block = [0x5a_u8; 4096];
    let mut times = Vec::with_capacity(rounds);
    for i in 0..rounds {
        file.write_all_at(&block, (i % 16) as u64 * 4096).map_err(|e| BenchError::io(&path, e))?;
        let start = std::time::Instant::now();
        file.sync_data().map_err(|e| BenchError::io(&path, e))?;
        times.push(start.elapsed().as_secs_f64() * 1e6);
    }
    drop(file);
    std::fs::remove_file(&path).map_err(|e| BenchError::io(&path, e))?;
    Ok(crate::stats::median(&times).unwrap_or(0.0))
}

/// The machine a suite ran on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub cpus: usize,
    pub cpu_model: String,
    pub kernel: String,
    pub temp_dir: String,
    pub temp_filesystem: String,
    pub sqlite: String,
    /// Whether `perf stat -e instructions` counts instructions here (false in most VMs).
    pub perf_instructions: bool,
}

impl Machine {
    /// Describes this machine; `base` is the directory runs are made under.
    pub fn describe(base: &Path, filesystem: &str) -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find(|line| line.starts_with("model name"))
            .and_then(|line| line.split(':').nth(1))
            .map(|model| model.trim().to_string())
            .unwrap_or_default();
        Self {
            cpus: std::thread::available_parallelism().map(usize::from).unwrap_or(1),
            cpu_model,
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string(),
            temp_dir: base.display().to_string(),
            temp_filesystem: filesystem.to_string(),
            sqlite: rusqlite::version().to_string(),
            perf_instructions: perf_counts_instructions(),
        }
    }
}

fn perf_counts_instructions() -> bool {
    std::process::Command::new("perf")
        .args(["stat", "-x,", "-e", "instructions", "true"])
        .output()
        .map(|out| {
            let report = String::from_utf8_lossy(&out.stderr);
            out.status.success() && !report.contains("not supported") && !report.contains("not counted")
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_nested_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), [0u8; 10]).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/b"), [0u8; 5]).unwrap();
        assert_eq!(bytes_under(dir.path()).unwrap(), 15);
    }

    #[test]
    fn probes_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        assert!(fsync_probe(dir.path(), 3).unwrap() > 0.0);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn root_has_a_filesystem() {
        assert!(!filesystem_of(Path::new("/")).unwrap().is_empty());
    }

    #[test]
    fn refuses_memory_filesystems() {
        if filesystem_of(Path::new("/dev/shm")).is_ok_and(|kind| kind == "tmpfs") {
            assert!(matches!(run_base(Some(Path::new("/dev/shm"))), Err(BenchError::Config(_))));
        }
    }
}
