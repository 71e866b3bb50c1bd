//! One UIMessage ↔ a group of Stowage messages.
//!
//! A system or user UIMessage is one message. An assistant UIMessage is split at
//! its `step-start` parts: each step is an Assistant message followed, when
//! client-executed tool parts of the step have an output, by a Tool message
//! with those results in part order. The first message takes the UIMessage's
//! `id` and `metadata`; the k-th later one gets the id `<id>~<k>`.

use std::collections::HashSet;

use super::super::fields::{Fields, Path, Result};
use super::super::parts::json_text;
use super::super::pure::{Out, describe};
use super::super::raw::Node;
use super::super::residue::{Markers, Residue, extra_with};
use super::FORMAT;
use super::parts::{Read, derive, read, tool};
use crate::model::{NewMessage, Part, Role};

/// The id of the `k`-th Stowage message of UIMessage `id`.
pub fn later_id(id: &str, k: usize) -> String {
    format!("{id}~{k}")
}

/// Whether a Stowage message belongs in an assistant UIMessage.
pub fn assistant_side(role: Role) -> bool {
    matches!(role, Role::Assistant | Role::Tool)
}

/// The UIMessage of a group (`id` for its first message), derived from the
/// parts with their residues; `markers` are the first message's.
pub fn ui_node<'a>(group: &'a [NewMessage], id: &str, markers: &Markers<'_>, out: &mut Out) -> Node<'a> {
    let role = match group.first().map(|m| m.role) {
        Some(Role::System | Role::Developer) => "system",
        Some(Role::User) => "user",
        _ => "assistant",
    };
    let mut parts = Vec::new();
    if role == "assistant" {
        let calls: HashSet<&str> = group
            .iter()
            .flat_map(|m| &m.parts)
            .filter_map(|p| match p {
                Part::ToolCall { id, .. } => Some(id.as_str()),
                _ => None,
            })
            .collect();
        let results: Vec<&Part> = group.iter().filter(|m| m.role == Role::Tool).flat_map(|m| &m.parts).collect();
        for (k, message) in group.iter().enumerate() {
            if message.role == Role::Tool {
                for part in &message.parts {
                    match part {
                        Part::ToolResult { call_id, .. } if calls.contains(call_id.as_str()) => {}
                        Part::ToolResult { .. } => out.drop("tool result without its call in the UIMessage"),
                        _ => out.drop(format!("{} in a tool message (no UIMessage form)", describe(part))),
                    }
                }
                continue;
            }
            if !(k == 0 && markers.get("$step_start").and_then(Node::as_bool) == Some(false)) {
                parts.push(Node::object(vec![("type", Node::string("step-start"))]));
            }
            for part in &message.parts {
                let result = match part {
                    Part::ToolCall { id, .. } => {
                        results.iter().copied().find(|r| matches!(r, Part::ToolResult { call_id, .. } if call_id == id))
                    }
                    _ => None,
                };
                push_part(&mut parts, part, result, out);
            }
        }
    } else {
        for message in group {
            for part in &message.parts {
                push_part(&mut parts, part, None, out);
            }
        }
    }
    let mut members = vec![("id", Node::string(id)), ("role", Node::string(role))];
    if let Some(metadata) = group.first().and_then(|m| m.metadata.as_ref()) {
        members.push(("metadata", Node::parse(metadata.as_str()).unwrap_or(Node::null())));
    }
    members.push(("parts", Node::array(parts)));
    Node::object(members)
}

fn push_part<'a>(parts: &mut Vec<Node<'a>>, part: &'a Part, result: Option<&'a Part>, out: &mut Out) {
    let residue = Residue::stored(part.extra(), FORMAT);
    let derived = match part {
        Part::ToolCall { .. } => tool(part, result),
        _ => derive(part),
    };
    match derived {
        Some(node) => parts.push(residue.apply(node)),
        None => out.drop(format!("{} (no UIMessage form)", describe(part))),
    }
}

/// The Stowage messages of one UIMessage; `after_assistant` when the UIMessage
/// before it is an assistant one (this one then starts anew: `$new`).
pub fn parse(item: &Node<'_>, path: &Path, after_assistant: bool) -> Result<Vec<NewMessage>> {
    let f = Fields::of(item, path)?;
    let id = f.str("id")?.into_owned();
    let role = match f.str("role")?.as_ref() {
        "system" => Role::System,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        other => return f.at("role").fail(format!("unsupported role `{other}` (system, user or assistant)")),
    };
    let items = f.array("parts")?;
    let metadata = f.get("metadata").map(|m| json_text(m, &f.at("metadata"))).transpose()?;
    let assistant = role == Role::Assistant;
    let at = f.at("parts");
    let mut messages = vec![NewMessage::new(role, Vec::new())];
    let mut results = Vec::new();
    let mut markers = Markers::new();
    if assistant && after_assistant {
        markers.set("$new", Node::bool(true));
    }
    let opened = items.first().is_some_and(|p| matches!(read(p, &at.index(0), true), Ok(Read::StepStart)));
    if assistant && !opened {
        markers.set("$step_start", Node::bool(false));
    }
    for (i, item) in items.iter().enumerate() {
        match read(item, &at.index(i), assistant)? {
            Read::StepStart if i == 0 => {}
            Read::StepStart => {
                close_step(&mut messages, &mut results);
                messages.push(NewMessage::new(Role::Assistant, Vec::new()));
            }
            Read::Part(part) => {
                if let Some(step) = messages.last_mut() {
                    step.parts.push(part);
                }
            }
            Read::Tool(call, result) => {
                if let Some(step) = messages.last_mut() {
                    step.parts.push(call);
                }
                results.extend(result);
            }
        }
    }
    close_step(&mut messages, &mut results);
    for (k, message) in messages.iter_mut().enumerate() {
        message.id = Some(if k == 0 { id.clone() } else { later_id(&id, k) });
    }
    if let Some(first) = messages.first_mut() {
        first.metadata = metadata;
    }
    let derived = ui_node(&messages, &id, &markers, &mut Out::new(false)).into_owned();
    let residue = Residue::compute(markers, &derived, item);
    if let Some(first) = messages.first_mut() {
        first.extra = extra_with(FORMAT, &residue);
    }
    Ok(messages)
}

/// Ends a step: its results become a Tool message after it.
fn close_step(messages: &mut Vec<NewMessage>, results: &mut Vec<Part>) {
    if !results.is_empty() {
        messages.push(NewMessage::new(Role::Tool, std::mem::take(results)));
    }
}
