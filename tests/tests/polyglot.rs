//! The example adapters in C, JavaScript and Python (`guest-adapters/examples`)
//! pass the conformance catalogue, with the grants their stores declare.
//!
//! They are built outside cargo, by `.ci/polyglot-toolchains.sh &&
//! guest-adapters/examples/build.sh`, into `target/wasm-guests/examples/`. A
//! missing one is skipped with that instruction printed (so `cargo test` works on
//! a machine without those toolchains), and fails its test when
//! `STOWAGE_REQUIRE_POLYGLOT=1` (CI, which builds them first).
//!
//! Compiling the Python component takes tens of seconds, so every runtime of
//! this process (the shared one and the restart cases' fresh ones) keeps
//! compiled components in one on-disk cache beside the examples; later runs of
//! the test load them from there too (entries are keyed by the component's
//! digest and the engine, so a rebuilt example is compiled again).

use std::path::PathBuf;

use anyhow::ensure;
use stowage::{Capability, Grants};
use stowage_conformance::cache_compiled_components_in;
use stowage_tests::{Outcome, Subject, run_catalogue, shared_runtime};

fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/wasm-guests/examples")
}

/// The example `name`, built; `None` (skipped, said on stderr) if it is not,
/// an error saying how to build it when `STOWAGE_REQUIRE_POLYGLOT=1`.
fn example(name: &str) -> anyhow::Result<Option<PathBuf>> {
    let path = examples_dir().join(format!("{name}.wasm"));
    if path.is_file() {
        return Ok(Some(path));
    }
    let how = format!(
        "{} is missing: build the example adapters with `.ci/polyglot-toolchains.sh && \
         guest-adapters/examples/build.sh` (set STOWAGE_TOOLCHAINS to reuse installed toolchains)",
        path.display()
    );
    ensure!(std::env::var("STOWAGE_REQUIRE_POLYGLOT").as_deref() != Ok("1"), "{how}");
    eprintln!("SKIPPED the {name} example adapter: {how}; STOWAGE_REQUIRE_POLYGLOT=1 makes this a failure");
    Ok(None)
}

/// Runs the catalogue on example `name` with `grants`; every case it does not
/// run must be one of `not_applicable` (no case is dropped by accident).
async fn conforms(name: &str, grants: &[Capability], not_applicable: &[&str]) -> anyhow::Result<()> {
    let Some(path) = example(name)? else { return Ok(()) };
    cache_compiled_components_in(examples_dir().join("compiled"));
    let report = run_catalogue(&Subject::file(&path, Grants::of(grants)), &shared_runtime()?).await;
    println!("{}", report.render());
    ensure!(report.passed(), "the {name} example failed conformance:\n{}", report.render());
    let skipped: Vec<&str> =
        report.results.iter().filter(|(_, o)| matches!(o, Outcome::NotApplicable(_))).map(|(case, _)| *case).collect();
    ensure!(skipped == not_applicable, "the {name} example skipped {skipped:?}, expected {not_applicable:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_example_conforms() -> anyhow::Result<()> {
    // Stores through `sql`, so the SQL fault cases run too.
    conforms(
        "c",
        &[Capability::Sql],
        &["a_torn_last_write_is_absent_at_every_byte", "null_accepts_writes_and_keeps_nothing"],
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_example_conforms() -> anyhow::Result<()> {
    // QuickJS's runtime imports wasi:filesystem, which needs the grant; the
    // data is in SQL.
    conforms(
        "js",
        &[Capability::Sql, Capability::Filesystem],
        &["a_torn_last_write_is_absent_at_every_byte", "null_accepts_writes_and_keeps_nothing"],
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_example_conforms() -> anyhow::Result<()> {
    conforms(
        "python",
        &[Capability::Filesystem],
        &[
            "batch_is_atomic_under_sql_faults",
            "a_torn_last_write_is_absent_at_every_byte",
            "null_accepts_writes_and_keeps_nothing",
        ],
    )
    .await
}
