//! migrate: copy conversations between stores, then verify.

use std::io::IsTerminal;
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use stowage::interchange::Transcript;
use stowage::{Display, DisplayOptions, DisplayRecord, Scope, Store};

use crate::context::{Context, bad_input, print_json};
use crate::transfer::{all_conversations, all_display, all_messages, write_transcript};

/// What a display record must keep across stores (its seq and time stamps may not).
fn display_key(r: &DisplayRecord) -> impl PartialEq + std::fmt::Debug + use<> {
    (
        r.message_id.clone(),
        r.message_type.clone(),
        r.content_type.clone(),
        r.tool_call_id.clone(),
        r.status,
        r.content.clone(),
        r.metadata.clone(),
        r.created_at,
    )
}

/// Differences between the two copies of one conversation.
async fn verify(
    from: (&Store, &Display),
    to: (&Store, &Display),
    scope: &Scope,
    id: &str,
) -> anyhow::Result<Vec<String>> {
    let mut problems = Vec::new();
    let (source, target) = (all_messages(from.0, scope, id).await?, all_messages(to.0, scope, id).await?);
    if source.len() != target.len() {
        problems.push(format!("{id}: {} messages in the source, {} in the target", source.len(), target.len()));
    } else if let Some((a, _)) = source.iter().zip(&target).find(|(a, b)| a != b) {
        problems.push(format!("{id}: message seq {} differs", a.seq));
    }
    let (source, target) = (all_display(from.1, scope, id).await?, all_display(to.1, scope, id).await?);
    if source.len() != target.len() {
        problems.push(format!("{id}: {} display records in the source, {} in the target", source.len(), target.len()));
    } else if let Some((a, _)) = source.iter().zip(&target).find(|(a, b)| display_key(a) != display_key(b)) {
        problems.push(format!("{id}: display record {} differs", a.seq));
    }
    Ok(problems)
}

pub async fn migrate(ctx: &Context, from: &str, to: &str, conversations: &[String]) -> anyhow::Result<ExitCode> {
    if from == to {
        return Err(bad_input("--from and --to name the same store"));
    }
    let source = ctx.open_store(Some(from)).await?;
    let target = ctx.open_store(Some(to)).await?;
    let (source_display, target_display) = (
        Display::persistent(source.clone(), DisplayOptions::default()),
        Display::persistent(target.clone(), DisplayOptions::default()),
    );
    let scope = ctx.scope();
    let ids = if conversations.is_empty() { all_conversations(&source, &scope).await? } else { conversations.to_vec() };

    let progress = if ctx.global.json || !std::io::stderr().is_terminal() {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(ids.len() as u64)
    };
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} conversations  {msg}") {
        progress.set_style(style);
    }
    let (mut messages, mut new_messages, mut records) = (0usize, 0u64, 0usize);
    for id in &ids {
        progress.set_message(id.clone());
        let info = source.info(&scope, id).await?;
        let transcript = Transcript::from_stored(
            id,
            info.meta,
            all_messages(&source, &scope, id).await?,
            all_display(&source_display, &scope, id).await?,
        );
        messages += transcript.messages.len();
        records += transcript.display.len();
        new_messages += write_transcript(&target, &target_display, &scope, id, &transcript).await?;
        progress.inc(1);
    }
    progress.finish_and_clear();

    let mut problems = Vec::new();
    for id in &ids {
        problems.extend(verify((&source, &source_display), (&target, &target_display), &scope, id).await?);
    }
    if ctx.global.json {
        print_json(&json!({
            "from": from, "to": to, "conversations": ids.len(), "messages": messages,
            "new_messages": new_messages, "display_records": records, "verified": problems.is_empty(), "problems": problems,
        }))?;
    } else {
        println!(
            "migrated {} conversation(s) from `{from}` to `{to}`: {messages} messages ({new_messages} new), {records} display records",
            ids.len()
        );
        if problems.is_empty() {
            println!("verified: counts and contents match");
        } else {
            for problem in &problems {
                println!("MISMATCH {problem}");
            }
        }
    }
    if problems.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("error: verification found {} difference(s) between `{from}` and `{to}`", problems.len());
    Ok(ExitCode::from(7))
}
