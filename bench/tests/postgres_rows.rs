//! The PostgreSQL rows at quick scale: `native-pg` and `stowage-sqlite-pg` run every
//! phase on the server of `STOWAGE_BENCH_POSTGRES_URL` (default: the local one), every
//! check passes, the Stowage row's ratios are taken against `native-pg`, and no schema is
//! left behind. No timing assertions.
//!
//! Without a server it prints `SKIPPED` and why, and passes; with
//! `STOWAGE_REQUIRE_POSTGRES=1` it fails instead.

use std::io::Write as _;
use std::time::Duration;

use stowage_bench::native_pg::NativePgKind;
use stowage_bench::pg::{URL_ENV, base_url, connect, describe_server};
use stowage_bench::phases::{Phases, Scale, run_row};
use stowage_bench::report::{RunResult, Suite, key, merge, render_markdown};
use stowage_bench::stowage_store::{POSTGRES_ROW, StowageKind, StowageRow, runtime_config};

const INSTANCES: u32 = 4;

/// Whether a server answers; panics without one when `STOWAGE_REQUIRE_POSTGRES=1`.
async fn server_answers() -> bool {
    let url = base_url();
    let answer = tokio::time::timeout(Duration::from_secs(15), describe_server(&url)).await;
    let why = match answer {
        Ok(Ok(server)) => {
            println!("PostgreSQL at {url}: {server}");
            return true;
        }
        Ok(Err(e)) => e.to_string(),
        Err(_) => "no answer within 15 s".to_owned(),
    };
    if std::env::var("STOWAGE_REQUIRE_POSTGRES").as_deref() == Ok("1") {
        panic!(
            "STOWAGE_REQUIRE_POSTGRES=1 but no PostgreSQL server answers at {url} ({why}); install one \
             (Debian: `apt-get install postgresql`) or point {URL_ENV} at one"
        );
    }
    // Straight to stderr, past libtest's capture: a skip must be seen.
    let _ = writeln!(
        std::io::stderr(),
        "\n*** SKIPPED postgres_rows: no PostgreSQL server at {url} ({why}); set {URL_ENV}, or \
         STOWAGE_REQUIRE_POSTGRES=1 to make this a failure ***\n"
    );
    false
}

fn check(result: &RunResult, row: &str) {
    assert_eq!(result.description.row, row);
    assert_eq!(result.description.sync, "PG");
    for metric in [
        key::A_MEDIAN,
        key::A_RATE,
        key::C_NEWEST_MEDIAN,
        key::C_ALL_MEDIAN,
        key::B_RATE,
        key::B_P99,
        key::D_BYTES,
        key::E_MAIN_RATE,
        key::E_LARGE_RATE,
    ] {
        assert!(result.metrics.get(metric).is_some_and(|v| *v > 0.0), "{row}: {metric} missing or zero");
    }
    for phase in ["C:", "B:", "E:"] {
        assert!(result.checks.iter().any(|c| c.starts_with(phase) && !c.contains("skipped")), "{row}: {phase}");
    }
    let m = |k: &str| result.metrics[k];
    println!(
        "{row}: A {:.0} appends/s (median {:.0} µs), B {:.0} msgs/s, C newest median {:.0} µs, D {:.0} KiB, \
         E main {:.0} msgs/s, E large {:.0} msgs/s",
        m(key::A_RATE),
        m(key::A_MEDIAN),
        m(key::B_RATE),
        m(key::C_NEWEST_MEDIAN),
        m(key::D_BYTES) / 1024.0,
        m(key::E_MAIN_RATE),
        m(key::E_LARGE_RATE),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_postgres_rows_run_at_quick_scale() {
    if !server_answers().await {
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let (scale, phases) = (Scale::quick(), Phases { c: true, b: true, e: true, e_curve: true });

    let native = NativePgKind::new(base_url(), INSTANCES as usize).await.unwrap();
    let native = run_row(&native, base.path(), &scale, 0, phases).await.unwrap();
    check(&native, "native-pg");

    let runtime = stowage::Runtime::new(runtime_config(Some(cache.path().to_path_buf()), INSTANCES)).unwrap();
    let row = StowageRow::parse(POSTGRES_ROW).unwrap().unwrap();
    let kind = StowageKind::new(row, runtime, INSTANCES).await.unwrap();
    let stowage = run_row(&kind, base.path(), &scale, 0, phases).await.unwrap();
    check(&stowage, POSTGRES_ROW);

    // Ratios against native-pg (A's median: the two rows' own values divided).
    let runs = vec![native, stowage];
    let rows = merge(&runs);
    let want = runs[1].metrics[key::A_MEDIAN] / runs[0].metrics[key::A_MEDIAN];
    assert!((rows[1].ratios[key::A_MEDIAN] - want).abs() <= want * 1e-9);
    assert!(rows[1].ratios.contains_key(key::E_MAIN_VS_NATIVE_B));
    let suite = Suite {
        schema: stowage_bench::report::SCHEMA,
        machine: Default::default(),
        command: "test".into(),
        runs,
        rows,
    };
    let table = render_markdown(&suite);
    assert!(table.contains("| native tokio-postgres | PG |"), "{table}");
    assert!(table.contains("| Stowage sqlite on PostgreSQL | PG |"), "{table}");

    // Every store's schema was dropped, and nothing was left in the run directories.
    let client = connect(&base_url()).await.unwrap();
    let prefix = format!("stowage\\_bench\\_{}\\_%", std::process::id());
    let left: i64 =
        client.query_one("SELECT count(*) FROM pg_namespace WHERE nspname LIKE $1", &[&prefix]).await.unwrap().get(0);
    assert_eq!(left, 0, "schemas left behind");
    assert_eq!(std::fs::read_dir(base.path()).unwrap().count(), 0);
}
