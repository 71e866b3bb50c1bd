//! Responses input items → Stowage messages, each item with its residue.

use super::super::fields::{self, Fields, Path, Result};
use super::super::parts::{add_marker, finish, provider};
use super::super::raw::Node;
use super::super::residue::{Markers, Residue, extra_with};
use super::content::{is_content, read_content};
use super::render::{message_item, output_item, reasoning_item, shape, tool_call_item};
use super::{FORMAT, Side, side};
use crate::model::{NewMessage, Part, Role};

/// One Stowage message from a group of items (see `super::joins`).
pub fn parse_group(group: &[(Node<'_>, Path)]) -> Result<NewMessage> {
    let role = match group.first().map(|(item, _)| side(item)) {
        Some(Side::Own(role)) => role,
        Some(Side::Tool) => Role::Tool,
        _ => Role::Assistant,
    };
    let mut message = NewMessage::new(role, Vec::new());
    for (i, (item, path)) in group.iter().enumerate() {
        identifiable(item, path)?;
        match side(item) {
            Side::Own(role) => {
                let own = own_message(item, path, role)?;
                if i == 0 {
                    message = own;
                } else {
                    message.parts.extend(own.parts);
                }
            }
            _ => parse_item(item, path, &mut message.parts)?,
        }
    }
    Ok(message)
}

fn identifiable(item: &Node<'_>, path: &Path) -> Result<()> {
    let Some(object) = item.as_object() else {
        return path.fail(format!("expected an object, got {}", item.kind()));
    };
    if ["type", "role", "id"].iter().any(|k| object.contains(k)) {
        Ok(())
    } else {
        path.fail("an item with neither type, role nor id")
    }
}

/// A user, system or developer item: a message of that role.
fn own_message(item: &Node<'_>, path: &Path, role: Role) -> Result<NewMessage> {
    let f = Fields::of(item, path)?;
    let opaque = || Ok(NewMessage::new(role, vec![provider(FORMAT, item, path, Markers::new())?]));
    if f.opt_str("type")?.is_some_and(|t| t != "message") {
        return opaque();
    }
    let Some((parts, source_shape)) = content(&f, false)? else { return opaque() };
    let refs: Vec<&Part> = parts.iter().collect();
    let mut markers = Markers::new();
    if source_shape != shape(None, &refs) {
        markers.set_str("$content", source_shape);
    }
    let derived = message_item(role.as_str(), &refs, &markers, false).into_owned();
    let residue = Residue::compute(markers, &derived, item);
    let mut message = NewMessage::new(role, parts);
    message.extra = extra_with(FORMAT, &residue);
    Ok(message)
}

/// The parts of a message item's `content` and its shape; `None` when the item
/// is kept whole (no content, or an empty array).
fn content(f: &Fields<'_, '_>, assistant: bool) -> Result<Option<(Vec<Part>, &'static str)>> {
    let Some(content) = f.given("content") else { return Ok(None) };
    if content.as_str().is_some() {
        return Ok(Some((vec![Part::text(fields::string(content, &f.at("content"))?)], "string")));
    }
    let Some(items) = content.as_array() else {
        return f.at("content").fail("expected a string or an array of content parts");
    };
    if items.is_empty() {
        return Ok(None);
    }
    let at = f.at("content");
    let parts =
        items.iter().enumerate().map(|(i, c)| read_content(c, &at.index(i), assistant)).collect::<Result<_>>()?;
    Ok(Some((parts, "array")))
}

fn parse_item(item: &Node<'_>, path: &Path, parts: &mut Vec<Part>) -> Result<()> {
    let object = item.as_object();
    let role = object.and_then(|o| o.get("role"));
    let kind = fields::type_of(item);
    if let Some(role) = role {
        let role = fields::string(role, &path.key("role"))?;
        if role != "assistant" {
            return path.key("role").fail(format!("unsupported role `{role}` (user, system, developer or assistant)"));
        }
    }
    if role.is_some() || kind.as_deref() == Some("message") {
        return assistant_message(item, path, parts);
    }
    let mut markers = Markers::new();
    let part = match kind.as_deref() {
        Some("reasoning") => {
            let f = Fields::of(item, path)?;
            let text = match f.given("summary") {
                None => String::new(),
                Some(summary) => summary_text(fields::array(summary, &f.at("summary"))?),
            };
            Part::thinking(text, None)
        }
        Some("function_call") => {
            let f = Fields::of(item, path)?;
            Part::tool_call(f.str("call_id")?, f.str("name")?, f.str("arguments")?)
        }
        Some("custom_tool_call") => {
            let f = Fields::of(item, path)?;
            markers.set("$custom", Node::bool(true));
            Part::tool_call(f.str("call_id")?, f.str("name")?, f.str("input")?)
        }
        Some(output @ ("function_call_output" | "custom_tool_call_output")) => {
            let f = Fields::of(item, path)?;
            if output == "custom_tool_call_output" {
                markers.set("$custom", Node::bool(true));
            }
            let content = match f.member("output")? {
                value if value.as_str().is_some() => fields::string(value, &f.at("output"))?.into_owned(),
                value => match value.as_array() {
                    Some(items) => output_text(items),
                    None => return f.at("output").fail("expected a string or an array of content parts"),
                },
            };
            Part::tool_result(f.str("call_id")?, content, false)
        }
        _ => {
            parts.push(provider(FORMAT, item, path, Markers::new())?);
            return Ok(());
        }
    };
    let derived = match &part {
        Part::Thinking { .. } => reasoning_item(&part),
        Part::ToolCall { .. } => tool_call_item(&part, &markers),
        _ => output_item(&part, &markers),
    }
    .map(Node::into_owned);
    parts.push(finish(FORMAT, part, markers, derived, item, path)?);
    Ok(())
}

/// An assistant message item: its content parts, the first one carrying the
/// item's own residue (`$item`), which also marks where the item starts.
fn assistant_message(item: &Node<'_>, path: &Path, parts: &mut Vec<Part>) -> Result<()> {
    let f = Fields::of(item, path)?;
    let Some((mut content, source_shape)) = content(&f, true)? else {
        parts.push(provider(FORMAT, item, path, Markers::new())?);
        return Ok(());
    };
    let refs: Vec<&Part> = content.iter().collect();
    let mut markers = Markers::new();
    if source_shape != shape(None, &refs) {
        markers.set_str("$content", source_shape);
    }
    let derived = message_item("assistant", &refs, &markers, true).into_owned();
    let residue = Residue::compute(markers, &derived, item);
    let boundary = parts.last().is_some_and(is_content);
    if let Some(first) = content.first_mut() {
        match residue.to_node() {
            Some(node) => add_marker(first, FORMAT, "$item", node),
            None if boundary => add_marker(first, FORMAT, "$item", Node::object(vec![])),
            None => {}
        }
    }
    parts.extend(content);
    Ok(())
}

/// Reasoning summaries as one text: the entries' texts joined by a blank line.
fn summary_text(entries: &[Node<'_>]) -> String {
    let texts: Vec<String> =
        entries.iter().filter_map(|e| e.as_object()?.get("text")?.as_str()?.ok().map(|t| t.into_owned())).collect();
    texts.join("\n\n")
}

/// The concatenated text of an output list's text parts.
fn output_text(items: &[Node<'_>]) -> String {
    items
        .iter()
        .filter(|i| matches!(fields::type_of(i).as_deref(), Some("input_text" | "output_text")))
        .filter_map(|i| i.as_object()?.get("text")?.as_str()?.ok())
        .collect()
}
