//! The conformance catalogue against every shipped adapter. The SQLite
//! adapter's runs twice: as stores run it (the host runs its load and append
//! plans), and with every call reaching the adapter, so its own `load` and
//! `append` (and their statements under injected faults) answer every case.

use stowage::{Builtin, Limits};
use stowage_tests::{Outcome, Subject, run_catalogue, shared_runtime};

async fn check_subject(subject: Subject) -> anyhow::Result<()> {
    let report = run_catalogue(&subject, &shared_runtime()?).await;
    println!("{}", report.render());
    anyhow::ensure!(report.passed(), "{} failed conformance:\n{}", subject.name, report.render());
    Ok(())
}

async fn check(builtin: Builtin) -> anyhow::Result<()> {
    check_subject(Subject::builtin(builtin)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_adapter_conforms() -> anyhow::Result<()> {
    check(Builtin::Sqlite).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_adapter_conforms_with_every_call_reaching_it() -> anyhow::Result<()> {
    let calls_only = Limits { load_plans: false, append_plans: false, ..Limits::default() };
    check_subject(Subject::builtin(Builtin::Sqlite).with_limits(calls_only)).await
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
