//! Crash repair: tool calls whose results never arrived (the agent died mid-tool),
//! and keeping calls and results together when history is cut.

use std::collections::HashSet;

use crate::model::{JsonText, Message, OrphanPolicy, OrphanedCall, Part, Role};

/// Content of a synthesized result.
pub const INTERRUPTED_RESULT: &str = "interrupted: the agent stopped before this tool returned a result";

/// Ids of every tool result in `messages`.
pub fn result_ids(messages: &[Message]) -> HashSet<String> {
    messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .collect()
}

/// Calls in `page` with no result later in `page` nor in `later_results`, in
/// page order. One pass from the newest message back, collecting the results
/// seen so far (linear in the page, where a set of later results built for
/// each message was quadratic).
pub fn orphaned_calls(page: &[Message], later_results: &HashSet<String>) -> Vec<OrphanedCall> {
    let mut after: HashSet<&str> = HashSet::new();
    let mut orphans = Vec::new();
    for message in page.iter().rev() {
        let first = orphans.len();
        for part in &message.parts {
            if let Part::ToolCall { id, name, .. } = part
                && !after.contains(id.as_str())
                && !later_results.contains(id)
            {
                orphans.push(OrphanedCall { seq: message.seq, call_id: id.clone(), name: name.clone() });
            }
        }
        // Back in part order within the message once the whole list is reversed.
        orphans[first..].reverse();
        after.extend(message.parts.iter().filter_map(|p| match p {
            Part::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        }));
    }
    orphans.reverse();
    orphans
}

/// Applies `policy` to `page` for `orphans`.
pub fn apply(policy: OrphanPolicy, page: Vec<Message>, orphans: &[OrphanedCall]) -> Vec<Message> {
    if orphans.is_empty() {
        return page;
    }
    let orphan_ids: HashSet<&str> = orphans.iter().map(|o| o.call_id.as_str()).collect();
    match policy {
        OrphanPolicy::Keep => page,
        OrphanPolicy::Strip => page
            .into_iter()
            .filter_map(|mut m| {
                let before = m.parts.len();
                m.parts.retain(|p| !matches!(p, Part::ToolCall { id, .. } if orphan_ids.contains(id.as_str())));
                (m.parts.len() == before || !m.parts.is_empty()).then_some(m)
            })
            .collect(),
        OrphanPolicy::SynthesizeInterrupted => {
            let mut out: Vec<Message> = Vec::with_capacity(page.len() + orphans.len());
            let mut pending: Option<Message> = None;
            for message in page {
                // A synthesized message goes after the assistant turn's tool messages.
                if message.role != Role::Tool
                    && let Some(synthetic) = pending.take()
                {
                    out.push(synthetic);
                }
                let calls: Vec<&OrphanedCall> = orphans.iter().filter(|o| o.seq == message.seq).collect();
                if !calls.is_empty() {
                    if let Some(synthetic) = pending.take() {
                        out.push(synthetic);
                    }
                    pending = Some(Message {
                        id: format!("{}~interrupted", message.id),
                        seq: message.seq,
                        role: Role::Tool,
                        parts: calls.iter().map(|o| Part::tool_result(&o.call_id, INTERRUPTED_RESULT, true)).collect(),
                        usage: None,
                        stop_reason: None,
                        created_at: message.created_at,
                        metadata: Some(JsonText::from_value(
                            &serde_json::json!({ "stowage": "synthesized", "reason": "orphaned_tool_call" }),
                        )),
                        extra: None,
                    });
                }
                out.push(message);
            }
            out.extend(pending);
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(seq: u64, role: Role, parts: Vec<Part>) -> Message {
        Message {
            id: format!("m{seq}"),
            seq,
            role,
            parts,
            usage: None,
            stop_reason: None,
            created_at: 0,
            metadata: None,
            extra: None,
        }
    }

    fn turn() -> Vec<Message> {
        vec![
            message(1, Role::User, vec![Part::text("go")]),
            message(
                2,
                Role::Assistant,
                vec![Part::text("ok"), Part::tool_call("a", "f", "{}"), Part::tool_call("b", "g", "{}")],
            ),
            message(3, Role::Tool, vec![Part::tool_result("a", "done", false)]),
        ]
    }

    #[test]
    fn finds_calls_without_results_anywhere_later() {
        let orphans = orphaned_calls(&turn(), &HashSet::new());
        assert_eq!(orphans, vec![OrphanedCall { seq: 2, call_id: "b".into(), name: "g".into() }]);
        let later: HashSet<String> = ["b".to_owned()].into();
        assert!(orphaned_calls(&turn(), &later).is_empty(), "a result beyond the page counts");
    }

    #[test]
    fn orphans_come_in_page_order_and_only_a_later_result_counts() {
        let page = vec![
            message(1, Role::Assistant, vec![Part::tool_call("a", "f", "{}"), Part::tool_call("b", "f", "{}")]),
            // A result in the message of its call, or before it, does not count.
            message(2, Role::Tool, vec![Part::tool_result("c", "early", false)]),
            message(
                3,
                Role::Assistant,
                vec![
                    Part::tool_call("c", "g", "{}"),
                    Part::tool_call("d", "g", "{}"),
                    Part::tool_result("d", "", false),
                ],
            ),
            message(4, Role::Tool, vec![Part::tool_result("a", "done", false)]),
            message(5, Role::Assistant, vec![Part::tool_call("e", "h", "{}"), Part::tool_call("f", "h", "{}")]),
        ];
        let ids = |orphans: Vec<OrphanedCall>| orphans.into_iter().map(|o| (o.seq, o.call_id)).collect::<Vec<_>>();
        let expected = [(1, "b"), (3, "c"), (3, "d"), (5, "e"), (5, "f")];
        assert_eq!(ids(orphaned_calls(&page, &HashSet::new())), expected.map(|(seq, id)| (seq, id.to_owned())));
        let later: HashSet<String> = ["e".to_owned(), "c".to_owned()].into();
        let expected = [(1, "b"), (3, "d"), (5, "f")];
        assert_eq!(ids(orphaned_calls(&page, &later)), expected.map(|(seq, id)| (seq, id.to_owned())));
    }

    #[test]
    fn strip_and_synthesize_repair_the_view() {
        let orphans = orphaned_calls(&turn(), &HashSet::new());
        let stripped = apply(OrphanPolicy::Strip, turn(), &orphans);
        assert_eq!(stripped[1].parts.len(), 2, "only the orphaned call goes");
        let synthesized = apply(OrphanPolicy::SynthesizeInterrupted, turn(), &orphans);
        assert_eq!(synthesized.len(), 4);
        assert_eq!(
            synthesized[3].parts,
            vec![Part::tool_result("b", INTERRUPTED_RESULT, true)],
            "after the tool message"
        );
        let lone = vec![message(1, Role::Assistant, vec![Part::tool_call("x", "f", "{}")])];
        let orphans = orphaned_calls(&lone, &HashSet::new());
        assert!(apply(OrphanPolicy::Strip, lone.clone(), &orphans).is_empty(), "an emptied message is dropped");
        assert_eq!(apply(OrphanPolicy::SynthesizeInterrupted, lone, &orphans).len(), 2);
    }
}
