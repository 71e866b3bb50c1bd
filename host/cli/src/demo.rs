//! demo: the main job, end to end.

use std::process::ExitCode;

use anyhow::Context as _;
use stowage::interchange::Transcript;
use stowage::{
    Builtin, ConversationMeta, Display, DisplayContext, DisplayEvent, DisplayOptions, JsonText, NewMessage, Part, Role,
    Runtime, RuntimeConfig, Scope, StopReason, Store, StoreConfig, ToolInfo, ToolStatus, Usage,
};

use crate::context::Context;
use crate::render;
use crate::transfer::{all_display, all_messages, write_transcript};

const CONVERSATION: &str = "stowage-demo";

fn usage(input: u64, output: u64, cached: u64, cost: f64) -> Usage {
    Usage { input_tokens: input, output_tokens: output, cached_tokens: cached, cost: Some(cost) }
}

/// What happens to a tool call after it is issued.
enum Outcome {
    Completes(&'static str),
    Fails(&'static str),
}

/// One step of the scripted conversation.
enum Step {
    Say(NewMessage),
    /// Run these tool calls: executing, then their outcome; then store the results.
    Run(&'static str, Vec<(&'static str, &'static str, Outcome)>),
}

fn script() -> anyhow::Result<Vec<Step>> {
    use Outcome::*;
    Ok(vec![
        Step::Say(NewMessage::text(Role::System, "You are a travel concierge. Use tools for facts; never invent bookings.").with_id("demo-system")),
        Step::Say(NewMessage::text(Role::User, "Plan tomorrow in Lisbon for me: the weather, and a museum that is open.").with_id("demo-user-1")),
        Step::Say(
            NewMessage::new(
                Role::Assistant,
                vec![
                    Part::thinking("Need the forecast and museum opening hours; both tools are independent.", Some("EpQCCkYIBxgC…demo-signature".into())),
                    Part::text("Let me check the forecast and what's open."),
                    Part::tool_call("call_weather", "get_forecast", r#"{"city":"Lisbon","day":"tomorrow"}"#),
                    Part::tool_call("call_museums", "find_museums", r#"{"city":"Lisbon","open":"tomorrow"}"#),
                ],
            )
            .with_id("demo-assistant-1")
            .with_usage(usage(812, 121, 512, 0.0021))
            .with_stop_reason(StopReason::ToolUse),
        ),
        Step::Run(
            "demo-tool-1",
            vec![
                ("call_weather", "get_forecast", Completes(r#"{"high_c":24,"low_c":16,"sky":"sunny"}"#)),
                ("call_museums", "find_museums", Fails("museum directory timed out after 10s")),
            ],
        ),
        Step::Say(
            NewMessage::new(Role::Assistant, vec![Part::tool_call("call_museums_retry", "find_museums", r#"{"city":"Lisbon","open":"tomorrow","timeout_s":30}"#)])
                .with_id("demo-assistant-2")
                .with_usage(usage(1004, 38, 812, 0.0007))
                .with_stop_reason(StopReason::ToolUse),
        ),
        Step::Run("demo-tool-2", vec![("call_museums_retry", "find_museums", Completes(r#"[{"name":"MAAT","open":"10:00-19:00"}]"#))]),
        Step::Say(
            NewMessage::text(Role::Assistant, "Tomorrow: sunny, 16–24 °C. MAAT is open 10:00–19:00 — go in the afternoon and walk along the river after.")
                .with_id("demo-assistant-3")
                .with_usage(usage(1080, 44, 1004, 0.0008))
                .with_stop_reason(StopReason::EndTurn),
        ),
        Step::Say(NewMessage::text(Role::User, "Book a table near MAAT at 19:30.").with_id("demo-user-2")),
        Step::Say(
            NewMessage::new(Role::Assistant, vec![Part::tool_call("call_booking", "book_table", r#"{"near":"MAAT","time":"19:30","people":2}"#)])
                .with_id("demo-assistant-4")
                .with_usage(usage(1150, 35, 1080, 0.0006))
                .with_stop_reason(StopReason::ToolUse),
        ),
        Step::Run("demo-tool-3", vec![("call_booking", "book_table", Fails("reservation service returned 503"))]),
        Step::Say(
            NewMessage::text(Role::Assistant, "I couldn't book: the reservation service is down (503). Want me to try again in a few minutes?")
                .with_id("demo-assistant-5")
                .with_usage(usage(1210, 29, 1150, 0.0005))
                .with_stop_reason(StopReason::EndTurn)
                .with_metadata(JsonText::parse(r#"{"model":"demo-model","turn":2}"#)?),
        ),
    ])
}

async fn save(
    store: &Store,
    display: &Display,
    scope: &Scope,
    ctx: &DisplayContext,
    message: NewMessage,
) -> anyhow::Result<()> {
    store.append(scope, CONVERSATION, vec![message.clone()], None).await?;
    display.save_message(scope, &message, ctx).await?;
    Ok(())
}

async fn play(store: &Store, display: &Display, scope: &Scope) -> anyhow::Result<()> {
    let ctx = DisplayContext::new(Some("concierge"), CONVERSATION);
    for step in script()? {
        match step {
            Step::Say(message) => save(store, display, scope, &ctx, message).await?,
            Step::Run(result_id, calls) => {
                let mut results = Vec::new();
                for (call, name, outcome) in calls {
                    let info = ToolInfo::new(call).name(name).display_text(format!("Running {name}…"));
                    display.update_tool_status(scope, ToolStatus::Executing, info, &ctx).await?;
                    match outcome {
                        Outcome::Completes(result) => {
                            display
                                .update_tool_status(
                                    scope,
                                    ToolStatus::Completed,
                                    ToolInfo::new(call).result(result),
                                    &ctx,
                                )
                                .await?;
                            results.push(Part::tool_result(call, result, false));
                        }
                        Outcome::Fails(error) => {
                            display
                                .update_tool_status(scope, ToolStatus::Failed, ToolInfo::new(call).error(error), &ctx)
                                .await?;
                            results.push(Part::tool_result(call, error, true));
                        }
                    }
                }
                save(store, display, scope, &ctx, NewMessage::new(Role::Tool, results).with_id(result_id)).await?;
            }
        }
    }
    Ok(())
}

fn event_line(event: &DisplayEvent) -> String {
    let verb = match event {
        DisplayEvent::DisplayMessageSaved { .. } => "saved  ",
        DisplayEvent::DisplayMessageUpdated { .. } => "updated",
    };
    format!("{verb} {}", render::display_record(event.record()))
}

pub async fn demo(ctx: &Context) -> anyhow::Result<ExitCode> {
    let config = ctx.store_config(None)?;
    let scope: Scope = ctx.scope();
    println!(
        "== 1. An agent plays two turns into store `{}` ({}) at {}",
        config.name,
        adapter_name(&config),
        config.data_dir.display()
    );
    let events = {
        let store = ctx.runtime.open_store(config.clone()).await?;
        store.delete(&scope, CONVERSATION).await?;
        let meta = ConversationMeta {
            agent_id: Some("concierge".into()),
            title: Some("Lisbon day trip".into()),
            metadata: None,
            extra: None,
        };
        store.open(&scope, CONVERSATION, meta).await?;
        let (display, sweep) = Display::open(store.clone(), DisplayOptions::default()).await?;
        let mut rx = display.subscribe();
        play(&store, &display, &scope).await?;
        let mut events = Vec::new();
        while let Ok(event) = rx.try_recv() {
            events.push(event);
        }
        println!(
            "   start-up sweep interrupted {} stale card(s); {} display events emitted",
            sweep.interrupted,
            events.len()
        );
        events
    };

    println!("\n== 2. A fresh host reloads it");
    let fresh = Runtime::new(RuntimeConfig::default())?;
    let store = fresh.open_store(config.clone()).await?;
    let info = store.info(&scope, CONVERSATION).await?;
    let messages = all_messages(&store, &scope, CONVERSATION).await?;
    println!(
        "   \"{}\": {} messages, version {}\n",
        info.meta.title.as_deref().unwrap_or(""),
        info.message_count,
        info.version
    );
    for message in &messages {
        print!("{}", render::message(message));
    }
    println!("\n   display events, as a UI received them:");
    for event in &events {
        println!("   {}", event_line(event));
    }
    let display = Display::persistent(store.clone(), DisplayOptions::default());
    let records = all_display(&display, &scope, CONVERSATION).await?;
    let failed = records.iter().filter(|r| r.status == Some(ToolStatus::Failed)).count();
    println!("\n   {} display records stored; {failed} tool card(s) failed, the rest completed", records.len());

    let other_dir = config.data_dir.with_file_name("demo-filesystem");
    println!("\n== 3. The same data through another adapter (filesystem, {})", other_dir.display());
    let other = fresh
        .open_store(StoreConfig::builtin(Builtin::Filesystem, &other_dir))
        .await
        .context("opening the filesystem store")?;
    let other_display = Display::persistent(other.clone(), DisplayOptions::default());
    other.delete(&scope, CONVERSATION).await?;
    let transcript = Transcript::from_stored(CONVERSATION, info.meta.clone(), messages.clone(), records.clone());
    write_transcript(&other, &other_display, &scope, CONVERSATION, &transcript).await?;
    let copied = all_messages(&other, &scope, CONVERSATION).await?;
    let copied_records = all_display(&other_display, &scope, CONVERSATION).await?;
    let same = copied == messages && copied_records.len() == records.len();
    println!(
        "   filesystem adapter holds {} messages and {} display records; identical to the {} store: {}",
        copied.len(),
        copied_records.len(),
        adapter_name(&config),
        if same { "yes" } else { "NO" }
    );
    if let Some(last) = copied.last() {
        print!("   last message there:\n{}", render::message(last));
    }
    if !same {
        anyhow::bail!("the copy through the filesystem adapter differs");
    }
    Ok(ExitCode::SUCCESS)
}

fn adapter_name(config: &StoreConfig) -> String {
    match &config.adapter {
        stowage::AdapterSource::Builtin(b) => b.name().to_owned(),
        stowage::AdapterSource::File(path) => path.display().to_string(),
        stowage::AdapterSource::Bytes { name, .. } => name.clone(),
    }
}
