//! Anthropic content blocks ↔ parts.

use super::super::fields::{self, Fields, Path, Result};
use super::super::media;
use super::super::parts::{finish, own_provider, provider, value_node};
use super::super::raw::Node;
use super::super::residue::Markers;
use super::FORMAT;
use crate::model::{MediaSource, Part};

/// The block a part derives (`None`: no Messages API form). `lossy` is set when
/// a tool call's arguments are not a JSON object and `{}` stands in for them.
pub fn block<'a>(part: &'a Part, lossy: &mut bool) -> Option<Node<'a>> {
    let kind = |k: &str| ("type", Node::string(k));
    Some(match part {
        Part::Text { text, .. } => Node::object(vec![kind("text"), ("text", Node::string(text))]),
        Part::Thinking { text, redacted: true, .. } => {
            Node::object(vec![kind("redacted_thinking"), ("data", Node::string(text))])
        }
        Part::Thinking { text, signature, .. } => {
            let mut members = vec![kind("thinking"), ("thinking", Node::string(text))];
            if let Some(signature) = signature {
                members.push(("signature", Node::string(signature)));
            }
            Node::object(members)
        }
        Part::ToolCall { id, name, arguments, .. } => {
            let input = match Node::parse(arguments) {
                Ok(input @ Node::Object(_)) => input,
                _ => {
                    *lossy = true;
                    Node::object(vec![])
                }
            };
            Node::object(vec![
                kind("tool_use"),
                ("id", Node::string(id)),
                ("name", Node::string(name)),
                ("input", input),
            ])
        }
        Part::ToolResult { call_id, content, is_error, .. } => {
            let mut members =
                vec![kind("tool_result"), ("tool_use_id", Node::string(call_id)), ("content", Node::string(content))];
            if *is_error {
                members.push(("is_error", Node::bool(true)));
            }
            Node::object(members)
        }
        Part::Media { mime_type, source, .. } => media_block(mime_type, source)?,
        Part::Provider { .. } => value_node(own_provider(part, FORMAT)?.0),
    })
}

fn media_block(mime: &str, source: &MediaSource) -> Option<Node<'static>> {
    let source_node = |members: Vec<(&str, Node<'static>)>| Node::object(members);
    let (kind, source) = if mime.starts_with("audio/") || mime.starts_with("video/") {
        return None;
    } else if let (true, MediaSource::Inline(bytes)) = (mime == "text/plain", source) {
        let text = std::str::from_utf8(bytes).ok()?;
        let members = vec![
            ("type", Node::string("text")),
            ("media_type", Node::string("text/plain")),
            ("data", Node::string(text)),
        ];
        ("document", source_node(members))
    } else {
        let kind = if mime.starts_with("image/") { "image" } else { "document" };
        match (media::base64_of(mime, source), source) {
            (Some((media_type, data)), _) => {
                let members = vec![
                    ("type", Node::string("base64")),
                    ("media_type", Node::string(&media_type)),
                    ("data", Node::string(&data)),
                ];
                (kind, source_node(members))
            }
            (None, MediaSource::Url(url)) => {
                (kind, source_node(vec![("type", Node::string("url")), ("url", Node::string(url))]))
            }
            (None, MediaSource::Inline(_)) => return None,
        }
    };
    Some(Node::object(vec![("type", Node::string(kind)), ("source", source)]))
}

/// A part from a content block, with its residue.
pub fn read_block(item: &Node<'_>, path: &Path) -> Result<Part> {
    let kind = fields::part_type(item, path)?;
    let part = match kind.as_ref() {
        "text" => Part::text(Fields::of(item, path)?.str("text")?),
        "image" | "document" => {
            let f = Fields::of(item, path)?;
            let at = f.at("source");
            let Some(source) = f.get("source").filter(|s| s.as_object().is_some()) else {
                return provider(FORMAT, item, path, Markers::new());
            };
            let source = Fields::of(source, &at)?;
            match source.opt_str("type")?.as_deref() {
                Some("base64") => {
                    let media_type = source.str("media_type")?;
                    let data = source.str("data")?;
                    let payload =
                        media::source_from_base64(&media_type, &data).map_err(|e| source.at("data").error(e))?;
                    Part::media(media_type, payload, None)
                }
                Some("url") => {
                    let mime = if kind == "image" { "image/*" } else { "application/pdf" };
                    Part::media(mime, MediaSource::Url(source.str("url")?.into_owned()), None)
                }
                _ => return provider(FORMAT, item, path, Markers::new()),
            }
        }
        "thinking" => {
            let f = Fields::of(item, path)?;
            Part::thinking(f.str("thinking")?, f.opt_str("signature")?.map(|s| s.into_owned()))
        }
        "redacted_thinking" => {
            let data = Fields::of(item, path)?.str("data")?.into_owned();
            Part::Thinking { text: data, signature: None, redacted: true, extra: None }
        }
        "tool_use" => {
            let f = Fields::of(item, path)?;
            let input = f.member("input")?;
            if input.as_object().is_none() {
                return f.at("input").fail(format!("expected an object, got {}", input.kind()));
            }
            Part::tool_call(f.str("id")?, f.str("name")?, input.to_text())
        }
        "tool_result" => {
            let f = Fields::of(item, path)?;
            let content = match f.given("content") {
                None => String::new(),
                Some(content) if content.as_str().is_some() => fields::string(content, &f.at("content"))?.into_owned(),
                Some(content) => match content.as_array() {
                    Some(blocks) => fields::text_of(blocks),
                    None => return f.at("content").fail("expected a string or an array of blocks"),
                },
            };
            let is_error = f.opt_bool("is_error")?.unwrap_or(false);
            Part::tool_result(f.str("tool_use_id")?, content, is_error)
        }
        _ => return provider(FORMAT, item, path, Markers::new()),
    };
    let derived = block(&part, &mut false).map(Node::into_owned);
    finish(FORMAT, part, Markers::new(), derived, item, path)
}
