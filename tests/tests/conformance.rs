//! The conformance catalogue against every shipped adapter.

use stowage::Builtin;
use stowage_tests::{Subject, run_catalogue};

async fn check(builtin: Builtin) {
    let report = run_catalogue(&Subject::builtin(builtin)).await;
    println!("{}", report.render());
    assert!(report.passed(), "{} failed conformance:\n{}", builtin.name(), report.render());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_adapter_conforms() {
    check(Builtin::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filesystem_adapter_conforms() {
    check(Builtin::Filesystem).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn null_adapter_conforms() {
    check(Builtin::Null).await;
}
