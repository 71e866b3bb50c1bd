//! append, load, list, delete, truncate.

use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use stowage::interchange::{self, Format, Transcript};
use stowage::{ConversationMeta, LoadFrom, LoadRequest, OrphanPolicy};

use crate::context::{Context, bad_input, print_json, read_input};
use crate::render;

pub async fn append(
    ctx: &Context,
    conversation: &str,
    file: &str,
    expected_version: Option<u64>,
) -> anyhow::Result<ExitCode> {
    let text = read_input(file)?;
    let messages = interchange::parse_messages(&text).with_context(|| format!("{file} holds no valid messages"))?;
    if messages.is_empty() {
        return Err(bad_input(format!("{file} holds no messages")));
    }
    let store = ctx.open_store(None).await?;
    let scope = ctx.scope();
    let outcome = match expected_version {
        None => store.append_creating(&scope, conversation, ConversationMeta::default(), messages).await?,
        Some(_) => store.append(&scope, conversation, messages, expected_version).await?,
    };
    if ctx.global.json {
        print_json(&outcome)?;
    } else {
        let (first, last) = (outcome.seqs.first().copied().unwrap_or(0), outcome.seqs.last().copied().unwrap_or(0));
        println!(
            "appended {} message(s) to {conversation}: {} new, seqs {first}..={last}, version {}",
            outcome.seqs.len(),
            outcome.stored,
            outcome.version
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Args, Debug)]
pub struct LoadArgs {
    conversation: String,
    /// How many messages.
    #[arg(long, default_value_t = 50)]
    limit: u32,
    /// Messages after this seq (oldest first).
    #[arg(long, value_name = "SEQ", conflicts_with_all = ["before", "cursor"])]
    after: Option<u64>,
    /// Messages before this seq.
    #[arg(long, value_name = "SEQ", conflicts_with = "cursor")]
    before: Option<u64>,
    /// Continue from a previous page's cursor.
    #[arg(long)]
    cursor: Option<String>,
    /// Crash repair for tool calls that never got a result: keep them, strip them,
    /// or show a synthesized `interrupted` result (storage is not changed).
    #[arg(long, default_value = "keep", value_parser = ["keep", "strip", "synthesize"])]
    orphans: String,
    /// Print the page as one JSON line in this format instead of text.
    #[arg(long, value_parser = crate::transfer::FORMATS)]
    format: Option<String>,
}

pub async fn load(ctx: &Context, args: LoadArgs) -> anyhow::Result<ExitCode> {
    let store = ctx.open_store(None).await?;
    let scope = ctx.scope();
    let from = match (args.after, args.before, args.cursor) {
        (Some(seq), _, _) => LoadFrom::After(seq),
        (_, Some(seq), _) => LoadFrom::Before(seq),
        (_, _, Some(cursor)) => LoadFrom::Cursor(cursor),
        _ => LoadFrom::Latest,
    };
    let info = store
        .info(&scope, &args.conversation)
        .await
        .with_context(|| format!("conversation `{}` in scope {}/{}", args.conversation, scope.tenant, scope.user))?;
    let orphans = match args.orphans.as_str() {
        "strip" => OrphanPolicy::Strip,
        "synthesize" => OrphanPolicy::SynthesizeInterrupted,
        _ => OrphanPolicy::Keep,
    };
    let request = LoadRequest::new(from, args.limit).with_orphans(orphans);
    let page = store.load(&scope, &args.conversation, request).await?;
    if let Some(format) = args.format {
        let format: Format = format.parse()?;
        let transcript = Transcript::from_stored(&args.conversation, info.meta, page.messages, Vec::new());
        println!("{}", interchange::render_line(format, &transcript, interchange::Mode::Keep)?.text);
    } else if ctx.global.json {
        print_json(&page)?;
    } else {
        println!("{} — {} messages, version {}", info.id, info.message_count, info.version);
        for message in &page.messages {
            print!("{}", render::message(message));
        }
        if let Some(repairs) = &page.repairs {
            for orphan in &repairs.orphaned_calls {
                println!(
                    "(repair: tool call {} `{}` at seq {} has no result)",
                    orphan.call_id, orphan.name, orphan.seq
                );
            }
        }
        if let Some(cursor) = page.next_cursor {
            println!("(more: --cursor {cursor})");
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn list(ctx: &Context, limit: Option<u32>) -> anyhow::Result<ExitCode> {
    let store = ctx.open_store(None).await?;
    let scope = ctx.scope();
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let remaining = limit.map_or(1000, |l| l.saturating_sub(all.len() as u32).min(1000));
        if remaining == 0 {
            break;
        }
        let page = store.list(&scope, cursor.as_deref(), remaining).await?;
        all.extend(page.conversations);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    if ctx.global.json {
        print_json(&all)?;
    } else if all.is_empty() {
        println!("no conversations in scope {}/{}", scope.tenant, scope.user);
    } else {
        for info in &all {
            println!("{}", render::conversation(info));
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn delete(ctx: &Context, conversation: &str) -> anyhow::Result<ExitCode> {
    let store = ctx.open_store(None).await?;
    let deleted = store.delete(&ctx.scope(), conversation).await?;
    if ctx.global.json {
        print_json(&serde_json::json!({ "conversation": conversation, "deleted": deleted }))?;
    } else if deleted {
        println!("deleted {conversation}");
    } else {
        println!("{conversation} did not exist; nothing deleted");
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn truncate(
    ctx: &Context,
    conversation: &str,
    after: u64,
    expected_version: Option<u64>,
) -> anyhow::Result<ExitCode> {
    let store = ctx.open_store(None).await?;
    let outcome = store.truncate_after(&ctx.scope(), conversation, after, expected_version).await?;
    if ctx.global.json {
        print_json(&outcome)?;
    } else {
        println!("removed {} message(s) after seq {after}; version {}", outcome.removed, outcome.version);
    }
    Ok(ExitCode::SUCCESS)
}
