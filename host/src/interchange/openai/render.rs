//! Chat Completions derivations: Stowage parts and messages → native messages.
//!
//! Each function here is also what import diffs against, so a part's or a
//! message's residue is always relative to exactly this output.

use super::super::media;
use super::super::parts::{own_provider, plain_text, value_node};
use super::super::pure::{Out, describe};
use super::super::raw::Node;
use super::super::residue::{Markers, Residue};
use super::FORMAT;
use crate::model::{MediaSource, NewMessage, Part, Role};

/// Members each role's request type accepts (openai-python `chat_completion_*_message_param.py`).
fn allowed(role: &str) -> &'static [&'static str] {
    match role {
        "system" | "developer" | "user" | "function" => &["role", "content", "name"],
        "assistant" => &["role", "content", "name", "refusal", "tool_calls", "function_call", "audio"],
        "tool" => &["role", "content", "tool_call_id"],
        _ => &[],
    }
}

/// A content part (`None`: no Chat Completions form).
pub fn content_part<'a>(part: &'a Part, markers: &Markers<'_>) -> Option<Node<'a>> {
    match part {
        Part::Text { text, .. } if markers.str("$refusal").as_deref() == Some("part") => {
            Some(Node::object(vec![("type", Node::string("refusal")), ("refusal", Node::string(text))]))
        }
        Part::Text { text, .. } => {
            Some(Node::object(vec![("type", Node::string("text")), ("text", Node::string(text))]))
        }
        Part::Media { mime_type, source, name, .. } => media_part(mime_type, source, name.as_deref()),
        Part::Provider { .. } => own_provider(part, FORMAT).map(|(value, _)| value_node(value)),
        _ => None,
    }
}

fn media_part<'a>(mime: &str, source: &MediaSource, name: Option<&str>) -> Option<Node<'a>> {
    if mime.starts_with("image/") {
        let url = Node::object(vec![("url", Node::string(&media::url_of(mime, source)))]);
        return Some(Node::object(vec![("type", Node::string("image_url")), ("image_url", url)]));
    }
    let (data_mime, data) = media::base64_of(mime, source)?;
    if let Some(format) = media::audio_format(mime) {
        let audio = Node::object(vec![("data", Node::string(&data)), ("format", Node::string(format))]);
        return Some(Node::object(vec![("type", Node::string("input_audio")), ("input_audio", audio)]));
    }
    let mut file = vec![("file_data", Node::string(&media::data_url(&data_mime, &data)))];
    if let Some(name) = name {
        file.push(("filename", Node::string(name)));
    }
    Some(Node::object(vec![("type", Node::string("file")), ("file", Node::object(file))]))
}

/// A `tool_calls` entry.
pub fn tool_call<'a>(part: &'a Part, markers: &Markers<'_>) -> Option<Node<'a>> {
    let Part::ToolCall { id, name, arguments, .. } = part else { return None };
    Some(if markers.flag("$custom") {
        let custom = Node::object(vec![("name", Node::string(name)), ("input", Node::string(arguments))]);
        Node::object(vec![("id", Node::string(id)), ("type", Node::string("custom")), ("custom", custom)])
    } else {
        let function = Node::object(vec![("name", Node::string(name)), ("arguments", Node::string(arguments))]);
        Node::object(vec![("id", Node::string(id)), ("type", Node::string("function")), ("function", function)])
    })
}

/// A `tool` message for one result.
pub fn tool_message(part: &Part) -> Option<Node<'static>> {
    let Part::ToolResult { call_id, content, .. } = part else { return None };
    Some(Node::object(vec![
        ("role", Node::string("tool")),
        ("tool_call_id", Node::string(call_id)),
        ("content", Node::string(content)),
    ]))
}

/// The shape `content` takes by default, or as `$content` says.
pub fn content_shape(marker: Option<&str>, count: usize, single_plain: bool, assistant: bool) -> &'static str {
    let default = match (count, single_plain) {
        (0, _) if assistant => "null",
        (0, _) => "array",
        (1, true) => "string",
        _ => "array",
    };
    match marker {
        Some("string") if single_plain && count == 1 => "string",
        Some("array") => "array",
        Some("null") if count == 0 => "null",
        Some("absent") if count == 0 => "absent",
        _ => default,
    }
}

