//! import and export, as JSON Lines in every transcript format (docs/formats.md).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use stowage::interchange::{self, Format, Mode, Transcript};
use stowage::{Display, DisplayOptions, DisplayRecord, Message, Scope, Store};

use crate::context::{Context, bad_input, print_json};

/// Messages per append call while importing or migrating (each call is atomic).
pub const BATCH: usize = 500;

/// The `--format` names.
pub const FORMATS: [&str; 5] = ["stowage", "openai", "anthropic", "openai-responses", "ai-sdk-ui"];

/// Appends `transcript` to `store` (creating the conversation), then its display
/// records if the conversation has none yet. Returns how many messages were new.
pub async fn write_transcript(
    store: &Store,
    display: &Display,
    scope: &Scope,
    id: &str,
    transcript: &Transcript,
) -> anyhow::Result<u64> {
    store.open(scope, id, transcript.meta.clone()).await?;
    let mut stored = 0u64;
    for batch in transcript.messages.chunks(BATCH) {
        stored += u64::from(store.append(scope, id, batch.to_vec(), None).await?.stored);
    }
    if !transcript.display.is_empty() {
        let existing = display.list(scope, id, 0, 1).await?;
        if existing.records.is_empty() {
            display.restore(scope, id, transcript.display.clone()).await?;
        }
    }
    Ok(stored)
}

pub async fn import(ctx: &Context, file: &Path, format: Option<&str>) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let format: Option<Format> = format.map(str::parse).transpose()?;
    // Check the whole file before writing anything (ids are given deterministically,
    // so importing the same file twice stores nothing twice).
    let transcripts: Vec<(usize, String, Transcript)> = interchange::parse_file(format, &text)
        .with_context(|| format!("{} cannot be imported", file.display()))?
        .into_iter()
        .map(|parsed| (parsed.line, parsed.conversation_id, parsed.transcript))
        .collect();
    if transcripts.is_empty() {
        return Err(bad_input(format!("{} holds no conversations", file.display())));
    }

    let store = ctx.open_store(None).await?;
    let display = Display::persistent(store.clone(), DisplayOptions::default());
    let scope = ctx.scope();
    let mut created = Vec::new();
    let mut summary = Vec::new();
    for (line, id, transcript) in &transcripts {
        let result = async {
            // Only a definite "not found" means this import creates the conversation;
            // any other failure stops the import before it writes anything here.
            match store.info(&scope, id).await {
                Ok(_) => {}
                Err(stowage::Error::NotFound) => created.push(id.clone()),
                Err(e) => return Err(anyhow::Error::new(e).context(format!("checking whether `{id}` exists"))),
            }
            write_transcript(&store, &display, &scope, id, transcript).await
        }
        .await;
        match result {
            Ok(stored) => summary.push(serde_json::json!({
                "conversation": id, "line": line, "messages": transcript.messages.len(), "new": stored,
            })),
            Err(err) => {
                let cleanup = remove_created(&store, &scope, &created).await;
                return Err(err.context(format!("importing line {line} of {} failed; {cleanup}", file.display())));
            }
        }
    }
    if ctx.global.json {
        print_json(&summary)?;
    } else {
        for entry in &summary {
            println!(
                "imported {} ({} messages, {} new)",
                entry["conversation"].as_str().unwrap_or(""),
                entry["messages"],
                entry["new"]
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Deletes what an import created; says exactly what was and was not removed.
async fn remove_created(store: &Store, scope: &Scope, created: &[String]) -> String {
    let (mut removed, mut failed) = (Vec::new(), Vec::new());
    for id in created {
        match store.delete(scope, id).await {
            Ok(true) => removed.push(id.as_str()),
            Ok(false) => {}
            Err(e) => failed.push(format!("`{id}` ({e})")),
        }
    }
    let mut said = if removed.is_empty() {
        "this import created no conversation that needed removing".to_owned()
    } else {
        format!("removed the {} conversation(s) this import created: {}", removed.len(), removed.join(", "))
    };
    if !failed.is_empty() {
        said.push_str(&format!("; could NOT remove {}", failed.join(", ")));
    }
    said.push_str("; conversations that existed before keep what was appended (re-running the import is safe)");
    said
}

/// Every message of a conversation, in order.
pub async fn all_messages(store: &Store, scope: &Scope, id: &str) -> anyhow::Result<Vec<Message>> {
    Ok(store.load_all(scope, id).await?)
}

/// Every display record of a conversation, in order.
pub async fn all_display(display: &Display, scope: &Scope, id: &str) -> anyhow::Result<Vec<DisplayRecord>> {
    let mut records = Vec::new();
    let mut after = 0;
    loop {
        let page = display.list(scope, id, after, 1000).await?;
        records.extend(page.records);
        match page.next_after {
            Some(next) => after = next,
            None => return Ok(records),
        }
    }
}

/// Every conversation id of the scope.
pub async fn all_conversations(store: &Store, scope: &Scope) -> anyhow::Result<Vec<String>> {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = store.list(scope, cursor.as_deref(), 1000).await?;
        ids.extend(page.conversations.into_iter().map(|c| c.id));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(ids),
        }
    }
}

pub async fn export(
    ctx: &Context,
    conversations: &[String],
    format: &str,
    pure: bool,
    output: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let format: Format = format.parse()?;
    if pure && format == Format::Stowage {
        return Err(bad_input("--pure applies to provider formats, not `stowage`"));
    }
    let mode = if pure { Mode::Pure } else { Mode::Keep };
    let store = ctx.open_store(None).await?;
    let display = Display::persistent(store.clone(), DisplayOptions::default());
    let scope = ctx.scope();
    let ids = if conversations.is_empty() { all_conversations(&store, &scope).await? } else { conversations.to_vec() };
    let mut out = String::new();
    let mut summary = Vec::new();
    for id in &ids {
        let info = store.info(&scope, id).await.with_context(|| format!("conversation `{id}`"))?;
        let messages = all_messages(&store, &scope, id).await?;
        let records = if format == Format::Stowage { all_display(&display, &scope, id).await? } else { Vec::new() };
        let transcript = Transcript::from_stored(id, info.meta, messages, records);
        let rendered = interchange::render_line(format, &transcript, mode)?;
        out.push_str(&rendered.text);
        out.push('\n');
        if !ctx.global.json && !rendered.dropped.is_empty() {
            eprintln!("left out of `{id}` (pure {format}): {}", rendered.dropped);
        }
        summary.push(serde_json::json!({ "conversation": id, "dropped": rendered.dropped }));
    }
    let to_file = output.is_some();
    match output {
        None => std::io::stdout().write_all(out.as_bytes())?,
        Some(path) => {
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            let mut tmp =
                tempfile::NamedTempFile::new_in(dir).with_context(|| format!("writing {}", path.display()))?;
            tmp.write_all(out.as_bytes())?;
            tmp.as_file().sync_all()?;
            tmp.persist(&path).with_context(|| format!("writing {}", path.display()))?;
            if !ctx.global.json {
                eprintln!("exported {} conversation(s) to {} ({format})", ids.len(), path.display());
            }
        }
    }
    if ctx.global.json {
        let report = serde_json::json!({ "format": format.name(), "pure": pure, "conversations": summary });
        // Standard output holds the export itself unless it went to a file.
        if to_file { print_json(&report)? } else { eprintln!("{report}") }
    }
    Ok(ExitCode::SUCCESS)
}
