//! UIMessage parts ↔ Stowage parts.

use super::super::fields::{self, Fields, Path, Result};
use super::super::media;
use super::super::parts::{finish, json_text, own_provider, provider, set_extra, value_node};
use super::super::raw::Node;
use super::super::residue::{Markers, Residue, extra_with};
use super::FORMAT;
use crate::model::Part;

/// What one UI part is.
pub enum Read {
    Part(Part),
    /// A client-executed tool part: the call, and its result if it has one.
    Tool(Part, Option<Part>),
    /// A bare `step-start` part.
    StepStart,
}

/// The UI part of a non-tool part (`None`: no UIMessage form).
pub fn derive<'a>(part: &'a Part) -> Option<Node<'a>> {
    let kind = |k: &str| ("type", Node::string(k));
    Some(match part {
        Part::Text { text, .. } => Node::object(vec![kind("text"), ("text", Node::string(text))]),
        Part::Thinking { text, signature, redacted, .. } => {
            let mut anthropic = Vec::new();
            if *redacted {
                anthropic.push(("redactedData", Node::string(text)));
            }
            if let Some(signature) = signature {
                anthropic.push(("signature", Node::string(signature)));
            }
            let shown = if *redacted { "" } else { text.as_str() };
            let mut members = vec![kind("reasoning"), ("text", Node::string(shown))];
            if !anthropic.is_empty() {
                members.push(("providerMetadata", Node::object(vec![("anthropic", Node::object(anthropic))])));
            }
            Node::object(members)
        }
        Part::Media { mime_type, source, name, .. } => {
            let mut members = vec![kind("file"), ("mediaType", Node::string(mime_type))];
            if let Some(name) = name {
                members.push(("filename", Node::string(name)));
            }
            members.push(("url", Node::string(&media::url_of(mime_type, source))));
            Node::object(members)
        }
        Part::Provider { .. } => value_node(own_provider(part, FORMAT)?.0),
        Part::ToolCall { .. } | Part::ToolResult { .. } => return None,
    })
}

/// A tool part from a call and its result (`None` if `call` is not a call).
pub fn tool<'a>(call: &'a Part, result: Option<&'a Part>) -> Option<Node<'a>> {
    let Part::ToolCall { id, name, arguments, .. } = call else { return None };
    let input = Node::parse(arguments).unwrap_or_else(|_| Node::string(arguments));
    let mut members = vec![("type", Node::string(&format!("tool-{name}"))), ("toolCallId", Node::string(id))];
    match result {
        Some(Part::ToolResult { content, is_error: true, .. }) => {
            members.push(("state", Node::string("output-error")));
            members.push(("input", input));
            members.push(("errorText", Node::string(content)));
        }
        Some(result @ Part::ToolResult { content, .. }) => {
            let json = Residue::stored(result.extra(), FORMAT).markers.str("$output").as_deref() == Some("json");
            let output = match json.then(|| Node::parse(content)) {
                Some(Ok(node)) => node,
                _ => Node::string(content),
            };
            members.push(("state", Node::string("output-available")));
            members.push(("input", input));
            members.push(("output", output));
        }
        _ => {
            members.push(("state", Node::string("input-available")));
            members.push(("input", input));
        }
    }
    Some(Node::object(members))
}

/// Reads one part; `assistant` parts may be tool parts and step boundaries.
pub fn read(item: &Node<'_>, path: &Path, assistant: bool) -> Result<Read> {
    let kind = fields::part_type(item, path)?;
    let opaque = || provider(FORMAT, item, path, Markers::new()).map(Read::Part);
    let part = match kind.as_ref() {
        "step-start" if assistant && item.as_object().is_some_and(|o| o.len() == 1) => return Ok(Read::StepStart),
        "text" => Part::text(Fields::of(item, path)?.str("text")?),
        "reasoning" => {
            let f = Fields::of(item, path)?;
            let text = f.str("text")?.into_owned();
            let anthropic = f.get("providerMetadata").and_then(Node::as_object).and_then(|m| m.get("anthropic"));
            let meta =
                |key: &str| anthropic.and_then(Node::as_object)?.get(key)?.as_str()?.ok().map(|s| s.into_owned());
            match meta("redactedData") {
                Some(data) => Part::Thinking { text: data, signature: meta("signature"), redacted: true, extra: None },
                None => Part::thinking(text, meta("signature")),
            }
        }
        "file" => {
            let f = Fields::of(item, path)?;
            let media_type = f.str("mediaType")?;
            let url = f.str("url")?;
            let (_, source) = media::source_from_url(&url, &media_type).map_err(|e| f.at("url").error(e))?;
            Part::media(media_type, source, f.opt_str("filename")?.map(|n| n.into_owned()))
        }
        tool if assistant && (tool.starts_with("tool-") || tool == "dynamic-tool") => {
            let f = Fields::of(item, path)?;
            if f.opt_bool("providerExecuted")? == Some(true) {
                return opaque();
            }
            return read_tool(&f, item, tool);
        }
        _ => return opaque(),
    };
    let derived = derive(&part).map(Node::into_owned);
    finish(FORMAT, part, Markers::new(), derived, item, path).map(Read::Part)
}

fn read_tool(f: &Fields<'_, '_>, item: &Node<'_>, kind: &str) -> Result<Read> {
    let name = match kind.strip_prefix("tool-") {
        Some(name) => name.to_owned(),
        None => f.str("toolName")?.into_owned(),
    };
    let id = f.str("toolCallId")?.into_owned();
    let arguments = f.get("input").map(Node::to_text).unwrap_or_default();
    let result = if f.opt_str("state")?.as_deref() == Some("output-error") {
        Some(Part::tool_result(id.clone(), f.str("errorText")?, true))
    } else {
        match f.get("output") {
            None => None,
            Some(output) if output.as_str().is_some() => {
                Some(Part::tool_result(id.clone(), fields::string(output, &f.at("output"))?, false))
            }
            Some(output) => {
                let mut part = Part::tool_result(id.clone(), json_text(output, &f.at("output"))?.into_string(), false);
                let mut markers = Markers::new();
                markers.set_str("$output", "json");
                set_extra(&mut part, extra_with(FORMAT, &Residue { markers, patch: None }));
                Some(part)
            }
        }
    };
    let mut call = Part::tool_call(id, name, arguments);
    let derived = tool(&call, result.as_ref()).map(Node::into_owned);
    if let Some(derived) = derived {
        set_extra(&mut call, extra_with(FORMAT, &Residue::compute(Markers::new(), &derived, item)));
    }
    Ok(Read::Tool(call, result))
}
