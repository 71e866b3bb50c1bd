//! OpenAI Chat Completions messages (docs/formats.md §3):
//! `{"messages": [message], "x_stowage"?, <request parameters>?}`.
//!
//! Modelled: roles, text, refusals (member and part), images, `input_audio`,
//! inline files, function and custom tool calls, tool results (consecutive
//! `tool` messages form one Stowage tool message). Everything else — `name`,
//! `detail`, `annotations`, `audio`, request parameters, unknown members — is
//! kept as a residue; file ids, legacy `function` messages and unknown part and
//! tool-call types are opaque provider parts.

mod parse;
mod render;

use super::fields::{Path, Result};
use super::keep;
use super::pure::Out;
use super::raw::Node;
use super::{Format, Transcript, line};
use crate::model::{NewMessage, Role};

pub use self::parse::parse_group;

pub const FORMAT: Format = Format::OpenAi;

fn is_tool(unit: &Node<'_>) -> bool {
    let role = unit.as_object().and_then(|o| o.get("role")).and_then(Node::as_str).and_then(std::result::Result::ok);
    matches!(role.as_deref(), Some("tool" | "function"))
}

/// Consecutive tool (and legacy function) messages form one message.
fn joins(first: &Node<'_>, next: &Node<'_>) -> bool {
    is_tool(first) && is_tool(next)
}

fn carrier(message: &NewMessage) -> Node<'static> {
    if message.role == Role::Tool {
        Node::object(vec![
            ("role", Node::string("tool")),
            ("tool_call_id", Node::string("")),
            ("content", Node::string("")),
        ])
    } else {
        Node::object(vec![("role", Node::string("user")), ("content", Node::null())])
    }
}

pub fn parse_line(source: &Node<'_>) -> Result<Transcript> {
    let root = Path::root();
    let fields = super::fields::Fields::of(source, &root)?;
    let messages = parse_messages(fields.array("messages")?, &root.key("messages"))?;
    let (conversation_id, meta, _) = line::conversation(FORMAT, source, &["messages"], None)?;
    Ok(Transcript { conversation_id, meta, messages, display: Vec::new() })
}

/// Messages from an array of native messages (`path` names the array).
pub fn parse_messages(units: &[Node<'_>], path: &Path) -> Result<Vec<NewMessage>> {
    keep::parse_units(units, path, joins, parse::parse_group)
}

/// The native messages of `messages`, with `x_stowage` in keep mode.
pub fn render_units<'a>(messages: &'a [NewMessage], out: &mut Out) -> Vec<Node<'a>> {
    if out.pure() {
        return messages.iter().flat_map(|m| render::units(m, out)).collect();
    }
    let mut keep = Out::new(false);
    keep::keep_units(messages, |m| render::units(m, &mut keep), carrier, joins, parse::parse_group)
}

pub fn render_line<'a>(transcript: &'a Transcript, out: &mut Out) -> Node<'a> {
    let units = render_units(&transcript.messages, out);
    let id = transcript.conversation_id.as_deref();
    line::render(FORMAT, vec![("messages", Node::array(units))], id, &transcript.meta, out, None, None)
}
