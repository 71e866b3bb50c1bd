//! Anthropic messages ↔ Stowage messages.

use super::super::fields::{self, Fields, Path, Result};
use super::super::parts::plain_text;
use super::super::pure::{Out, describe};
use super::super::raw::Node;
use super::super::residue::{Markers, Residue, extra_with};
use super::FORMAT;
use super::blocks::{block, read_block};
use crate::model::{NewMessage, Part, Role, StopReason, Usage};

/// `content` is a string for one plain text block, an array otherwise, unless
/// `$content` says another shape the parts allow.
pub fn content_shape(marker: Option<&str>, parts: &[&Part]) -> &'static str {
    let single = single_text(parts).is_some();
    match (marker, parts.is_empty()) {
        (Some("string"), _) if single => "string",
        (Some("array"), _) => "array",
        (Some("null"), true) => "null",
        (Some("absent"), true) => "absent",
        _ if single => "string",
        _ => "array",
    }
}

/// The text of exactly one plain text part.
pub fn single_text<'a>(parts: &[&'a Part]) -> Option<&'a str> {
    match parts {
        [one] => plain_text(one, FORMAT),
        _ => None,
    }
}

/// The blocks of a message's parts, residues applied, and the parts they
/// came from.
pub fn blocks_of<'a>(message: &'a NewMessage, out: &mut Out) -> (Vec<Node<'a>>, Vec<&'a Part>) {
    let (mut blocks, mut rendered) = (Vec::new(), Vec::new());
    for part in &message.parts {
        if out.pure() && matches!(part, Part::Thinking { signature: None, redacted: false, .. }) {
            out.drop("thinking without an Anthropic signature");
            continue;
        }
        let mut lossy = false;
        match block(part, &mut lossy) {
            Some(node) => {
                if lossy {
                    out.drop("tool call arguments that are not a JSON object (sent as {})");
                }
                blocks.push(Residue::stored(part.extra(), FORMAT).apply(node));
                rendered.push(part);
            }
            None => out.drop(format!("{} (no Messages API form)", describe(part))),
        }
    }
    (blocks, rendered)
}

/// The message a Stowage message derives, before its own residue.
pub fn message_node<'a>(message: &'a NewMessage, markers: &Markers<'_>, out: &mut Out) -> Node<'a> {
    let role = if message.role == Role::Assistant { "assistant" } else { "user" };
    let mut members = vec![("role", Node::string(role))];
    let (blocks, rendered) = blocks_of(message, out);
    match (content_shape(markers.str("$content").as_deref(), &rendered), single_text(&rendered)) {
        ("string", Some(text)) => members.push(("content", Node::string(text))),
        ("null", _) => members.push(("content", Node::null())),
        ("absent", _) => {}
        _ => members.push(("content", Node::array(blocks))),
    }
    if let Some(reason) = &message.stop_reason {
        members.push(("stop_reason", Node::string(&String::from(reason.clone()))));
    }
    if let Some(usage) = &message.usage {
        let mut counts = vec![
            ("input_tokens", Node::number(usage.input_tokens)),
            ("output_tokens", Node::number(usage.output_tokens)),
        ];
        if usage.cached_tokens > 0 {
            counts.push(("cache_read_input_tokens", Node::number(usage.cached_tokens)));
        }
        members.push(("usage", Node::object(counts)));
    }
    Node::object(members)
}

/// The native message of a Stowage message.
pub fn unit<'a>(message: &'a NewMessage, out: &mut Out) -> Node<'a> {
    let residue = Residue::stored(message.extra.as_ref(), FORMAT);
    let node = residue.apply(message_node(message, &residue.markers, out));
    if !out.pure() {
        return node;
    }
    let Node::Object(mut object) = node else { return node };
    for removed in object.retain(|key, _| key == "role" || key == "content") {
        out.drop(format!("`{removed}` member (not a request field)"));
    }
    object.into_node()
}

/// One Stowage message from a group (one message, or several joined by
/// `"continues": true`).
pub fn parse_group(group: &[(Node<'_>, Path)]) -> Result<NewMessage> {
    let mut message: Option<NewMessage> = None;
    for (unit, path) in group {
        let next = parse_unit(unit, path)?;
        match &mut message {
            None => message = Some(next),
            Some(first) => first.parts.extend(next.parts),
        }
    }
    message.ok_or_else(|| Path::root().error("an empty group of messages"))
}

fn parse_unit(unit: &Node<'_>, path: &Path) -> Result<NewMessage> {
    let f = Fields::of(unit, path)?;
    let role = f.str("role")?;
    let (parts, shape): (Vec<Part>, &str) = match f.get("content") {
        None => (Vec::new(), "absent"),
        Some(content) if content.is_null() => (Vec::new(), "null"),
        Some(content) if content.as_str().is_some() => {
            (vec![Part::text(fields::string(content, &f.at("content"))?)], "string")
        }
        Some(content) => match content.as_array() {
            Some(items) => {
                let at = f.at("content");
                let parts =
                    items.iter().enumerate().map(|(i, b)| read_block(b, &at.index(i))).collect::<Result<_>>()?;
                (parts, "array")
            }
            None => return f.at("content").fail("expected a string or an array of blocks"),
        },
    };
    let role = match role.as_ref() {
        "assistant" => Role::Assistant,
        "user"
            if shape == "array" && !parts.is_empty() && parts.iter().all(|p| matches!(p, Part::ToolResult { .. })) =>
        {
            Role::Tool
        }
        "user" => Role::User,
        "system" => Role::System,
        other => return f.at("role").fail(format!("unsupported role `{other}` (user or assistant)")),
    };
    let mut message = NewMessage::new(role, parts);
    message.stop_reason = f.opt_str("stop_reason")?.map(|s| StopReason::from(s.into_owned()));
    if let Some(usage) = f.given("usage") {
        let at = f.at("usage");
        let u = Fields::of(usage, &at)?;
        message.usage = Some(Usage {
            input_tokens: u.count("input_tokens")?,
            output_tokens: u.count("output_tokens")?,
            cached_tokens: u.count("cache_read_input_tokens")?,
            cost: None,
        });
    }
    let mut markers = Markers::new();
    if shape != content_shape(None, &message.parts.iter().collect::<Vec<_>>()) {
        markers.set_str("$content", shape);
    }
    let derived = message_node(&message, &markers, &mut Out::new(false)).into_owned();
    message.extra = extra_with(FORMAT, &Residue::compute(markers, &derived, unit));
    Ok(message)
}
