//! The `stowage` binary's documented exit codes and repair output that no other
//! test reaches: 5 (version conflict), 7 (migrate found a difference), a refused
//! cut naming the seqs to cut at instead, `load --orphans strip|synthesize`, and
//! a migration killed with SIGKILL mid-write and run again.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use serde_json::Value;

/// A scratch working directory with a configuration of two stores: `main`
/// (SQLite, the default) and `fs` (filesystem).
struct Sandbox {
    dir: tempfile::TempDir,
}

const CONFIG: &str = "default = \"main\"\n\
                      [stores.main]\nadapter = \"sqlite\"\ndata_dir = \"d/sqlite\"\n\
                      [stores.fs]\nadapter = \"filesystem\"\ndata_dir = \"d/fs\"\n";

impl Sandbox {
    fn new() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join("stowage.toml"), CONFIG)?;
        Ok(Self { dir })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_stowage"));
        command
            .current_dir(self.dir.path())
            .env("STOWAGE_CACHE_DIR", Path::new(env!("CARGO_TARGET_TMPDIR")).join("exit-codes-component-cache"))
            .env_remove("STOWAGE_CONFIG")
            .env_remove("STOWAGE_STORE")
            .args(args);
        command
    }

    fn run(&self, args: &[&str], stdin: Option<&str>) -> anyhow::Result<Output> {
        let mut child =
            self.command(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
        let mut input = child.stdin.take().context("stdin")?;
        input.write_all(stdin.unwrap_or_default().as_bytes())?;
        drop(input);
        Ok(child.wait_with_output()?)
    }

    /// Runs and expects exit `code`; returns (stdout, stderr).
    fn expect(&self, args: &[&str], stdin: Option<&str>, code: i32) -> anyhow::Result<(String, String)> {
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
        Ok((stdout.into_owned(), stderr.into_owned()))
    }

    fn json(&self, args: &[&str]) -> anyhow::Result<Value> {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let (stdout, _) = self.expect(&all, None, 0)?;
        serde_json::from_str(&stdout).with_context(|| format!("stowage {all:?} printed {stdout}"))
    }

    /// `(id, message_count)` of every conversation of `store`.
    fn counts(&self, store: &str) -> anyhow::Result<Vec<(String, u64)>> {
        let listed = self.json(&["--store", store, "list"])?;
        let all = listed.as_array().context("list prints an array")?;
        all.iter()
            .map(|c| Ok((c["id"].as_str().context("id")?.to_owned(), c["message_count"].as_u64().context("count")?)))
            .collect()
    }
}

const MESSAGES: &str = concat!(
    r#"{"id":"u1","role":"user","parts":[{"type":"text","text":"What's the weather in Oslo?"}]}"#,
    "\n",
    r#"{"id":"a1","role":"assistant","parts":[{"type":"text","text":"Let me look."},{"type":"tool_call","id":"c1","name":"weather","arguments":"{\"city\":\"Oslo\"}"}]}"#,
    "\n",
    r#"{"id":"t1","role":"tool","parts":[{"type":"tool_result","call_id":"c1","content":"-2 C","is_error":false}]}"#,
    "\n",
    r#"{"id":"a2","role":"assistant","parts":[{"type":"text","text":"It is -2 °C."}]}"#,
    "\n"
);

/// No command passes an expected version yet, so nothing reaches exit 5: this
/// test specifies `--expected-version` on `append` and `truncate` (the
/// `expected_version` of `Store::append` and `Store::truncate_after`).
#[test]
fn a_version_conflict_exits_5() -> anyhow::Result<()> {
    let s = Sandbox::new()?;
    let (out, _) = s.expect(&["append", "oslo", "-"], Some(MESSAGES), 0)?;
    ensure!(out.contains("version 1"), "{out}");
    let more = r#"{"id":"u2","role":"user","parts":[{"type":"text","text":"And tomorrow?"}]}"#;
    let (_, err) = s.expect(&["append", "oslo", "-", "--expected-version", "0"], Some(more), 5)?;
    ensure!(err.contains("version conflict") && err.contains("expected version 0"), "{err}");
    ensure!(s.counts("main")? == [("oslo".to_owned(), 4)], "a refused append stored nothing");
    s.expect(&["append", "oslo", "-", "--expected-version", "1"], Some(more), 0)?;
    let (_, err) = s.expect(&["truncate", "oslo", "--after", "4", "--expected-version", "1"], None, 5)?;
    ensure!(err.contains("version conflict"), "{err}");
    Ok(())
}

