//! check and inspect: the adapter author's kit.

use std::path::Path;
use std::process::ExitCode;

use serde_json::json;
use stowage::AdapterSource;
use stowage_conformance::{Outcome, Subject, run_catalogue};

use crate::context::{Context, bad_input, print_json};

pub async fn check(ctx: &Context, adapter: &Path) -> anyhow::Result<ExitCode> {
    if !adapter.exists() {
        return Err(bad_input(format!("{} does not exist", adapter.display())));
    }
    let source = AdapterSource::File(adapter.to_path_buf());
    // Grant what the adapter asks for: it runs in a scratch directory.
    let description = ctx.runtime.describe(&source).await?;
    let grants = description.grants();
    ctx.runtime.inspect(&source, grants).await?;
    // The restart cases' new runtimes load the compiled adapter from the same disk cache, as a restarted host does.
    if let Some(dir) = stowage::RuntimeConfig::default().cache_dir {
        stowage_conformance::cache_compiled_components_in(dir);
    }
    let report = run_catalogue(&Subject::file(adapter, grants), &ctx.runtime).await;
    if ctx.global.json {
        let cases: Vec<_> = report
            .results
            .iter()
            .map(|(name, outcome)| match outcome {
                Outcome::Pass => json!({ "case": name, "outcome": "pass" }),
                Outcome::Fail(why) => json!({ "case": name, "outcome": "fail", "reason": why }),
                Outcome::NotApplicable(why) => json!({ "case": name, "outcome": "not_applicable", "reason": why }),
            })
            .collect();
        print_json(&json!({ "adapter": adapter, "passed": report.passed(), "cases": cases }))?;
    } else {
        print!("{}", report.render());
    }
    if report.passed() {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("error: {} applicable conformance case(s) failed for {}", report.failures().len(), adapter.display());
    Ok(ExitCode::from(6))
}

pub async fn inspect(ctx: &Context, adapter: &str) -> anyhow::Result<ExitCode> {
    let source = AdapterSource::parse(adapter);
    if let AdapterSource::File(path) = &source
        && !path.exists()
    {
        return Err(bad_input(format!("{} does not exist and is not a built-in adapter name", path.display())));
    }
    let description = ctx.runtime.describe(&source).await?;
    let grants = description.grants();
    let checks = ctx.runtime.inspect(&source, grants).await;
    let network = description.imports.iter().any(|i| i.starts_with("wasi:sockets/"));
    if ctx.global.json {
        print_json(&json!({
            "adapter": adapter,
            "sha256": description.digest,
            "size": description.size,
            "contract_version": description.contract_version,
            "host_contract_version": stowage::CONTRACT_VERSION,
            "capabilities": description.capabilities,
            "imports_network": network,
            "imports": description.imports,
            "exports": description.exports,
            "loader_checks": match &checks { Ok(_) => json!("passed"), Err(e) => json!(e.to_string()) },
        }))?;
    } else {
        println!("adapter:       {adapter}");
        println!("sha256:        {}", description.digest);
        println!("size:          {} bytes", description.size);
        match &description.contract_version {
            Some(version) => {
                println!("contract:      stowage:store@{version} (this host: {})", stowage::CONTRACT_VERSION)
            }
            None => println!("contract:      none (does not export stowage:store/conversation-store)"),
        }
        if description.contract_version == Some("0.1.0") {
            println!("integrity:     none: a 0.1.0 adapter cannot keep integrity tags or sealed records");
        }
        if description.exports.iter().any(|export| export == stowage::LOAD_PLAN_EXPORT) {
            println!(
                "load plan:     {} (on SQLite the host runs its loads' SELECTs itself)",
                stowage::LOAD_PLAN_EXPORT
            );
        }
        if description.exports.iter().any(|export| export == stowage::APPEND_PLAN_EXPORT) {
            println!(
                "append plan:   {} (on SQLite the host runs its appends' INSERTs itself)",
                stowage::APPEND_PLAN_EXPORT
            );
        }
        let capabilities =
            if description.capabilities.is_empty() { "none".to_owned() } else { description.capabilities.join(", ") };
        println!("capabilities:  {capabilities}");
        if network {
            println!("network:       imports wasi:sockets (always denied at run time)");
        }
        println!("imports:");
        for import in &description.imports {
            println!("  {import}");
        }
        match &checks {
            Ok(_) => println!("loader checks: passed (with the capabilities above granted)"),
            Err(e) => println!("loader checks: FAILED: {e}"),
        }
    }
    match checks {
        Ok(_) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            eprintln!("error: {adapter} fails the loader's checks: {e}");
            Ok(ExitCode::from(4))
        }
    }
}
