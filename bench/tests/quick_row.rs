//! The whole row at quick scale on the native baseline: every phase runs, every check
//! passes, and the result carries every figure the table needs (no timing assertions).

use stowage_bench::native::{Durability, NativeKind};
use stowage_bench::phases::{Phases, Scale, run_row};
use stowage_bench::report::{RunResult, key, merge, render_markdown};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quick_native_row_reports_every_phase() {
    let base = tempfile::tempdir().unwrap();
    let scale = Scale::quick();
    let kind = NativeKind::new(Durability::Normal);
    let result =
        run_row(&kind, base.path(), &scale, 0, Phases { c: true, b: true, e: true, e_curve: true }).await.unwrap();

    for metric in [
        key::A_MEDIAN,
        key::A_P99,
        key::A_RATE,
        key::C_NEWEST_MEDIAN,
        key::C_ALL_MEDIAN,
        key::B_RATE,
        key::B_P99,
        key::D_BYTES,
        key::D_BYTES_OPEN,
        key::E_MAIN_RATE,
        key::E_LARGE_RATE,
    ] {
        assert!(result.metrics.get(metric).is_some_and(|v| *v > 0.0), "{metric} missing or zero");
    }
    assert_eq!(result.description.row, "native-normal");
    assert_eq!(result.a_buckets.len(), (scale.a_messages as usize).div_ceil(scale.a_bucket));
    let agents: Vec<usize> = result.e_curve.iter().map(|p| p.agents).collect();
    assert_eq!(agents, [1, 4, 10, 40]);
    assert!(result.checks.iter().any(|c| c.starts_with("C:")));
    assert!(result.checks.iter().any(|c| c.starts_with("B:")));
    assert!(result.checks.iter().any(|c| c.starts_with("E:")));
    // The run's directory is gone; nothing else was left under the base.
    assert_eq!(std::fs::read_dir(base.path()).unwrap().count(), 0);

    // The JSON round-trips and renders.
    let json = serde_json::to_string(&result).unwrap();
    let back: RunResult = serde_json::from_str(&json).unwrap();
    assert_eq!((&back.description, &back.checks, back.e_curve.len()), (&result.description, &result.checks, 4));
    // serde_json parses floats to within an ulp (no `float_roundtrip`): compare closely, not exactly.
    assert!(back.metrics.keys().eq(result.metrics.keys()));
    assert!(back.metrics.values().zip(result.metrics.values()).all(|(a, b)| (a - b).abs() <= b.abs() * 1e-12));
    let suite = stowage_bench::report::Suite {
        schema: stowage_bench::report::SCHEMA,
        machine: Default::default(),
        command: "test".into(),
        rows: merge(std::slice::from_ref(&result)),
        runs: vec![result],
    };
    assert!(render_markdown(&suite).contains("| native rusqlite | NORMAL |"));
}
