//! Responses derivations: Stowage messages → input items.

use super::super::parts::{own_provider, value_node};
use super::super::pure::{Out, describe};
use super::super::raw::Node;
use super::super::residue::{Markers, Residue};
use super::FORMAT;
use super::content::{content_part, is_content, plain};
use crate::model::{NewMessage, Part, Role};

/// `content` is a string for one plain text, an array otherwise, unless
/// `$content` asks for an array.
pub fn shape(marker: Option<&str>, parts: &[&Part]) -> &'static str {
    let single = matches!(parts, [one] if plain(one).is_some());
    match marker {
        Some("array") => "array",
        _ if single => "string",
        _ => "array",
    }
}

/// A message item holding `parts` (content parts, residues applied).
pub fn message_item<'a>(role: &str, parts: &[&'a Part], markers: &Markers<'_>, assistant: bool) -> Node<'a> {
    let content = match (shape(markers.str("$content").as_deref(), parts), parts) {
        ("string", [one]) => Node::string(plain(one).unwrap_or_default()),
        _ => Node::array(
            parts
                .iter()
                .filter_map(|part| {
                    let residue = Residue::stored(part.extra(), FORMAT);
                    content_part(part, &residue.markers, assistant).map(|node| residue.apply(node))
                })
                .collect(),
        ),
    };
    Node::object(vec![("role", Node::string(role)), ("content", content)])
}

pub fn reasoning_item(part: &Part) -> Option<Node<'static>> {
    let Part::Thinking { text, .. } = part else { return None };
    let summary = if text.is_empty() {
        Vec::new()
    } else {
        vec![Node::object(vec![("type", Node::string("summary_text")), ("text", Node::string(text))])]
    };
    Some(Node::object(vec![("type", Node::string("reasoning")), ("summary", Node::array(summary))]))
}

pub fn tool_call_item(part: &Part, markers: &Markers<'_>) -> Option<Node<'static>> {
    let Part::ToolCall { id, name, arguments, .. } = part else { return None };
    let (kind, key) =
        if markers.flag("$custom") { ("custom_tool_call", "input") } else { ("function_call", "arguments") };
    Some(Node::object(vec![
        ("type", Node::string(kind)),
        ("call_id", Node::string(id)),
        ("name", Node::string(name)),
        (key, Node::string(arguments)),
    ]))
}

pub fn output_item(part: &Part, markers: &Markers<'_>) -> Option<Node<'static>> {
    let Part::ToolResult { call_id, content, .. } = part else { return None };
    let kind = if markers.flag("$custom") { "custom_tool_call_output" } else { "function_call_output" };
    Some(Node::object(vec![
        ("type", Node::string(kind)),
        ("call_id", Node::string(call_id)),
        ("output", Node::string(content)),
    ]))
}

/// A whole-item provider part of this format.
fn own_item(part: &Part) -> Option<Node<'_>> {
    let (value, residue) = own_provider(part, FORMAT)?;
    matches!(residue.markers.str("$in").as_deref(), None | Some("item")).then(|| value_node(value))
}

/// The items of one Stowage message.
pub fn items<'a>(message: &'a NewMessage, out: &mut Out) -> Vec<Node<'a>> {
    match message.role {
        Role::Assistant => assistant_items(message, out),
        Role::Tool => tool_items(message, out),
        role => {
            if let [single] = message.parts.as_slice()
                && let Some(item) = own_item(single)
            {
                return vec![item];
            }
            let mut content = Vec::new();
            for part in &message.parts {
                if is_content(part) {
                    content.push(part);
                } else {
                    out.drop(format!("{} in a {} message (no Responses form)", describe(part), role.as_str()));
                }
            }
            let residue = Residue::stored(message.extra.as_ref(), FORMAT);
            vec![residue.apply(message_item(role.as_str(), &content, &residue.markers, false))]
        }
    }
}

fn assistant_items<'a>(message: &'a NewMessage, out: &mut Out) -> Vec<Node<'a>> {
    let mut items = Vec::new();
    let mut current: Vec<&'a Part> = Vec::new();
    let mut item_residue = Residue::default();
    let flush = |current: &mut Vec<&'a Part>, residue: &Residue<'static>, items: &mut Vec<Node<'a>>| {
        if !current.is_empty() {
            items.push(residue.clone().apply(message_item("assistant", current, &residue.markers, true)));
            current.clear();
        }
    };
    for part in &message.parts {
        let residue = Residue::stored(part.extra(), FORMAT);
        if is_content(part) {
            if let Some(item) = residue.markers.get("$item") {
                flush(&mut current, &item_residue, &mut items);
                item_residue = Residue::from_node(item).into_owned();
            }
            current.push(part);
            continue;
        }
        flush(&mut current, &item_residue, &mut items);
        item_residue = Residue::default();
        let derived = match part {
            Part::Thinking { .. } => {
                if out.pure() && !residue.patch.as_ref().and_then(Node::as_object).is_some_and(|p| p.contains("id")) {
                    out.drop("thinking without an OpenAI reasoning item id");
                    continue;
                }
                reasoning_item(part)
            }
            Part::ToolCall { .. } => tool_call_item(part, &residue.markers),
            Part::Provider { .. } => own_item(part),
            _ => None,
        };
        match derived {
            Some(node) if matches!(part, Part::Provider { .. }) => items.push(node),
            Some(node) => items.push(residue.apply(node)),
            None => out.drop(format!("{} in an assistant message (no Responses form)", describe(part))),
        }
    }
    flush(&mut current, &item_residue, &mut items);
    items
}

fn tool_items<'a>(message: &'a NewMessage, out: &mut Out) -> Vec<Node<'a>> {
    let mut items = Vec::new();
    for part in &message.parts {
        let residue = Residue::stored(part.extra(), FORMAT);
        if let Part::ToolResult { is_error: true, .. } = part {
            out.drop("tool error flag (no Responses form)");
        }
        match (output_item(part, &residue.markers), own_item(part)) {
            (Some(node), _) => items.push(residue.apply(node)),
            (None, Some(item)) => items.push(item),
            _ => out.drop(format!("{} in a tool message (no Responses form)", describe(part))),
        }
    }
    items
}
