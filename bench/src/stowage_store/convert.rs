//! Workload messages to Stowage values and back.
//!
//! [`new_message`] builds the `stowage::NewMessage` of a generated message (untimed,
//! before the timer): shape 0 → `Role::User` + one text part; shape 1 →
//! `Role::Assistant` + one `tool_call(CID(c, m), "search_docs", arguments)` whose
//! arguments are the compact JSON string `{"query":"TEXT","top_k":5}`; shape 2 →
//! `Role::Tool` + `tool_result(CID(c, m − 1), TEXT, false)`; shape 3 →
//! `Role::Assistant` + one text part. Ids and timestamps are left to the host, which
//! assigns them inside the timed call, as it does for any caller.
//!
//! [`canonical`] is the inverse: a loaded `stowage::Message` back to the workload's
//! canonical OpenAI Chat Completions JSON (compact, keys in the pinned order), for the
//! untimed read-back checks. Anything outside the four shapes is a mismatch.

use serde_json::{Value, json};
use stowage::{Message as Stored, NewMessage, Part, Role};

use crate::error::{BenchError, Result};
use crate::workload::{Message, call_id, text};

/// The tool every shape-1 message calls.
pub const TOOL_NAME: &str = "search_docs";

/// The `NewMessage` of generated message `(c, m)`.
pub fn new_message(message: &Message) -> Result<NewMessage> {
    let (c, m) = (message.c, message.m);
    let text = text(c, m);
    Ok(match m % 4 {
        0 => NewMessage::text(Role::User, text),
        1 => {
            // Words never need escaping (WORKLOAD.md §1), but build it as JSON anyway.
            let arguments = serde_json::to_string(&json!({"query": text, "top_k": 5}))?;
            NewMessage::new(Role::Assistant, vec![Part::tool_call(call_id(c, m), TOOL_NAME, arguments)])
        }
        2 => {
            let previous = m.checked_sub(1).ok_or_else(|| BenchError::Config(format!("shape 2 at m = {m}")))?;
            NewMessage::new(Role::Tool, vec![Part::tool_result(call_id(c, previous), text, false)])
        }
        _ => NewMessage::text(Role::Assistant, text),
    })
}

/// The canonical JSON of a loaded message (one of the workload's four shapes).
pub fn canonical(message: &Stored) -> Result<String> {
    let value: Value = match (message.role, message.parts.as_slice()) {
        (Role::User, [Part::Text { text, extra: None }]) => json!({"role": "user", "content": text}),
        (Role::Assistant, [Part::Text { text, extra: None }]) => json!({"role": "assistant", "content": text}),
        (Role::Assistant, [Part::ToolCall { id, name, arguments, extra: None }]) => json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}],
        }),
        (Role::Tool, [Part::ToolResult { call_id, content, is_error: false, extra: None }]) => {
            json!({"role": "tool", "tool_call_id": call_id, "content": content})
        }
        (role, parts) => {
            return Err(BenchError::Mismatch(format!(
                "seq {}: a {} message with {} part(s) is none of the workload's shapes",
                message.seq,
                role.as_str(),
                parts.len()
            )));
        }
    };
    Ok(serde_json::to_string(&value)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::conversation;

    fn stored(new: NewMessage, seq: u64) -> Stored {
        Stored {
            id: format!("id-{seq}"),
            seq,
            role: new.role,
            parts: new.parts,
            usage: None,
            stop_reason: None,
            created_at: 0,
            metadata: None,
            extra: None,
        }
    }

    #[test]
    fn every_shape_round_trips_to_the_canonical_bytes() {
        for message in conversation(3, 12) {
            let new = new_message(&message).unwrap();
            let back = canonical(&stored(new, u64::from(message.m) + 1)).unwrap();
            assert_eq!(back, message.canonical, "m = {}", message.m);
        }
    }

    #[test]
    fn other_shapes_are_mismatches() {
        let two_parts = NewMessage::new(Role::User, vec![Part::text("a"), Part::text("b")]);
        assert!(matches!(canonical(&stored(two_parts, 1)), Err(BenchError::Mismatch(_))));
        let error_result = NewMessage::new(Role::Tool, vec![Part::tool_result("call", "x", true)]);
        assert!(matches!(canonical(&stored(error_result, 2)), Err(BenchError::Mismatch(_))));
    }
}
