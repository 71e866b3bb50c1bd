//! A tool-using agent turn rendered live: a subscriber prints the display events
//! as a UI would receive them, while the turn is persisted through the SQLite
//! adapter. One tool completes; another is interrupted (it needs approval) and is
//! resolved later.
//!
//! ```text
//! cargo run -p stowage-examples --example display_events [DATA_DIR]
//! ```

use std::path::PathBuf;

use stowage::{
    Builtin, Display, DisplayContext, DisplayEvent, DisplayOptions, JsonText, NewMessage, Part, Role, Runtime,
    RuntimeConfig, Scope, StopReason, StoreConfig, SyntheticMessage, ToolInfo, ToolStatus,
};

fn render(event: &DisplayEvent) -> String {
    let (verb, record) = match event {
        DisplayEvent::DisplayMessageSaved { record, .. } => ("saved  ", record),
        DisplayEvent::DisplayMessageUpdated { record, .. } => ("updated", record),
    };
    let status = record.status.map(|s| format!(" [{s}]")).unwrap_or_default();
    let call = record.tool_call_id.as_deref().map(|c| format!(" {c}")).unwrap_or_default();
    let meta = record.metadata.as_ref().map(|m| format!("  meta {m}")).unwrap_or_default();
    format!(
        "{verb} #{:<2} {:<9} {:<12}{call}{status}  {}{meta}",
        record.seq, record.message_type, record.content_type, record.content
    )
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let data_dir = std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("stowage-data"));
    let runtime = Runtime::new(RuntimeConfig::default())?;
    let store = runtime.open_store(StoreConfig::builtin(Builtin::Sqlite, data_dir.join("display-demo"))).await?;
    let (display, sweep) = Display::open(store.clone(), DisplayOptions::default()).await?;
    println!("start-up sweep: {} stale tool card(s) marked interrupted", sweep.interrupted);

    // The UI: a subscriber printing events as they arrive.
    let mut events = display.subscribe();
    let ui = tokio::spawn(async move {
        while let Ok(event) = events.recv().await {
            println!("{}", render(&event));
        }
    });

    let scope = Scope::new("acme", "alice");
    let conversation = format!("deploy-{}", std::process::id());
    let ctx = DisplayContext::new(Some("ops-agent"), conversation.as_str());
    store.delete(&scope, &conversation).await?;

    display
        .save_message(&scope, &NewMessage::text(Role::User, "Check the build, then deploy to staging."), &ctx)
        .await?;
    let assistant = NewMessage::new(
        Role::Assistant,
        vec![
            Part::thinking("Run CI status first, then the deploy, which needs approval.", Some("sig-1".into())),
            Part::text("Checking the build and preparing the deploy."),
            Part::tool_call("call_ci", "ci_status", r#"{"branch":"main"}"#),
            Part::tool_call("call_deploy", "deploy", r#"{"env":"staging"}"#),
        ],
    )
    .with_id("assistant-1")
    .with_stop_reason(StopReason::ToolUse);
    display.save_message(&scope, &assistant, &ctx).await?;

    // call_ci: pending → executing → completed
    display
        .update_tool_status(
            &scope,
            ToolStatus::Executing,
            ToolInfo::new("call_ci").name("ci_status").display_text("Checking CI…"),
            &ctx,
        )
        .await?;
    display
        .update_tool_status(
            &scope,
            ToolStatus::Completed,
            ToolInfo::new("call_ci").result("green: 412 tests passed"),
            &ctx,
        )
        .await?;
    let ci_result = NewMessage::new(Role::Tool, vec![Part::tool_result("call_ci", "green: 412 tests passed", false)]);
    display.save_message(&scope, &ci_result, &ctx).await?;

    // call_deploy: pending → executing → interrupted (waits for a human) → resolved
    display
        .update_tool_status(
            &scope,
            ToolStatus::Executing,
            ToolInfo::new("call_deploy").display_text("Deploying to staging…"),
            &ctx,
        )
        .await?;
    display
        .update_tool_status(
            &scope,
            ToolStatus::Interrupted,
            ToolInfo::new("call_deploy").display_text("Waiting for approval"),
            &ctx,
        )
        .await?;
    let placeholder = NewMessage::new(Role::Tool, vec![Part::tool_result("call_deploy", "pending approval", false)]);
    display.save_message(&scope, &placeholder, &ctx).await?;
    let answer = SyntheticMessage {
        message_type: "user".into(),
        content_type: "ask_user_answer".into(),
        content: JsonText::parse(r#"{"question":"Deploy to staging?","answer":"yes"}"#)?,
        metadata: None,
    };
    display.save_synthetic_message(&scope, answer, &ctx).await?;
    display.resolve_tool_result(&scope, "call_deploy", "deployed build 1.4.2 to staging", &ctx).await?;

    // Let the UI task drain, then show what a reload would render.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    ui.abort();
    let page = display.list(&scope, &conversation, 0, 100).await?;
    println!("\nreloaded from the store: {} display records", page.records.len());
    for record in &page.records {
        let status = record.status.map(|s| format!(" [{s}]")).unwrap_or_default();
        println!("  #{:<2} {:<9} {}{status}", record.seq, record.message_type, record.content_type);
    }
    Ok(())
}