#[test]
fn a_migration_whose_verification_finds_a_difference_exits_7() -> anyhow::Result<()> {
    let s = Sandbox::new()?;
    s.expect(&["append", "oslo", "-"], Some(MESSAGES), 0)?;
    // The target already holds message `u1` of `oslo` with other content: the copy
    // keeps it (ids are idempotent), so the two stores differ at seq 1.
    let other = r#"{"id":"u1","role":"user","parts":[{"type":"text","text":"Something else entirely"}]}"#;
    s.expect(&["--store", "fs", "append", "oslo", "-"], Some(other), 0)?;
    let (out, err) = s.expect(&["migrate", "--from", "main", "--to", "fs"], None, 7)?;
    ensure!(out.contains("MISMATCH oslo: message seq 1 differs"), "{out}");
    ensure!(err.contains("verification found 1 difference(s) between `main` and `fs`"), "{err}");
    let json: Value =
        serde_json::from_str(&s.expect(&["--json", "migrate", "--from", "main", "--to", "fs"], None, 7)?.0)?;
    ensure!(json["verified"] == false && json["problems"].as_array().map(Vec::len) == Some(1), "{json}");
    Ok(())
}

#[test]
fn a_refused_cut_names_the_seqs_to_cut_at_instead() -> anyhow::Result<()> {
    let s = Sandbox::new()?;
    s.expect(&["append", "oslo", "-"], Some(MESSAGES), 0)?;
    // After seq 2 would keep the call (seq 2) and drop its result (seq 3).
    let (_, err) = s.expect(&["truncate", "oslo", "--after", "2"], None, 2)?;
    ensure!(err.contains("would separate tool call \"c1\" (seq 2) from its result (seq 3)"), "{err}");
    ensure!(err.contains("truncate after seq 1 or after seq 3"), "the refusal names where to cut instead: {err}");
    ensure!(s.counts("main")? == [("oslo".to_owned(), 4)], "a refused cut removed something");
    // Both suggestions are accepted.
    let (out, _) = s.expect(&["truncate", "oslo", "--after", "3"], None, 0)?;
    ensure!(out.contains("removed 1 message(s) after seq 3"), "{out}");
    let (out, _) = s.expect(&["truncate", "oslo", "--after", "1"], None, 0)?;
    ensure!(out.contains("removed 2 message(s) after seq 1"), "{out}");
    Ok(())
}

