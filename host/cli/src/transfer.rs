//! import and export, in Stowage, OpenAI and Anthropic JSON Lines.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use sha2::{Digest, Sha256};
use stowage::interchange::{self, Format, LineError, Transcript};
use stowage::{Display, DisplayOptions, DisplayRecord, LoadRequest, Message, Scope, Store};

use crate::context::{Context, bad_input, print_json};

/// Messages per append call while importing or migrating (each call is atomic).
pub const BATCH: usize = 500;

fn short_hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// Gives every conversation and message an id, deterministically, so importing
/// the same file twice stores nothing twice.
fn assign_ids(line_text: &str, transcript: &mut Transcript) -> String {
    let conversation = transcript
        .conversation_id
        .get_or_insert_with(|| format!("import-{}", short_hash(line_text.as_bytes())))
        .clone();
    for (index, message) in transcript.messages.iter_mut().enumerate() {
        if message.id.is_none() {
            let fingerprint = serde_json::to_vec(&message.parts).unwrap_or_default();
            message.id = Some(format!("{conversation}-{index}-{}", short_hash(&fingerprint)));
        }
    }
    conversation
}

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
    // Check the whole file before writing anything.
    let mut transcripts: Vec<(usize, String, Transcript)> = Vec::new();
    let mut first_line: HashMap<String, usize> = HashMap::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (_, mut transcript) = interchange::parse_line(format, index + 1, line)
            .with_context(|| format!("{} cannot be imported", file.display()))?;
        let id = assign_ids(line, &mut transcript);
        if let Some(previous) = first_line.insert(id.clone(), index + 1) {
            let err = LineError {
                line: index + 1,
                field: "conversation_id".into(),
                reason: format!("conversation `{id}` already appears on line {previous}"),
            };
            return Err(anyhow::Error::new(err).context(format!("{} cannot be imported", file.display())));
        }
        transcripts.push((index + 1, id, transcript));
    }
    if transcripts.is_empty() {
        return Err(bad_input(format!("{} holds no conversations", file.display())));
    }

    let store = ctx.open_store(None).await?;
    let display = Display::persistent(store.clone(), DisplayOptions::default());
    let scope = ctx.scope();
    let mut created = Vec::new();
    let mut summary = Vec::new();
    for (line, id, transcript) in &transcripts {
        let existed = store.info(&scope, id).await.is_ok();
        if !existed {
            created.push(id.clone());
        }
        match write_transcript(&store, &display, &scope, id, transcript).await {
            Ok(stored) => summary.push(serde_json::json!({
                "conversation": id, "line": line, "messages": transcript.messages.len(), "new": stored,
            })),
            Err(err) => {
                // Leave nothing of this file half-written.
                for id in &created {
                    let _ = store.delete(&scope, id).await;
                }
                return Err(err.context(format!(
                    "importing line {line} of {} failed; the {} conversation(s) this import created were removed",
                    file.display(),
                    created.len()
                )));
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

/// Every message of a conversation, in order.
pub async fn all_messages(store: &Store, scope: &Scope, id: &str) -> anyhow::Result<Vec<Message>> {
    let mut messages = Vec::new();
    let mut after = 0;
    loop {
        let page = store.load(scope, id, LoadRequest::after(after, 1000)).await?;
        let Some(last) = page.messages.last() else { break };
        after = last.seq;
        let more = page.next_cursor.is_some();
        messages.extend(page.messages);
        if !more {
            break;
        }
    }
    Ok(messages)
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
    output: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let format: Format = format.parse()?;
    let store = ctx.open_store(None).await?;
    let display = Display::persistent(store.clone(), DisplayOptions::default());
    let scope = ctx.scope();
    let ids = if conversations.is_empty() { all_conversations(&store, &scope).await? } else { conversations.to_vec() };
    let mut out = String::new();
    for id in &ids {
        let info = store.info(&scope, id).await.with_context(|| format!("conversation `{id}`"))?;
        let messages = all_messages(&store, &scope, id).await?;
        let records = if format == Format::Stowage { all_display(&display, &scope, id).await? } else { Vec::new() };
        let transcript = Transcript::from_stored(id, info.meta, messages, records);
        out.push_str(&interchange::render_line(format, &transcript)?);
        out.push('\n');
    }
    match output {
        None => std::io::stdout().write_all(out.as_bytes())?,
        Some(path) => {
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            let mut tmp =
                tempfile::NamedTempFile::new_in(dir).with_context(|| format!("writing {}", path.display()))?;
            tmp.write_all(out.as_bytes())?;
            tmp.as_file().sync_all()?;
            tmp.persist(&path).with_context(|| format!("writing {}", path.display()))?;
            eprintln!("exported {} conversation(s) to {} ({format})", ids.len(), path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
