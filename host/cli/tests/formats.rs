//! `stowage import` / `export` in every transcript format, on corpus files
//! (`tests/corpus/`): what is imported comes back (keep mode), `--pure` gives
//! what the provider accepts and reports what it left out, and malformed files
//! are refused with line and field, storing nothing.

use std::path::{Path, PathBuf};
use std::process::Output;

use anyhow::{Context, ensure};
use assert_cmd::Command;
use stowage::interchange::{self, Format, Mode, Transcript};

struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> anyhow::Result<Self> {
        Ok(Self { dir: tempfile::tempdir()? })
    }

    fn write(&self, name: &str, contents: &str) -> anyhow::Result<String> {
        let path = self.dir.path().join(name);
        std::fs::write(&path, contents)?;
        Ok(path.to_str().context("path")?.to_owned())
    }

    fn run(&self, args: &[&str]) -> anyhow::Result<Output> {
        let mut command = Command::cargo_bin("stowage")?;
        command
            .current_dir(self.dir.path())
            .env("STOWAGE_CACHE_DIR", Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-component-cache"))
            .env_remove("STOWAGE_CONFIG")
            .env_remove("STOWAGE_STORE")
            .args(args);
        Ok(command.output()?)
    }

    /// Runs and expects `code`; returns (stdout, stderr).
    fn expect(&self, args: &[&str], code: i32) -> anyhow::Result<(String, String)> {
        let out = self.run(args)?;
        let (stdout, stderr) = (String::from_utf8(out.stdout)?, String::from_utf8_lossy(&out.stderr).into_owned());
        ensure!(
            out.status.code() == Some(code),
            "stowage {args:?}: exit {:?}, want {code}\n{stderr}",
            out.status.code()
        );
        Ok((stdout, stderr))
    }
}

fn corpus(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus").join(name)
}

fn corpus_lines(name: &str, numbers: &[usize]) -> anyhow::Result<Vec<String>> {
    let text = std::fs::read_to_string(corpus(name))?;
    let lines: Vec<&str> = text.lines().collect();
    numbers.iter().map(|n| lines.get(n - 1).map(|l| (*l).to_owned()).context("no such line")).collect()
}

/// The transcript of a line, without what an import adds (ids, timestamps,
/// a conversation id the line did not give).
fn content(format: Format, line: &str, like: &Transcript) -> anyhow::Result<String> {
    let (_, mut t) = interchange::parse_line(Some(format), 1, line)?;
    if like.conversation_id.is_none() {
        t.conversation_id = None;
    }
    ensure!(t.messages.len() == like.messages.len(), "message count changed: {line}");
    for (m, given) in t.messages.iter_mut().zip(&like.messages) {
        if given.id.is_none() {
            m.id = None;
        }
        if given.created_at.is_none() {
            m.created_at = None;
        }
    }
    t.display.clear();
    Ok(interchange::render_line(Format::Stowage, &t, Mode::Keep)?.text)
}

/// One corpus selection per format: file, lines, its pure expectation.
const SELECTION: [(&str, &str, &[usize], Option<&str>); 5] = [
    ("stowage", "stowage/transcripts.jsonl", &[1, 2, 3, 4], None),
    ("openai", "openai/response-dumps.jsonl", &[1, 2, 3], Some("openai/response-dumps.pure.jsonl")),
    ("anthropic", "anthropic/basic.jsonl", &[1, 2, 3, 4], Some("anthropic/basic.pure.jsonl")),
    // Lines that name their conversation natively (`session_id`, `id`), so the
    // pure export — which uses those slots — reproduces them.
    ("openai-responses", "openai-responses/agents-session.jsonl", &[1], None),
    ("ai-sdk-ui", "ai-sdk-ui/chats.jsonl", &[1, 2], None),
];

#[test]
fn every_format_imports_and_exports_back_in_keep_and_pure_mode() -> anyhow::Result<()> {
    let s = Sandbox::new()?;
    for (name, file, numbers, pure_file) in SELECTION {
        let format: Format = name.parse()?;
        let lines = corpus_lines(file, numbers)?;
        let path = s.write(&format!("{name}.jsonl"), &(lines.join("\n") + "\n"))?;
        let tenant = format!("t-{name}");
        let (out, _) = s.expect(&["--tenant", &tenant, "import", "--format", name, &path], 0)?;
        ensure!(out.matches("imported").count() == lines.len(), "{name}: {out}");
        let (again, _) = s.expect(&["--tenant", &tenant, "import", &path], 0)?;
        ensure!(again.matches(", 0 new)").count() == lines.len(), "{name}: a second import stored again: {again}");

        // Keep: every line comes back with what the import added (ids, timestamps).
        let (exported, _) = s.expect(&["--tenant", &tenant, "export", "--format", name], 0)?;
        for line in &lines {
            let (_, source) = interchange::parse_line(Some(format), 1, line)?;
            let want = content(format, line, &source)?;
            let found = exported
                .lines()
                .any(|e| content(format, e, &source).is_ok_and(|c| interchange::json_equivalent(&c, &want)));
            ensure!(found, "{name}: no exported line holds {line}\nexported:\n{exported}");
        }
        if name == "stowage" {
            s.expect(&["--tenant", &tenant, "export", "--format", name, "--pure"], 2)?;
            continue;
        }

        // Pure: exactly the provider's request shape.
        let pure_out = s.dir.path().join(format!("{name}.pure.jsonl"));
        let pure_path = pure_out.to_str().context("path")?;
        let (_, stderr) = s.expect(&["--tenant", &tenant, "export", "--format", name, "--pure", "-o", pure_path], 0)?;
        let exported = std::fs::read_to_string(&pure_out)?;
        ensure!(!exported.contains("x_stowage"), "{name}: {exported}");
        let expected = match pure_file {
            Some(pure) => corpus_lines(pure, numbers)?,
            None => lines.clone(),
        };
        for want in &expected {
            ensure!(
                exported.lines().any(|e| interchange::json_equivalent(e, want)),
                "{name}: pure export lacks {want}\ngot:\n{exported}"
            );
        }
        if pure_file.is_some() {
            ensure!(stderr.contains("left out of"), "{name}: pure export reports nothing: {stderr}");
            let (summary, _) =
                s.expect(&["--tenant", &tenant, "--json", "export", "--format", name, "--pure", "-o", pure_path], 0)?;
            let summary: serde_json::Value = serde_json::from_str(&summary)?;
            let dropped = summary["conversations"].as_array().context("conversations")?.iter();
            ensure!(
                dropped.flat_map(|c| c["dropped"].as_array().cloned().unwrap_or_default()).count() > 0,
                "{summary}"
            );
        }
    }
    Ok(())
}

#[test]
fn malformed_files_are_refused_with_line_and_field_and_store_nothing() -> anyhow::Result<()> {
    let s = Sandbox::new()?;
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(corpus("malformed/expected.json"))?)?;
    for case in expected["cases"].as_array().context("cases")? {
        let file = corpus(&format!("malformed/{}", case["file"].as_str().context("file")?));
        let file = file.to_str().context("path")?;
        let (line, field) = (case["line"].as_u64().context("line")?, case["field"].as_str().context("field")?);
        let mut args = vec!["import", file];
        if let Some(format) = case["format"].as_str() {
            args.extend(["--format", format]);
        }
        let (_, stderr) = s.expect(&args, 2)?;
        ensure!(stderr.contains(&format!("line {line}: {field}")), "{file}: {stderr}");
        let (listed, _) = s.expect(&["--json", "list"], 0)?;
        ensure!(listed.trim() == "[]", "{file}: something was stored: {listed}");
    }
    Ok(())
}
