//! The built `stowage` binary, over every command, including bad input.

use std::path::{Path, PathBuf};
use std::process::Output;

use anyhow::{Context, ensure};
use assert_cmd::Command;

/// A scratch working directory; the embedded default keeps its data there.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> anyhow::Result<Self> {
        Ok(Self { dir: tempfile::tempdir()? })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> anyhow::Result<PathBuf> {
        let path = self.path(name);
        std::fs::write(&path, contents)?;
        Ok(path)
    }

    fn run(&self, args: &[&str], stdin: Option<&str>) -> anyhow::Result<Output> {
        let mut command = Command::cargo_bin("stowage")?;
        command
            .current_dir(self.dir.path())
            .env("STOWAGE_CACHE_DIR", Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-component-cache"))
            .env_remove("STOWAGE_CONFIG")
            .env_remove("STOWAGE_STORE")
            .args(args);
        if let Some(input) = stdin {
            command.write_stdin(input.to_owned());
        }
        Ok(command.output()?)
    }

    /// Runs and expects `code`; returns stdout.
    fn expect(&self, args: &[&str], stdin: Option<&str>, code: i32) -> anyhow::Result<String> {
        let out = self.run(args, stdin)?;
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        ensure!(
            out.status.code() == Some(code),
            "stowage {args:?}: exit {:?}, want {code}\nstdout: {stdout}\nstderr: {stderr}",
            out.status.code()
        );
        if code != 0 {
            ensure!(stderr.contains("error:"), "stowage {args:?}: errors go to stderr: {stderr}");
        }
        Ok(stdout.into_owned())
    }

    fn stderr(&self, args: &[&str]) -> anyhow::Result<String> {
        Ok(String::from_utf8_lossy(&self.run(args, None)?.stderr).into_owned())
    }
}

fn guest(name: &str) -> String {
    format!("{}/stowage_adapter_{name}.wasm", stowage::GUEST_ARTIFACT_DIR)
}

const MESSAGES: &str = concat!(
    r#"{"id":"u1","role":"user","parts":[{"type":"text","text":"What's the weather in Oslo?"}]}"#,
    "\n",
    r#"{"id":"a1","role":"assistant","parts":[{"type":"thinking","text":"use the tool","signature":"sig"},{"type":"tool_call","id":"c1","name":"weather","arguments":"{\"city\":\"Oslo\"}"}],"usage":{"input_tokens":10,"output_tokens":3},"stop_reason":"tool_use"}"#,
    "\n",
    r#"{"id":"t1","role":"tool","parts":[{"type":"tool_result","call_id":"c1","content":"-2 C","is_error":false}]}"#,
    "\n",
    r#"{"id":"a2","role":"assistant","parts":[{"type":"text","text":"It is -2 °C."}],"stop_reason":"end_turn","metadata":{"model": "m",  "n": 1.50}}"#,
    "\n"
);

#[test]
fn data_commands_append_load_list_truncate_delete() -> anyhow::Result<()> {
    let s = Sandbox::new()?;
    let out = s.expect(&["append", "oslo", "-"], Some(MESSAGES), 0)?;
    ensure!(out.contains("4 new"), "{out}");
    let again = s.expect(&["append", "oslo", "-"], Some(MESSAGES), 0)?;
    ensure!(again.contains("0 new"), "re-running an append stores nothing: {again}");
    let transcript = s.expect(&["load", "oslo"], None, 0)?;
    ensure!(transcript.contains("weather") && transcript.contains("It is -2 °C."), "{transcript}");
    let json: serde_json::Value =
        serde_json::from_str(&s.expect(&["--json", "load", "oslo", "--after", "1", "--limit", "2"], None, 0)?)?;
    ensure!(json["messages"].as_array().map(Vec::len) == Some(2) && json["next_cursor"].is_string(), "{json}");
    let listed = s.expect(&["--json", "list"], None, 0)?;
    ensure!(listed.contains("\"oslo\""), "{listed}");
    ensure!(s.expect(&["--tenant", "other", "--json", "list"], None, 0)?.trim() == "[]", "scopes leak");
    let err = String::from_utf8_lossy(&s.run(&["truncate", "oslo", "--after", "2"], None)?.stderr).into_owned();
    ensure!(err.contains("would separate tool call"), "a cut between a call and its result is refused: {err}");
    s.expect(&["truncate", "oslo", "--after", "2"], None, 2)?;
    ensure!(s.expect(&["truncate", "oslo", "--after", "3"], None, 0)?.contains("removed 1"));
    ensure!(s.expect(&["delete", "oslo"], None, 0)?.contains("deleted oslo"));
    ensure!(s.expect(&["delete", "oslo"], None, 0)?.contains("nothing deleted"), "delete is idempotent");
    s.expect(&["load", "oslo"], None, 3)?;
    Ok(())
}

