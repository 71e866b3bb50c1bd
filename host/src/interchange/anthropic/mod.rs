//! Anthropic Messages (docs/formats.md §4):
//! `{"system"?, "messages": [message], "x_stowage"?, <request parameters>?}`.
//!
//! Modelled: the system prompt, user and assistant messages (a user message
//! made only of `tool_result` blocks is a tool message), text, thinking (signed
//! and redacted), tool use and results, base64 and URL images and documents,
//! stop reasons and usage. `cache_control`, `citations`, `title`, response
//! members and every other member are residues; server tools and their results,
//! MCP, search results, text, content and file documents, container uploads,
//! compaction and unknown blocks are opaque provider parts.

mod blocks;
mod message;

use super::extension::MessageExt;
use super::fields::{Fields, Path, Result};
use super::keep;
use super::pure::Out;
use super::raw::Node;
use super::residue::{Markers, Residue, extra_with};
use super::{Format, Transcript, line};
use crate::model::{NewMessage, Part, Role};

pub use self::message::parse_group;

pub const FORMAT: Format = Format::Anthropic;

fn never(_: &Node<'_>, _: &Node<'_>) -> bool {
    false
}

fn carrier(_: &NewMessage) -> Node<'static> {
    Node::object(vec![("role", Node::string("user")), ("content", Node::array(vec![]))])
}

pub fn parse_line(source: &Node<'_>) -> Result<Transcript> {
    let root = Path::root();
    let f = Fields::of(source, &root)?;
    let mut messages = Vec::new();
    let system = f.given("system");
    let (conversation_id, meta, system_ext) = line::conversation(
        FORMAT,
        source,
        if system.is_some() { &["messages", "system"] } else { &["messages"] },
        None,
    )?;
    if let Some(system) = system {
        let mut message = parse_system(system, &root.key("system"))?;
        if let Some(ext) = system_ext {
            ext.apply(&mut message);
        }
        messages.push(message);
    }
    messages.extend(parse_messages(f.array("messages")?, &root.key("messages"))?);
    Ok(Transcript { conversation_id, meta, messages, display: Vec::new() })
}

pub fn parse_messages(units: &[Node<'_>], path: &Path) -> Result<Vec<NewMessage>> {
    keep::parse_units(units, path, never, message::parse_group)
}

/// The system prompt as a System message.
fn parse_system(system: &Node<'_>, path: &Path) -> Result<NewMessage> {
    let (parts, shape) = if let Some(text) = system.as_str() {
        (vec![Part::text(text.map_err(|e| path.error(format!("not valid Unicode text: {e}")))?)], "string")
    } else if let Some(items) = system.as_array() {
        let parts =
            items.iter().enumerate().map(|(i, b)| blocks::read_block(b, &path.index(i))).collect::<Result<_>>()?;
        (parts, "array")
    } else {
        return path.fail("expected a string or an array of text blocks");
    };
    let mut message = NewMessage::new(Role::System, parts);
    let mut markers = Markers::new();
    if shape != message::content_shape(None, &message.parts.iter().collect::<Vec<_>>()) {
        markers.set_str("$content", shape);
    }
    message.extra = extra_with(FORMAT, &Residue { markers, patch: None });
    Ok(message)
}

/// The `system` value of a run of System (and, in pure mode, Developer) messages.
fn system_node<'a>(run: &'a [NewMessage], out: &mut Out) -> Node<'a> {
    let (mut content, mut parts) = (Vec::new(), Vec::new());
    for message in run {
        let (blocks, rendered) = message::blocks_of(message, out);
        content.extend(blocks);
        parts.extend(rendered);
    }
    let marker = match run {
        [single] => Residue::stored(single.extra.as_ref(), FORMAT).markers.str("$content"),
        _ => Some("array".into()),
    };
    match (message::content_shape(marker.as_deref(), &parts), message::single_text(&parts)) {
        ("string", Some(text)) => Node::string(text),
        _ => Node::array(content),
    }
}

pub fn render_units<'a>(messages: &'a [NewMessage], out: &mut Out) -> Vec<Node<'a>> {
    if out.pure() {
        let mut units = Vec::new();
        for m in messages {
            match m.role {
                Role::System | Role::Developer => out.drop(format!("{} message after the start", m.role.as_str())),
                _ => units.push(message::unit(m, out)),
            }
        }
        return units;
    }
    let mut keep = Out::new(false);
    keep::keep_units(messages, |m| vec![message::unit(m, &mut keep)], carrier, never, message::parse_group)
}

pub fn render_line<'a>(transcript: &'a Transcript, out: &mut Out) -> Node<'a> {
    let messages = &transcript.messages;
    let lead = if out.pure() {
        messages.iter().take_while(|m| matches!(m.role, Role::System | Role::Developer)).count()
    } else {
        usize::from(messages.first().is_some_and(|m| m.role == Role::System))
    };
    let mut members = Vec::new();
    let mut system_ext = None;
    if lead > 0 {
        let mut system = system_node(&messages[..lead], out);
        if !out.pure() {
            let parsed = parse_system(&system, &Path::root().key("system")).ok();
            if parsed.is_none() {
                // Blocks that do not read back (a malformed opaque block): the
                // extension carries the whole message instead.
                system = Node::array(Vec::new());
            }
            system_ext = Some(MessageExt::between(&messages[0], parsed.as_ref()));
        }
        members.push(("system", system));
    }
    members.push(("messages", Node::array(render_units(&messages[lead..], out))));
    let id = transcript.conversation_id.as_deref();
    line::render(FORMAT, members, id, &transcript.meta, out, None, system_ext)
}
