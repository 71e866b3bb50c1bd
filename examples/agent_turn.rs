//! The main job: an agent turn with thinking and tool calls is saved through the
//! SQLite adapter into a local folder, then a brand-new host loads it back and
//! prints the transcript.
//!
//! ```text
//! cargo run -p stowage-examples --example agent_turn [DATA_DIR]
//! ```
//!
//! Message ids are fixed, so running it again stores nothing new (appends are
//! idempotent by message id) and prints the same transcript.

use std::path::PathBuf;

use anyhow::Context;
use stowage::{
    Builtin, ConversationMeta, JsonText, LoadRequest, Message, NewMessage, Part, Role, Runtime, RuntimeConfig, Scope,
    StopReason, StoreConfig, Usage,
};

const CONVERSATION: &str = "trip-to-paris";

fn the_turn() -> anyhow::Result<Vec<NewMessage>> {
    Ok(vec![
        NewMessage::text(Role::System, "You are a concise travel assistant. Use tools for facts.")
            .with_id("msg-system"),
        NewMessage::text(
            Role::User,
            "I land in Paris tomorrow with 200 EUR. What's the weather, and how much is that in USD?",
        )
        .with_id("msg-user-1"),
        NewMessage::new(
            Role::Assistant,
            vec![
                Part::thinking(
                    "Two independent facts: tomorrow's forecast for Paris and a EUR→USD conversion. Call both tools.",
                    Some("EqQBCkgIARABGAIiQL7r…sig".into()),
                ),
                Part::tool_call("call_weather_1", "get_forecast", r#"{"city":"Paris","day":"tomorrow"}"#),
                Part::tool_call("call_fx_1", "convert_currency", r#"{"amount":200,"from":"EUR","to":"USD"}"#),
            ],
        )
        .with_id("msg-assistant-1")
        .with_usage(Usage { input_tokens: 412, output_tokens: 96, cached_tokens: 256, cost: Some(0.00131) })
        .with_stop_reason(StopReason::ToolUse),
        NewMessage::new(
            Role::Tool,
            vec![
                Part::tool_result(
                    "call_weather_1",
                    r#"{"high_c":17,"low_c":9,"summary":"light rain in the morning"}"#,
                    false,
                ),
                Part::tool_result("call_fx_1", r#"{"error":"rate service timed out"}"#, true),
            ],
        )
        .with_id("msg-tool-1"),
        NewMessage::new(
            Role::Assistant,
            vec![Part::tool_call("call_fx_2", "convert_currency", r#"{"amount":200,"from":"EUR","to":"USD"}"#)],
        )
        .with_id("msg-assistant-2")
        .with_usage(Usage { input_tokens: 530, output_tokens: 31, cached_tokens: 412, cost: Some(0.00042) })
        .with_stop_reason(StopReason::ToolUse),
        NewMessage::new(
            Role::Tool,
            vec![Part::tool_result("call_fx_2", r#"{"amount":216.40,"currency":"USD"}"#, false)],
        )
        .with_id("msg-tool-2"),
        NewMessage::text(
            Role::Assistant,
            "Tomorrow in Paris: 9–17 °C with light rain in the morning — pack an umbrella. 200 EUR is about 216 USD.",
        )
        .with_id("msg-assistant-3")
        .with_usage(Usage { input_tokens: 588, output_tokens: 44, cached_tokens: 530, cost: Some(0.00051) })
        .with_stop_reason(StopReason::EndTurn)
        .with_metadata(JsonText::parse(r#"{"model":"example-model-1","latency_ms":812}"#)?),
    ])
}

fn print_message(message: &Message) {
    let role = format!("{:?}", message.role).to_lowercase();
    let mut first = true;
    let mut line = |text: String| {
        let lead = if first { format!("#{:<2} {role:<9}", message.seq) } else { " ".repeat(13) };
        println!("{lead} {text}");
        first = false;
    };
    for part in &message.parts {
        match part {
            Part::Text { text, .. } => line(text.clone()),
            Part::Thinking { text, signature, .. } => {
                let signed = if signature.is_some() { "signed" } else { "unsigned" };
                line(format!("[thinking, {signed}] {text}"))
            }
            Part::ToolCall { id, name, arguments, .. } => line(format!("→ {name}({arguments})  [{id}]")),
            Part::ToolResult { call_id, content, is_error, .. } => {
                let mark = if *is_error { "✗" } else { "←" };
                line(format!("{mark} {content}  [{call_id}]"))
            }
            Part::Media { mime_type, name, .. } => {
                line(format!("[media {mime_type} {}]", name.as_deref().unwrap_or("")))
            }
            Part::Provider { format, .. } => line(format!("[{format} item]")),
        }
    }
    if let Some(usage) = &message.usage {
        let stop = message.stop_reason.clone().map(String::from).unwrap_or_default();
        line(format!(
            "  (tokens in {} / out {} / cached {}, stop: {stop})",
            usage.input_tokens, usage.output_tokens, usage.cached_tokens
        ));
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::from_default_env()).init();
    let data_dir = std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("stowage-data"));
    let scope = Scope::new("acme", "alice");
    let store_config = || StoreConfig::builtin(Builtin::Sqlite, data_dir.join("sqlite"));

    // 1. An agent platform saves the turn as it happens.
    {
        let runtime = Runtime::new(RuntimeConfig::default())?;
        let store = runtime.open_store(store_config()).await.context("opening the SQLite store")?;
        let meta = ConversationMeta {
            agent_id: Some("travel-agent".into()),
            title: Some("Trip to Paris".into()),
            ..ConversationMeta::default()
        };
        store.open(&scope, CONVERSATION, meta).await?;
        let turn = the_turn()?;
        let (user, rest) = turn.split_at(2);
        let first = store.append(&scope, CONVERSATION, user.to_vec(), None).await?;
        let mut stored = first.stored;
        for message in rest {
            stored += store.append(&scope, CONVERSATION, vec![message.clone()], None).await?.stored;
        }
        println!(
            "saved {} messages ({stored} new) to {} with the sqlite adapter",
            turn.len(),
            data_dir.join("sqlite").display()
        );
    } // the host is dropped here: engine, instances, connections

    // 2. A fresh host loads it back.
    let runtime = Runtime::new(RuntimeConfig::default())?;
    let store = runtime.open_store(store_config()).await?;
    let info = store.info(&scope, CONVERSATION).await?;
    let page = store.load(&scope, CONVERSATION, LoadRequest::latest(50)).await?;
    println!(
        "\nreloaded by a fresh host: \"{}\" (agent {}), {} messages, version {}\n",
        info.meta.title.as_deref().unwrap_or("untitled"),
        info.meta.agent_id.as_deref().unwrap_or("-"),
        info.message_count,
        info.version
    );
    for message in &page.messages {
        print_message(message);
    }
    let (input, output, cost) =
        page.messages.iter().filter_map(|m| m.usage.as_ref()).fold((0, 0, 0.0), |acc, u| {
            (acc.0 + u.input_tokens, acc.1 + u.output_tokens, acc.2 + u.cost.unwrap_or(0.0))
        });
    println!("\nturn usage: {input} tokens in, {output} out, cost {cost:.5}");
    Ok(())
}