/// The parts of a loaded message, as `type:detail` strings.
fn parts(message: &Value) -> Vec<String> {
    let parts = message["parts"].as_array().cloned().unwrap_or_default();
    parts
        .iter()
        .map(|p| match p["type"].as_str() {
            Some("text") => format!("text:{}", p["text"].as_str().unwrap_or("?")),
            Some("tool_call") => format!("tool_call:{}", p["id"].as_str().unwrap_or("?")),
            Some("tool_result") => format!(
                "tool_result:{}:{}:{}",
                p["call_id"].as_str().unwrap_or("?"),
                p["is_error"],
                p["content"].as_str().unwrap_or("?")
            ),
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn load_orphans_strip_and_synthesize_repair_the_view_only() -> anyhow::Result<()> {
    let s = Sandbox::new()?;
    // The agent died after calling the tool: the call has no result.
    let crashed: String = MESSAGES.lines().take(2).map(|l| format!("{l}\n")).collect();
    s.expect(&["append", "crash", "-"], Some(&crashed), 0)?;
    let ids = |page: &Value| -> Vec<String> {
        page["messages"].as_array().into_iter().flatten().map(|m| m["id"].as_str().unwrap_or("?").to_owned()).collect()
    };
    let kept = s.json(&["load", "crash"])?;
    ensure!(ids(&kept) == ["u1", "a1"] && kept.get("repairs").is_none_or(Value::is_null), "{kept}");
    ensure!(parts(&kept["messages"][1]) == ["text:Let me look.", "tool_call:c1"], "{kept}");

    let stripped = s.json(&["load", "crash", "--orphans", "strip"])?;
    ensure!(ids(&stripped) == ["u1", "a1"], "{stripped}");
    ensure!(parts(&stripped["messages"][1]) == ["text:Let me look."], "the orphaned call is stripped: {stripped}");
    let orphan = serde_json::json!([{ "seq": 2, "call_id": "c1", "name": "weather" }]);
    ensure!(stripped["repairs"]["policy"] == "strip" && stripped["repairs"]["orphaned_calls"] == orphan, "{stripped}");

    let synthesized = s.json(&["load", "crash", "--orphans", "synthesize"])?;
    ensure!(ids(&synthesized) == ["u1", "a1", "a1~interrupted"], "{synthesized}");
    let result = &synthesized["messages"][2];
    ensure!(result["role"] == "tool" && result["seq"] == 2, "{result}");
    ensure!(parts(result) == [format!("tool_result:c1:true:{}", stowage::INTERRUPTED_RESULT)], "{result}");
    ensure!(synthesized["repairs"]["orphaned_calls"] == orphan, "{synthesized}");

    let (text, _) = s.expect(&["load", "crash", "--orphans", "synthesize"], None, 0)?;
    ensure!(text.contains("(repair: tool call c1 `weather` at seq 2 has no result)"), "{text}");
    // A view only: storage is unchanged.
    ensure!(s.json(&["load", "crash"])? == kept, "loading with a repair changed what is stored");
    Ok(())
}

/// Total size of the `messages.log` files under `dir` and how many there are.
fn logs(dir: &Path) -> (u64, usize) {
    let (mut bytes, mut count) = (0, 0);
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.file_name().is_some_and(|n| n == "messages.log") {
                bytes += entry.metadata().map_or(0, |m| m.len());
                count += 1;
            }
        }
    }
    (bytes, count)
}

#[test]
fn a_migration_killed_mid_write_completes_when_run_again() -> anyhow::Result<()> {
    const CONVERSATIONS: usize = 8;
    const PER_CONVERSATION: usize = 600;
    let s = Sandbox::new()?;
    let mut file = String::new();
    for c in 0..CONVERSATIONS {
        let messages: Vec<Value> = (0..PER_CONVERSATION)
            .map(|i| serde_json::json!({"id": format!("m{i}"), "role": "user", "parts": [{"type": "text", "text": format!("conversation {c}, message {i}")}]}))
            .collect();
        file.push_str(&serde_json::json!({ "conversation_id": format!("conv-{c}"), "messages": messages }).to_string());
        file.push('\n');
    }
    std::fs::write(s.path("big.jsonl"), file)?;
    s.expect(&["import", "big.jsonl"], None, 0)?;
    let total = (CONVERSATIONS * PER_CONVERSATION) as u64;
    let source = s.counts("main")?;
    ensure!(source.iter().map(|(_, n)| n).sum::<u64>() == total, "{source:?}");

    // Kill the migration once the target has some conversations' logs but not all.
    let target = s.path("d/fs");
    let mut child =
        s.command(&["migrate", "--from", "main", "--to", "fs"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn()?;
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            bail!("the migration finished ({status}) before it could be killed; make the store larger");
        }
        let (bytes, count) = logs(&target);
        if bytes > 0 && count >= CONVERSATIONS / 2 {
            break;
        }
        ensure!(started.elapsed() < Duration::from_secs(300), "the migration wrote nothing for 5 minutes");
        std::thread::sleep(Duration::from_millis(1));
    }
    child.kill()?; // SIGKILL, mid-write
    child.wait()?;
    let copied: u64 = s.counts("fs")?.iter().map(|(_, n)| n).sum();
    ensure!(copied > 0 && copied < total, "the kill must land mid-migration: {copied} of {total} copied");
    println!("killed after {:?} with {copied} of {total} messages copied", started.elapsed());

    let again = s.json(&["migrate", "--from", "main", "--to", "fs"])?;
    ensure!(again["verified"] == true && again["messages"] == total, "{again}");
    ensure!(
        again["new_messages"] == total - copied,
        "the re-run stores exactly what was missing ({copied} copied): {again}"
    );
    ensure!(s.counts("fs")? == source, "every conversation complete in the target, nothing twice");
    let (out, _) = s.expect(&["migrate", "--from", "main", "--to", "fs"], None, 0)?;
    ensure!(out.contains("(0 new)") && out.contains("verified: counts and contents match"), "{out}");
    Ok(())
}
