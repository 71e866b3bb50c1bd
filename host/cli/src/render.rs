//! Human-readable output.

use stowage::{ConversationInfo, DisplayRecord, Message, Part};

fn role_name(message: &Message) -> String {
    format!("{:?}", message.role).to_lowercase()
}

/// One message as terminal lines.
pub fn message(message: &Message) -> String {
    let mut lines = Vec::new();
    let role = role_name(message);
    for part in &message.parts {
        lines.push(match part {
            Part::Text { text, .. } => text.clone(),
            Part::Thinking { text, signature, redacted, .. } => {
                let kind = if *redacted { "redacted thinking" } else { "thinking" };
                let signed = if signature.is_some() { ", signed" } else { "" };
                format!("[{kind}{signed}] {text}")
            }
            Part::ToolCall { id, name, arguments, .. } => format!("→ {name}({arguments})  [{id}]"),
            Part::ToolResult { call_id, content, is_error, .. } => {
                format!("{} {content}  [{call_id}]", if *is_error { "✗" } else { "←" })
            }
            Part::Media { mime_type, name, .. } => format!("[{mime_type} {}]", name.as_deref().unwrap_or("")),
            Part::Provider { format, value, .. } => {
                let kind = serde_json::from_str::<serde_json::Value>(value.as_str())
                    .ok()
                    .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_owned))
                    .unwrap_or_else(|| "block".into());
                format!("[{format} {kind}]")
            }
        });
    }
    if lines.is_empty() {
        lines.push("(no content)".into());
    }
    if let Some(usage) = &message.usage {
        let stop = message.stop_reason.clone().map(String::from).unwrap_or_else(|| "-".into());
        lines.push(format!(
            "  (tokens in {} / out {} / cached {}, stop: {stop})",
            usage.input_tokens, usage.output_tokens, usage.cached_tokens
        ));
    }
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let lead = if i == 0 { format!("#{:<3} {role:<9}", message.seq) } else { " ".repeat(14) };
        out.push_str(&format!("{lead} {line}\n"));
    }
    out
}

pub fn conversation(info: &ConversationInfo) -> String {
    format!(
        "{:<32} {:>6} msgs  v{:<4} {}",
        info.id,
        info.message_count,
        info.version,
        info.meta.title.as_deref().unwrap_or("")
    )
}

pub fn display_record(record: &DisplayRecord) -> String {
    let status = record.status.map(|s| format!(" [{s}]")).unwrap_or_default();
    let call = record.tool_call_id.as_deref().map(|c| format!(" {c}")).unwrap_or_default();
    format!("#{:<3} {:<9} {}{call}{status}", record.seq, record.message_type, record.content_type)
}
