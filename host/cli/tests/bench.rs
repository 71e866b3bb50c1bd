//! `stowage bench --quick --runs 1` end to end (the CI smoke run): the SQLite row and
//! the native rows each run in a fresh process, with their probes, and the table and
//! `suite.json` carry every row with numbers. No timing assertions: only that the
//! figures exist and are positive.

use std::path::Path;

use anyhow::{Context, ensure};
use assert_cmd::Command;

#[test]
fn quick_bench_prints_every_row_with_numbers() -> anyhow::Result<()> {
    // On the target directory's file system (the bench refuses tmpfs).
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    let out_dir = scratch.path().join("results");
    let runs_dir = scratch.path().join("runs");
    std::fs::create_dir(&runs_dir)?;
    let output = Command::cargo_bin("stowage")?
        .env("STOWAGE_CACHE_DIR", Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-component-cache"))
        .args([
            "bench",
            "--quick",
            "--runs",
            "1",
            "--no-curve",
            "--rows",
            "native-full,native-normal,stowage-sqlite-full",
        ])
        .arg("--out-dir")
        .arg(&out_dir)
        .arg("--tmp-dir")
        .arg(&runs_dir)
        .output()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    ensure!(output.status.success(), "stowage bench failed:\n{stdout}\n{stderr}");

    for row in ["| native rusqlite | FULL |", "| native rusqlite | NORMAL |", "| Stowage sqlite | FULL |"] {
        let line = stdout.lines().find(|l| l.starts_with(row)).with_context(|| format!("no row {row}:\n{stdout}"))?;
        ensure!(!line.contains("| – |"), "a main-table figure is missing: {line}");
    }
    ensure!(stdout.contains("Probes"), "no probe table:\n{stdout}");
    ensure!(std::fs::read_to_string(out_dir.join("table.md"))? == stdout, "table.md differs from what was printed");

    let suite: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out_dir.join("suite.json"))?)?;
    let rows = suite["rows"].as_array().context("suite.json has rows")?;
    let ids: Vec<&str> = rows.iter().filter_map(|r| r["description"]["row"].as_str()).collect();
    ensure!(ids.len() == 3, "rows {ids:?}");
    for row in rows {
        let id = row["description"]["row"].as_str().unwrap_or("?");
        for key in [
            "a.median_us",
            "b.msgs_per_s",
            "c.newest.median_us",
            "c.all.median_us",
            "d.bytes",
            "e.main.msgs_per_s",
            "e.large.msgs_per_s",
            "probe.first_append_warm_us",
            "probe.first_append_cold_us",
            "probe.peak_rss_warm_bytes",
        ] {
            let value = row["metrics"][key]["median"].as_f64();
            ensure!(value.is_some_and(|v| v > 0.0), "{id}: {key} is {value:?}");
        }
    }
    let stowage = rows.iter().find(|r| r["description"]["row"] == "stowage-sqlite-full").context("stowage row")?;
    for key in ["a.median_us", "probe.first_append_warm_us"] {
        ensure!(stowage["ratios"][key].as_f64().is_some_and(|r| r > 0.0), "no ratio for {key} against native");
    }
    ensure!(stowage["metrics"]["probe.adapter_bytes"]["median"].as_f64().is_some_and(|b| b > 0.0));
    // Every run directory was removed; only the compiled-cache dirs' parent stays empty.
    ensure!(std::fs::read_dir(&runs_dir)?.count() == 0, "the runs left files in {}", runs_dir.display());
    Ok(())
}