#[test]
fn bad_input_gets_a_clear_error_and_exit_code_2() -> anyhow::Result<()> {
    let s = Sandbox::new()?;
    let err = s.stderr(&["append", "c", "-"])?;
    ensure!(err.contains("no messages"), "{err}");
    s.expect(&["append", "c", "-"], Some("{\"role\": \"user\", \"parts\": [\n"), 2)?;
    let err =
        String::from_utf8_lossy(&s.run(&["append", "c", "-"], Some("{\"role\":\"robot\",\"parts\":[]}\n"))?.stderr)
            .into_owned();
    ensure!(err.contains("line 1") && err.contains("role"), "names line and field: {err}");
    s.expect(&["append", "c", "missing.jsonl"], None, 2)?;
    s.expect(&["import", "missing.jsonl"], None, 2)?;
    let bad_json = s.write("bad.jsonl", "{\"messages\": [}\n")?;
    s.expect(&["import", bad_json.to_str().context("path")?], None, 2)?;
    s.expect(&["export", "--format", "yaml"], None, 2)?;
    s.expect(&["append", "bad\u{1}id", "-"], Some(MESSAGES), 2)?;
    let config = s.write("stowage.toml", "[stores.main]\nadapter = \"sqlite\"\ndata_dir = \"d\"\nretention = 3\n")?;
    let err = s.stderr(&["list"])?;
    ensure!(err.contains("retention"), "unknown config key named: {err}");
    s.expect(&["list"], None, 2)?;
    std::fs::remove_file(config)?;
    s.expect(&["--config", "nope.toml", "list"], None, 2)?;
    s.expect(&["--store", "nope", "list"], None, 2)?;
    Ok(())
}

