//! Transcripts without loss (issue 11): every corpus file (`tests/corpus/`)
//! imported through the library, stored by every shipped adapter, loaded and
//! exported back in its own format equals the source as JSON (key order and
//! number spelling may differ, content may not); each `X.pure.jsonl` is what
//! the pure export gives; malformed files are refused with the expected line
//! and field and store nothing. `transcripts/props.rs` adds a property test.

#[path = "transcripts/props.rs"]
mod props;

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail, ensure};
use stowage::interchange::{self, Format, Mode, Transcript};
use stowage::{Builtin, Display, DisplayOptions, DisplayRecord, Scope, Store, StoreConfig};
use stowage_tests::shared_runtime;

const ADAPTERS: [Builtin; 2] = [Builtin::Sqlite, Builtin::Filesystem];

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// `(format, file)` for every corpus file but the pure expectations.
fn corpus_files() -> anyhow::Result<Vec<(Format, PathBuf)>> {
    let mut files = Vec::new();
    for format in Format::ALL {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(corpus().join(format.name()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl") && !p.to_string_lossy().ends_with(".pure.jsonl"))
            .collect();
        paths.sort();
        files.extend(paths.into_iter().map(|p| (format, p)));
    }
    ensure!(files.len() >= 17, "the corpus has only {} files", files.len());
    Ok(files)
}

/// The non-blank lines of a file, by 1-based number.
fn lines(path: &Path) -> anyhow::Result<Vec<(usize, String)>> {
    Ok(std::fs::read_to_string(path)?
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i + 1, l.to_owned()))
        .collect())
}

/// Transcripts compared as JSON: their Stowage renderings (which embed every
/// JSON-valued field verbatim) must hold the same values.
fn check_same(got: &Transcript, want: &Transcript, context: &str) -> anyhow::Result<()> {
    let (a, b) = (stowage_json(got)?, stowage_json(want)?);
    ensure!(interchange::json_equivalent(&a, &b), "{context}: transcripts differ\n got:  {a}\n want: {b}");
    Ok(())
}

fn stowage_json(t: &Transcript) -> anyhow::Result<String> {
    Ok(interchange::render_line(Format::Stowage, t, Mode::Keep)?.text)
}

fn check_json(got: &str, want: &str, context: &str) -> anyhow::Result<()> {
    ensure!(interchange::json_equivalent(got, want), "{context}: not the same JSON\n got:  {got}\n want: {want}");
    Ok(())
}

async fn display_records(display: &Display, scope: &Scope, id: &str) -> anyhow::Result<Vec<DisplayRecord>> {
    Ok(display.list(scope, id, 0, 1000).await?.records)
}

/// Stores one imported line and loads it back as a transcript.
async fn store_and_load(store: &Store, scope: &Scope, parsed: &interchange::ParsedLine) -> anyhow::Result<Transcript> {
    let (id, transcript) = (&parsed.conversation_id, &parsed.transcript);
    store.open(scope, id, transcript.meta.clone()).await?;
    if !transcript.messages.is_empty() {
        store.append(scope, id, transcript.messages.clone(), None).await?;
    }
    let display = Display::persistent(store.clone(), DisplayOptions::default());
    if !transcript.display.is_empty() {
        display.restore(scope, id, transcript.display.clone()).await?;
    }
    let info = store.info(scope, id).await?;
    let messages = store.load_all(scope, id).await?;
    Ok(Transcript::from_stored(id, info.meta, messages, display_records(&display, scope, id).await?))
}

