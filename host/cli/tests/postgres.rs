//! `stowage migrate` from a SQLite store to a store on a PostgreSQL server, with
//! verification; the server store then answers exactly as the SQLite one did.
//!
//! Needs a server: `STOWAGE_TEST_POSTGRES_URL`, by default the local one. Without
//! one the test says it was skipped, unless `STOWAGE_REQUIRE_POSTGRES=1`.

use std::path::Path;
use std::process::Output;

use anyhow::{Context, bail, ensure};
use assert_cmd::Command;

const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

const MESSAGES: &str = concat!(
    r#"{"id":"u1","role":"user","parts":[{"type":"text","text":"What's the weather in Oslo?"}]}"#,
    "\n",
    r#"{"id":"a1","role":"assistant","parts":[{"type":"tool_call","id":"c1","name":"weather","arguments":"{\"city\":\"Oslo\"}"}],"stop_reason":"tool_use"}"#,
    "\n",
    r#"{"id":"t1","role":"tool","parts":[{"type":"tool_result","call_id":"c1","content":"-2 C","is_error":false}]}"#,
    "\n",
    r#"{"id":"a2","role":"assistant","parts":[{"type":"text","text":"It is -2 °C. ✓"}],"stop_reason":"end_turn"}"#,
    "\n"
);

/// Runs statements on the test server from a thread and runtime of their own.
fn admin(url: &str, sql: &str) -> anyhow::Result<()> {
    let (url, sql) = (url.to_owned(), sql.to_owned());
    std::thread::spawn(move || -> anyhow::Result<()> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        runtime.block_on(async move {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
            let driver = tokio::spawn(connection);
            let result = client.batch_execute(&sql).await;
            drop(client);
            let _ = driver.await;
            Ok(result?)
        })
    })
    .join()
    .map_err(|_| anyhow::anyhow!("admin thread panicked"))?
}

/// A schema of its own, dropped afterwards.
struct Schema {
    base: String,
    name: String,
}

impl Drop for Schema {
    fn drop(&mut self) {
        if let Err(e) = admin(&self.base, &format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name)) {
            eprintln!("could not drop test schema {}: {e:#}", self.name);
        }
    }
}

fn command(dir: &Path, args: &[&str]) -> anyhow::Result<Command> {
    let mut command = Command::cargo_bin("stowage")?;
    command
        .current_dir(dir)
        .env("STOWAGE_CACHE_DIR", Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-component-cache"))
        .env_remove("STOWAGE_CONFIG")
        .env_remove("STOWAGE_STORE")
        .args(args);
    Ok(command)
}

fn expect_ok(dir: &Path, args: &[&str], stdin: Option<&str>) -> anyhow::Result<String> {
    let mut command = command(dir, args)?;
    if let Some(input) = stdin {
        command.write_stdin(input.to_owned());
    }
    let out: Output = command.output()?;
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    ensure!(out.status.success(), "stowage {args:?}: exit {:?}\nstdout: {stdout}\nstderr: {stderr}", out.status.code());
    Ok(stdout.into_owned())
}

#[test]
fn migrate_from_sqlite_to_postgres_verifies_and_is_safe_to_run_again() -> anyhow::Result<()> {
    let base = std::env::var("STOWAGE_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned());
    let name = format!("stowage_cli_{}", std::process::id());
    if let Err(e) = admin(&base, &format!("DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}")) {
        if std::env::var("STOWAGE_REQUIRE_POSTGRES").as_deref() == Ok("1") {
            bail!("STOWAGE_REQUIRE_POSTGRES=1 but no PostgreSQL server answers at {base}: {e:#}");
        }
        eprintln!("SKIPPED migrate_from_sqlite_to_postgres…: no PostgreSQL server at {base} ({e:#})");
        return Ok(());
    }
    let _schema = Schema { base: base.clone(), name: name.clone() };
    ensure!(base.starts_with("postgres://") || base.starts_with("postgresql://"), "a URL-form test URL");
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}options=-c%20search_path%3D{name}");
    let dir = tempfile::tempdir()?;
    let config = format!(
        "default = \"main\"\n\
         [stores.main]\nadapter = \"sqlite\"\ndata_dir = \"d/sqlite\"\nkey_file = \"keys\"\n\
         [stores.pg]\nadapter = \"sqlite\"\ndata_dir = \"d/pg\"\nkey_file = \"keys\"\nsql = {{ url = \"{url}\" }}\n"
    );
    std::fs::write(dir.path().join("stowage.toml"), config)?;
    std::fs::write(dir.path().join("keys"), "1:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n")?;
    {
        use std::os::unix::fs::PermissionsExt;
        // A key file must be owner-only; the host refuses one others can read.
        std::fs::set_permissions(dir.path().join("keys"), std::fs::Permissions::from_mode(0o600))?;
    }
    for i in 0..4 {
        expect_ok(dir.path(), &["append", &format!("conv-{i}"), "-"], Some(MESSAGES))?;
    }
    let migrated: serde_json::Value =
        serde_json::from_str(&expect_ok(dir.path(), &["--json", "migrate", "--from", "main", "--to", "pg"], None)?)?;
    ensure!(migrated["verified"] == true && migrated["messages"] == 16 && migrated["new_messages"] == 16, "{migrated}");
    let again: serde_json::Value =
        serde_json::from_str(&expect_ok(dir.path(), &["--json", "migrate", "--from", "main", "--to", "pg"], None)?)?;
    ensure!(again["verified"] == true && again["new_messages"] == 0, "{again}");
    // The server store reads back what the SQLite store holds.
    let from_sqlite = expect_ok(dir.path(), &["export"], None)?;
    let from_server = expect_ok(dir.path(), &["--store", "pg", "export"], None)?;
    ensure!(
        from_sqlite == from_server && from_server.contains("It is -2 °C. ✓"),
        "exports differ:\n{from_sqlite}\n{from_server}"
    );
    let text = expect_ok(dir.path(), &["migrate", "--from", "main", "--to", "pg"], None)?;
    ensure!(text.contains("verified: counts and contents match"), "{text}");
    let tables = format!("{name}.stowage_messages");
    admin(&base, &format!("SELECT 1 FROM {tables} LIMIT 1")).context("the messages live on the server")?;
    Ok(())
}