#[test]
fn import_export_round_trips_in_every_format() -> anyhow::Result<()> {
    let s = Sandbox::new()?;
    s.expect(&["append", "oslo", "-"], Some(MESSAGES), 0)?;
    let original = s.expect(&["export", "--format", "stowage"], None, 0)?;
    for format in ["stowage", "openai", "anthropic"] {
        let file = format!("{format}.jsonl");
        s.expect(&["export", "--format", format, "--output", &file], None, 0)?;
        let tenant = format!("t-{format}");
        // Auto-detected on import.
        let out = s.expect(&["--tenant", &tenant, "import", &file], None, 0)?;
        ensure!(out.contains("4 new"), "{format}: {out}");
        let again = s.expect(&["--tenant", &tenant, "import", &file], None, 0)?;
        ensure!(again.contains("0 new"), "{format}: re-import must be idempotent: {again}");
        let back = s.expect(&["--tenant", &tenant, "export", "--format", "stowage"], None, 0)?;
        if format == "stowage" {
            ensure!(back == original, "{format} round trip differs:\n{back}\nvs\n{original}");
            ensure!(back.contains(r#"{"model": "m",  "n": 1.50}"#), "metadata text not byte-identical: {back}");
        } else {
            // Through a provider format a JSON value comes back as the same value;
            // its whitespace may be normalised (docs/formats.md).
            let values = |text: &str| -> anyhow::Result<Vec<serde_json::Value>> {
                text.lines().map(|l| Ok(serde_json::from_str(l)?)).collect()
            };
            ensure!(values(&back)? == values(&original)?, "{format} round trip differs:\n{back}\nvs\n{original}");
            ensure!(back.contains("1.50"), "number spelling kept: {back}");
        }
    }
    // A provider's own data imports too.
    let openai = r#"{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}"#;
    let file = s.write("plain.jsonl", format!("{openai}\n"))?;
    let out =
        s.expect(&["--tenant", "plain", "import", "--format", "openai", file.to_str().context("path")?], None, 0)?;
    ensure!(out.contains("2 new"), "{out}");
    Ok(())
}

#[test]
fn a_file_with_one_bad_line_imports_nothing() -> anyhow::Result<()> {
    let s = Sandbox::new()?;
    let good = r#"{"conversation_id":"good","messages":[{"role":"user","parts":[{"type":"text","text":"x"}]}]}"#;
    let bad = r#"{"conversation_id":"bad","messages":[{"role":"user","parts":[{"type":"video"}]}]}"#;
    let file = s.write("mixed.jsonl", format!("{good}\n{bad}\n"))?;
    let err = s.stderr(&["import", file.to_str().context("path")?])?;
    ensure!(err.contains("line 2") && err.contains("messages[0].parts[0]"), "{err}");
    s.expect(&["import", file.to_str().context("path")?], None, 2)?;
    ensure!(s.expect(&["--json", "list"], None, 0)?.trim() == "[]", "a bad file was half-written");
    Ok(())
}

#[test]
fn inspect_and_check_certify_adapters() -> anyhow::Result<()> {
    let s = Sandbox::new()?;
    let out = s.expect(&["inspect", &guest("sqlite")], None, 0)?;
    ensure!(
        out.contains("stowage:store@0.2.0")
            && out.contains("capabilities:  sql")
            && out.contains("load plan:     stowage:reads/load-plan@0.1.0")
            && out.contains("append plan:   stowage:writes/append-plan@0.1.0")
            && out.contains("passed"),
        "{out}"
    );
    let json: serde_json::Value = serde_json::from_str(&s.expect(&["--json", "inspect", "filesystem"], None, 0)?)?;
    ensure!(json["capabilities"] == serde_json::json!(["filesystem"]) && json["loader_checks"] == "passed", "{json}");
    let report = s.expect(&["check", &guest("filesystem")], None, 0)?;
    ensure!(report.contains("0 failed") && report.contains("n/a"), "{report}");
    let failing = s.expect(&["check", &guest("hostile")], None, 6)?;
    ensure!(failing.contains("FAIL"), "{failing}");
    s.expect(&["check", "nope.wasm"], None, 2)?;
    s.expect(&["inspect", "nope.wasm"], None, 2)?;
    let core = s.write("core.wasm", b"\0asm\x01\0\0\0")?;
    let err = s.stderr(&["check", core.to_str().context("path")?])?;
    ensure!(err.contains("core WebAssembly module"), "{err}");
    s.expect(&["check", core.to_str().context("path")?], None, 4)?;
    Ok(())
}

#[test]
fn migration_copies_verifies_and_is_safe_to_run_again() -> anyhow::Result<()> {
    let s = Sandbox::new()?;
    s.write("stowage.toml", "default = \"main\"\n[stores.main]\nadapter = \"sqlite\"\ndata_dir = \"d/sqlite\"\n[stores.fs]\nadapter = \"filesystem\"\ndata_dir = \"d/fs\"\n")?;
    for i in 0..4 {
        s.expect(&["append", &format!("conv-{i}"), "-"], Some(MESSAGES), 0)?;
    }
    let json: serde_json::Value =
        serde_json::from_str(&s.expect(&["--json", "migrate", "--from", "main", "--to", "fs"], None, 0)?)?;
    ensure!(json["verified"] == true && json["new_messages"] == 16 && json["messages"] == 16, "{json}");
    let again: serde_json::Value =
        serde_json::from_str(&s.expect(&["--json", "migrate", "--from", "main", "--to", "fs"], None, 0)?)?;
    ensure!(again["new_messages"] == 0 && again["verified"] == true, "{again}");
    s.expect(&["migrate", "--from", "main", "--to", "main"], None, 2)?;
    Ok(())
}

#[test]
fn a_failed_import_removes_only_what_it_created() -> anyhow::Result<()> {
    let s = Sandbox::new()?;
    s.write(
        "stowage.toml",
        "[stores.main]\nadapter = \"sqlite\"\ndata_dir = \"d\"\n[stores.main.limits]\nmax_message_bytes = 4096\n",
    )?;
    s.expect(&["append", "existed", "-"], Some(MESSAGES), 0)?;
    let small = |id: &str, text: &str| {
        format!(
            r#"{{"conversation_id":"{id}","messages":[{{"id":"{id}-1","role":"user","parts":[{{"type":"text","text":"{text}"}}]}}]}}"#
        )
    };
    let big = "x".repeat(8000);
    let lines = [small("new-a", "hello"), small("existed", "one more"), small("new-b", &big)].join("\n");
    let file = s.write("mixed.jsonl", format!("{lines}\n"))?;
    let err = s.stderr(&["import", file.to_str().context("path")?])?;
    ensure!(err.contains("line 3"), "names the failing line: {err}");
    ensure!(err.contains("removed the 2 conversation(s) this import created: new-a, new-b"), "{err}");
    ensure!(!err.contains("could NOT remove"), "{err}");
    let listed: serde_json::Value = serde_json::from_str(&s.expect(&["--json", "list"], None, 0)?)?;
    let ids: Vec<&str> = listed.as_array().into_iter().flatten().filter_map(|c| c["id"].as_str()).collect();
    ensure!(ids == ["existed"], "only the conversation that existed before stays: {ids:?}");
    let kept = s.expect(&["--json", "load", "existed"], None, 0)?;
    ensure!(kept.contains("existed-1"), "what was appended to an existing conversation stays: {kept}");
    Ok(())
}

#[test]
fn demo_runs_the_main_job() -> anyhow::Result<()> {
    let s = Sandbox::new()?;
    let out = s.expect(&["demo"], None, 0)?;
    for expected in
        ["A fresh host reloads it", "[thinking, signed]", "call_booking [failed]", "identical to the sqlite store: yes"]
    {
        ensure!(out.contains(expected), "demo output lacks {expected:?}:\n{out}");
    }
    // Running it again starts over and prints the same story.
    ensure!(s.expect(&["demo"], None, 0)?.contains("11 messages"));
    Ok(())
}

#[test]
fn rekey_adds_a_current_key_and_everything_tagged_before_still_verifies() -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let s = Sandbox::new()?;
    s.expect(&["append", "oslo", "-"], Some(MESSAGES), 0)?;
    let rotated: serde_json::Value = serde_json::from_str(&s.expect(&["--json", "rekey"], None, 0)?)?;
    ensure!(rotated["current"] == 2 && rotated["ids"] == serde_json::json!([1, 2]), "{rotated}");
    let keys = s.path("stowage-data/sqlite/host/store.keys");
    ensure!(std::fs::metadata(&keys)?.permissions().mode() & 0o077 == 0, "the key file stays owner-only");
    let key_lines = std::fs::read_to_string(&keys)?.lines().filter(|l| !l.starts_with('#')).count();
    ensure!(key_lines == 2, "the old key is kept: {key_lines} key lines");
    let more = r#"{"id":"u2","role":"user","parts":[{"type":"text","text":"And Bergen?"}]}"#;
    s.expect(&["append", "oslo", "-"], Some(more), 0)?;
    let page: serde_json::Value = serde_json::from_str(&s.expect(&["--json", "load", "oslo"], None, 0)?)?;
    ensure!(page["messages"].as_array().map(Vec::len) == Some(5), "old and new records load: {page}");
    ensure!(page["unverified"].as_array().is_none_or(Vec::is_empty), "every record verified: {page}");

    s.write(
        "env.toml",
        "[stores.a]\nadapter = \"sqlite\"\ndata_dir = \"env-data\"\nkey_env = \"STOWAGE_TEST_KEYRING\"\n",
    )?;
    let err = s.stderr(&["--config", "env.toml", "rekey"])?;
    ensure!(err.contains("STOWAGE_TEST_KEYRING") && err.contains("append a new"), "{err}");
    s.expect(&["--config", "env.toml", "rekey"], None, 2)?;
    Ok(())
}
