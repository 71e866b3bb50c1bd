//! The conformance catalogue against every shipped adapter.

use stowage::Builtin;
use stowage_tests::{Outcome, Subject, run_catalogue, shared_runtime};

async fn check(builtin: Builtin) -> anyhow::Result<()> {
    let report = run_catalogue(&Subject::builtin(builtin), &shared_runtime()?).await;
    println!("{}", report.render());
    anyhow::ensure!(report.passed(), "{} failed conformance:\n{}", builtin.name(), report.render());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_adapter_conforms() -> anyhow::Result<()> {
    check(Builtin::Sqlite).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filesystem_adapter_conforms() -> anyhow::Result<()> {
    check(Builtin::Filesystem).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn null_adapter_conforms() -> anyhow::Result<()> {
    let report = run_catalogue(&Subject::builtin(Builtin::Null), &shared_runtime()?).await;
    println!("{}", report.render());
    anyhow::ensure!(report.passed(), "null failed conformance:\n{}", report.render());
    let applicable = report.results.iter().filter(|(_, o)| !matches!(o, Outcome::NotApplicable(_))).count();
    anyhow::ensure!(applicable == 3, "the null adapter runs exactly its three applicable cases, ran {applicable}");
    Ok(())
}