/// `loaded` with what the importer and the store added (ids the line did not
/// give, timestamps, the display records' scope) set back to the line's.
fn as_in_line(mut loaded: Transcript, line: &Transcript) -> anyhow::Result<Transcript> {
    ensure!(loaded.messages.len() == line.messages.len(), "message count changed");
    if line.conversation_id.is_none() {
        loaded.conversation_id = None;
    }
    for (stored, given) in loaded.messages.iter_mut().zip(&line.messages) {
        if given.id.is_none() {
            stored.id = None;
        }
        if given.created_at.is_none() {
            stored.created_at = None;
        }
    }
    ensure!(loaded.display.len() == line.display.len(), "display record count changed");
    for (stored, given) in loaded.display.iter_mut().zip(&line.display) {
        stored.scope = given.scope.clone();
    }
    Ok(loaded)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_corpus_file_round_trips_through_every_adapter() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let files = corpus_files()?;
    for builtin in ADAPTERS {
        let store =
            shared_runtime()?.open_store(StoreConfig::builtin(builtin, dir.path().join(builtin.name()))).await?;
        let mut lines_checked = 0;
        for (index, (format, file)) in files.iter().enumerate() {
            let scope = Scope::new("corpus", format!("file-{index}"));
            let name = file.strip_prefix(corpus())?.display().to_string();
            let text = std::fs::read_to_string(file)?;
            let parsed = interchange::parse_file(Some(*format), &text).with_context(|| name.clone())?;
            let source = lines(file)?;
            let pure_file = file.with_extension("").with_extension("pure.jsonl");
            let pure = if pure_file.exists() { lines(&pure_file)? } else { source.clone() };
            ensure!(parsed.len() == source.len() && pure.len() == source.len(), "{name}: line counts differ");
            for ((p, (n, line)), (_, pure_line)) in parsed.iter().zip(&source).zip(&pure) {
                let context = format!("{builtin:?} {name}:{n}");
                let (_, as_parsed) = interchange::parse_line(Some(*format), *n, line)?;
                let loaded = store_and_load(&store, &scope, p).await.with_context(|| context.clone())?;
                // What came back is what was stored (plus the store's timestamps).
                let stored = as_in_line(loaded.clone(), &p.transcript).with_context(|| context.clone())?;
                check_same(&stored, &p.transcript, &format!("{context} stored"))?;
                // Exported back it is the source line (and the pure expectation).
                let back = as_in_line(loaded.clone(), &as_parsed).with_context(|| context.clone())?;
                let keep = interchange::render_line(*format, &back, Mode::Keep)?.text;
                if *format == Format::Stowage {
                    check_same(&interchange::parse_line(Some(*format), 1, &keep)?.1, &as_parsed, &context)?;
                } else {
                    check_json(&keep, line, &format!("{context} export"))?;
                    let exported = interchange::render_line(*format, &back, Mode::Pure)?.text;
                    check_json(&exported, pure_line, &format!("{context} pure export"))?;
                }
                // The keep export of the stored conversation, with its ids and
                // timestamps, imports again as exactly what is stored.
                let full = interchange::render_line(*format, &loaded, Mode::Keep)?.text;
                let (_, again) = interchange::parse_line(Some(*format), 1, &full)?;
                let mut expected = loaded.clone();
                if *format != Format::Stowage {
                    expected.display.clear();
                }
                check_same(&again, &expected, &format!("{context} re-import"))?;
                lines_checked += 1;
            }
        }
        ensure!(lines_checked >= 40, "{builtin:?}: only {lines_checked} lines checked");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_files_are_refused_with_line_and_field_and_store_nothing() -> anyhow::Result<()> {
    let dir = corpus().join("malformed");
    let expected: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json"))?)?;
    let cases = expected["cases"].as_array().context("cases")?;
    ensure!(cases.len() >= 30, "only {} malformed cases", cases.len());
    let data = tempfile::tempdir()?;
    for builtin in ADAPTERS {
        let store =
            shared_runtime()?.open_store(StoreConfig::builtin(builtin, data.path().join(builtin.name()))).await?;
        for (index, case) in cases.iter().enumerate() {
            let file = case["file"].as_str().context("file")?;
            let format = case["format"].as_str().map(str::parse::<Format>).transpose()?;
            let (line, field) =
                (case["line"].as_u64().context("line")? as usize, case["field"].as_str().context("field")?);
            let scope = Scope::new("malformed", format!("case-{index}"));
            // The importer's rule: the whole file is checked before anything is stored.
            match interchange::parse_file(format, &std::fs::read_to_string(dir.join(file))?) {
                Ok(parsed) => {
                    for p in &parsed {
                        store_and_load(&store, &scope, p).await?;
                    }
                    bail!("{file} was accepted");
                }
                Err(e) => ensure!(
                    e.line == line && e.field.starts_with(field),
                    "{file}: refused at line {} field {:?} ({}), want line {line} field {field}",
                    e.line,
                    e.field,
                    e.reason
                ),
            }
            let listed = store.list(&scope, None, 10).await?;
            ensure!(listed.conversations.is_empty(), "{builtin:?} {file}: something was stored");
        }
    }
    Ok(())
}
