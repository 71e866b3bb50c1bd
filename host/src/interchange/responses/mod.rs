//! OpenAI Responses input items (docs/formats.md §5):
//! `{"session_id"?, "items": [item], "x_stowage"?}` — what the OpenAI Agents
//! SDK sessions store, one item per row.
//!
//! Grouping: an item with role user, system or developer is a message of its
//! own; a run of assistant-side items (assistant messages, reasoning, calls,
//! hosted tool calls) is one assistant message; a run of client-side results is
//! one tool message; item references, compaction triggers and unknown items
//! join the current run. Modelled: message text (input, output, refusals),
//! images, files and audio, reasoning summaries, function and custom tool calls
//! and their outputs. Ids, statuses, `phase`, annotations, logprobs and
//! `encrypted_content` are residues; hosted tool calls, file ids, references,
//! compaction and unknown items are opaque provider parts.

mod content;
mod items;
mod render;

use super::fields::{Fields, Path, Result};
use super::keep;
use super::pure::Out;
use super::raw::Node;
use super::{Format, Transcript, line};
use crate::model::{NewMessage, Role};

pub use self::items::parse_group;

pub const FORMAT: Format = Format::OpenAiResponses;
const SESSION: &str = "session_id";

const ASSISTANT_SIDE: &[&str] = &[
    "reasoning",
    "function_call",
    "custom_tool_call",
    "web_search_call",
    "file_search_call",
    "computer_call",
    "image_generation_call",
    "code_interpreter_call",
    "local_shell_call",
    "shell_call",
    "apply_patch_call",
    "mcp_list_tools",
    "mcp_approval_request",
    "mcp_call",
    "tool_search_call",
    "compaction",
    "program",
    "message",
];

const TOOL_SIDE: &[&str] = &[
    "function_call_output",
    "custom_tool_call_output",
    "computer_call_output",
    "local_shell_call_output",
    "shell_call_output",
    "apply_patch_call_output",
    "mcp_approval_response",
    "tool_search_output",
    "program_output",
];

/// Which message an item belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// A user, system or developer item: a message of its own.
    Own(Role),
    Assistant,
    Tool,
    /// Joins the current run (references, compaction triggers, unknown items).
    Joiner,
}

pub fn side(item: &Node<'_>) -> Side {
    let Some(object) = item.as_object() else { return Side::Joiner };
    let text = |key: &str| object.get(key).and_then(Node::as_str).and_then(std::result::Result::ok);
    match text("role").as_deref() {
        Some("user") => return Side::Own(Role::User),
        Some("system") => return Side::Own(Role::System),
        Some("developer") => return Side::Own(Role::Developer),
        Some("assistant") => return Side::Assistant,
        _ => {}
    }
    match text("type").as_deref() {
        Some(kind) if ASSISTANT_SIDE.contains(&kind) => Side::Assistant,
        Some(kind) if TOOL_SIDE.contains(&kind) => Side::Tool,
        _ => Side::Joiner,
    }
}

/// Whether `next` joins the message whose first item is `first`.
fn joins(first: &Node<'_>, next: &Node<'_>) -> bool {
    matches!(
        (side(first), side(next)),
        (Side::Assistant | Side::Joiner, Side::Assistant | Side::Joiner) | (Side::Tool, Side::Tool | Side::Joiner)
    )
}

fn carrier(message: &NewMessage) -> Node<'static> {
    match message.role {
        Role::Tool => Node::object(vec![
            ("type", Node::string("function_call_output")),
            ("call_id", Node::string("")),
            ("output", Node::string("")),
        ]),
        Role::Assistant => Node::object(vec![("role", Node::string("assistant")), ("content", Node::array(vec![]))]),
        _ => Node::object(vec![("role", Node::string("user")), ("content", Node::array(vec![]))]),
    }
}

pub fn parse_line(source: &Node<'_>) -> Result<Transcript> {
    let root = Path::root();
    let fields = Fields::of(source, &root)?;
    let messages = parse_items(fields.array("items")?, &root.key("items"))?;
    let (conversation_id, meta, _) = line::conversation(FORMAT, source, &["items"], Some(SESSION))?;
    Ok(Transcript { conversation_id, meta, messages, display: Vec::new() })
}

pub fn parse_items(units: &[Node<'_>], path: &Path) -> Result<Vec<NewMessage>> {
    keep::parse_units(units, path, joins, items::parse_group)
}

pub fn render_units<'a>(messages: &'a [NewMessage], out: &mut Out) -> Vec<Node<'a>> {
    if out.pure() {
        return messages.iter().flat_map(|m| render::items(m, out)).collect();
    }
    let mut keep = Out::new(false);
    keep::keep_units(messages, |m| render::items(m, &mut keep), carrier, joins, items::parse_group)
}

pub fn render_line<'a>(transcript: &'a Transcript, out: &mut Out) -> Node<'a> {
    let units = render_units(&transcript.messages, out);
    let id = transcript.conversation_id.as_deref();
    line::render(FORMAT, vec![("items", Node::array(units))], id, &transcript.meta, out, Some(SESSION), None)
}
