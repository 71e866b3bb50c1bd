//! Chat Completions messages → Stowage messages, each unit with its residue.

use super::super::fields::{self, Fields, Path, Result};
use super::super::media;
use super::super::parts::{finish, provider};
use super::super::pure::Out;
use super::super::raw::Node;
use super::super::residue::{Markers, Residue, extra_with};
use super::{FORMAT, render};
use crate::model::{NewMessage, Part, Role};

/// One Stowage message from a group of native messages (consecutive `tool`
/// and `function` messages form one tool message).
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
    let role = match f.str("role")?.as_ref() {
        "system" => Role::System,
        "developer" => Role::Developer,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => return Ok(NewMessage::new(Role::Tool, vec![tool_result(&f, unit)?])),
        "function" => {
            let mut markers = Markers::new();
            markers.set_str("$in", "message");
            return Ok(NewMessage::new(Role::Tool, vec![provider(FORMAT, unit, path, markers)?]));
        }
        other => {
            return f
                .at("role")
                .fail(format!("unsupported role `{other}` (system, developer, user, assistant, tool or function)"));
        }
    };
    let assistant = role == Role::Assistant;
    let (mut parts, shape) = content(&f)?;
    let count = parts.len();
    let single_plain = count == 1 && super::super::parts::plain_text(&parts[0], FORMAT).is_some();
    if assistant {
        if let Some(refusal) = f.opt_str("refusal")? {
            let mut markers = Markers::new();
            markers.set_str("$refusal", "field");
            let residue = Residue { markers, patch: None };
            parts.push(Part::Text { text: refusal.into_owned(), extra: extra_with(FORMAT, &residue) });
        }
        if let Some(calls) = f.given("tool_calls") {
            let at = f.at("tool_calls");
            for (i, call) in fields::array(calls, &at)?.iter().enumerate() {
                parts.push(tool_call(call, &at.index(i))?);
            }
        }
    }
    let mut markers = Markers::new();
    if shape != render::content_shape(None, count, single_plain, assistant) {
        markers.set_str("$content", shape);
    }
    let mut message = NewMessage::new(role, parts);
    let derived = render::message_node(&message, &markers, &mut Out::new(false)).into_owned();
    message.extra = extra_with(FORMAT, &Residue::compute(markers, &derived, unit));
    Ok(message)
}

/// The content parts and the shape `content` had.
fn content(f: &Fields<'_, '_>) -> Result<(Vec<Part>, &'static str)> {
    let Some(content) = f.get("content") else { return Ok((Vec::new(), "absent")) };
    if content.is_null() {
        return Ok((Vec::new(), "null"));
    }
    if content.as_str().is_some() {
        return Ok((vec![Part::text(fields::string(content, &f.at("content"))?)], "string"));
    }
    let Some(items) = content.as_array() else {
        return f.at("content").fail("expected a string, an array of parts, or null");
    };
    let at = f.at("content");
    let parts = items.iter().enumerate().map(|(i, item)| content_part(item, &at.index(i))).collect::<Result<_>>()?;
    Ok((parts, "array"))
}

fn content_part(item: &Node<'_>, path: &Path) -> Result<Part> {
    let kind = fields::part_type(item, path)?;
    let mut markers = Markers::new();
    let part = match kind.as_ref() {
        "text" => Part::text(Fields::of(item, path)?.str("text")?),
        "refusal" => {
            markers.set_str("$refusal", "part");
            Part::text(Fields::of(item, path)?.str("refusal")?)
        }
        "image_url" => {
            let f = Fields::of(item, path)?;
            let at = f.at("image_url");
            let image = Fields::of(f.member("image_url")?, &at)?;
            let url = image.str("url")?;
            let (mime, source) = media::source_from_url(&url, "image/*").map_err(|e| image.at("url").error(e))?;
            Part::media(mime, source, None)
        }
        "input_audio" => {
            let f = Fields::of(item, path)?;
            let at = f.at("input_audio");
            let audio = Fields::of(f.member("input_audio")?, &at)?;
            let (data, format) = (audio.str("data")?, audio.str("format")?);
            let Some(mime) = media::audio_mime(&format) else { return provider(FORMAT, item, path, markers) };
            let source = media::source_from_base64(mime, &data).map_err(|e| audio.at("data").error(e))?;
            Part::media(mime, source, None)
        }
        "file" => {
            let f = Fields::of(item, path)?;
            let Some(file) = f.get("file").filter(|n| n.as_object().is_some()) else {
                return provider(FORMAT, item, path, markers);
            };
            let at = f.at("file");
            let file = Fields::of(file, &at)?;
            let data = file.opt_str("file_data")?;
            let Some((mime, payload)) = data.as_deref().and_then(media::split_data_url) else {
                return provider(FORMAT, item, path, markers);
            };
            let source = media::source_from_base64(mime, payload).map_err(|e| file.at("file_data").error(e))?;
            Part::media(mime, source, file.opt_str("filename")?.map(|n| n.into_owned()))
        }
        _ => return provider(FORMAT, item, path, markers),
    };
    let derived = render::content_part(&part, &markers).map(Node::into_owned);
    finish(FORMAT, part, markers, derived, item, path)
}

fn tool_call(call: &Node<'_>, path: &Path) -> Result<Part> {
    let f = Fields::of(call, path)?;
    let kind = f.opt_str("type")?;
    let mut markers = Markers::new();
    let part = match kind.as_deref() {
        Some("function") | None if f.get("function").is_some() => {
            let at = f.at("function");
            let function = Fields::of(f.member("function")?, &at)?;
            Part::tool_call(f.str("id")?, function.str("name")?, function.str("arguments")?)
        }
        Some("function") => return f.at("function").fail("missing"),
        Some("custom") => {
            let at = f.at("custom");
            let custom = Fields::of(f.member("custom")?, &at)?;
            markers.set("$custom", Node::bool(true));
            Part::tool_call(f.str("id")?, custom.str("name")?, custom.str("input")?)
        }
        _ => {
            markers.set_str("$in", "tool_calls");
            return provider(FORMAT, call, path, markers);
        }
    };
    let derived = render::tool_call(&part, &markers).map(Node::into_owned);
    finish(FORMAT, part, markers, derived, call, path)
}

fn tool_result(f: &Fields<'_, '_>, unit: &Node<'_>) -> Result<Part> {
    let call_id = f.str("tool_call_id")?;
    let content = match f.given("content") {
        None => String::new(),
        Some(content) if content.as_str().is_some() => fields::string(content, &f.at("content"))?.into_owned(),
        Some(content) => match content.as_array() {
            Some(items) => fields::text_of(items),
            None => return f.at("content").fail("expected a string, an array of parts, or null"),
        },
    };
    let part = Part::tool_result(call_id, content, false);
    let derived = render::tool_message(&part);
    finish(FORMAT, part, Markers::new(), derived, unit, f.path)
}