/// One non-tool message, derived from its parts (with their residues applied)
/// and the layout `markers`.
pub fn message_node<'a>(message: &'a NewMessage, markers: &Markers<'_>, out: &mut Out) -> Node<'a> {
    let assistant = message.role == Role::Assistant;
    let (mut content, mut single_plain, mut refusal, mut calls) = (Vec::new(), None, None, Vec::new());
    for part in &message.parts {
        let residue = Residue::stored(part.extra(), FORMAT);
        let refusal_marker = residue.markers.str("$refusal");
        match part {
            Part::Text { text, .. } if assistant && refusal_marker.as_deref() == Some("field") && refusal.is_none() => {
                refusal = Some(Node::string(text));
            }
            Part::ToolCall { .. } if assistant => {
                if let Some(call) = tool_call(part, &residue.markers) {
                    calls.push(residue.apply(call));
                }
            }
            Part::Provider { .. } if own_provider(part, FORMAT).is_some() => {
                match residue.markers.str("$in").as_deref() {
                    Some("tool_calls") if assistant => calls.push(own_value(part)),
                    None | Some("content") => content.push(own_value(part)),
                    _ => out.drop(describe(part)),
                }
            }
            Part::Text { .. } | Part::Media { .. } => match content_part(part, &residue.markers) {
                Some(node) => {
                    single_plain = plain_text(part, FORMAT);
                    content.push(residue.apply(node));
                }
                None => out.drop(format!("{} (no Chat Completions form)", describe(part))),
            },
            _ => out.drop(format!("{} (no Chat Completions form)", describe(part))),
        }
    }
    let shape = content_shape(markers.str("$content").as_deref(), content.len(), single_plain.is_some(), assistant);
    let mut members = vec![("role", Node::string(message.role.as_str()))];
    match (shape, single_plain) {
        ("string", Some(text)) => members.push(("content", Node::string(text))),
        ("null", _) => members.push(("content", Node::null())),
        ("absent", _) => {}
        _ => members.push(("content", Node::array(content))),
    }
    if let Some(refusal) = refusal {
        members.push(("refusal", refusal));
    }
    if !calls.is_empty() {
        members.push(("tool_calls", Node::array(calls)));
    }
    Node::object(members)
}

fn own_value(part: &Part) -> Node<'_> {
    own_provider(part, FORMAT).map(|(value, _)| value_node(value)).unwrap_or(Node::null())
}

/// The native messages of one Stowage message (several for a tool message).
pub fn units<'a>(message: &'a NewMessage, out: &mut Out) -> Vec<Node<'a>> {
    let mut units = Vec::new();
    if message.role == Role::Tool {
        for part in &message.parts {
            let residue = Residue::stored(part.extra(), FORMAT);
            match (tool_message(part), own_provider(part, FORMAT)) {
                (Some(node), _) => units.push(residue.apply(node)),
                (None, Some(_)) if residue.markers.str("$in").as_deref() == Some("message") => {
                    units.push(own_value(part))
                }
                _ => out.drop(format!("{} in a tool message (no Chat Completions form)", describe(part))),
            }
        }
    } else {
        let residue = Residue::stored(message.extra.as_ref(), FORMAT);
        units.push(residue.apply(message_node(message, &residue.markers, out)));
    }
    if out.pure() {
        units = units.into_iter().map(|unit| pure_unit(unit, out)).collect();
    }
    units
}

/// Only the members the role's request type accepts.
fn pure_unit<'a>(unit: Node<'a>, out: &mut Out) -> Node<'a> {
    let Node::Object(mut object) = unit else { return unit };
    let role = object.get("role").and_then(Node::as_str).and_then(std::result::Result::ok).map(|r| r.into_owned());
    let keys = allowed(role.as_deref().unwrap_or(""));
    for removed in object.retain(|key, _| keys.contains(&key)) {
        out.drop(format!("`{removed}` member (not a request field)"));
    }
    let empty_calls =
        object.get("tool_calls").is_some_and(|c| c.is_null() || c.as_array().is_some_and(<[_]>::is_empty));
    if empty_calls {
        object.remove("tool_calls");
    }
    let audio_id = object.get("audio").and_then(Node::as_object).filter(|a| a.len() > 1).map(|a| a.get("id").cloned());
    if let Some(id) = audio_id {
        let reduced = match id {
            Some(id) => Node::object(vec![("id", id)]),
            None => Node::object(vec![]),
        };
        out.drop("`audio` response fields");
        object.set("audio", reduced);
    }
    object.into_node()
}
