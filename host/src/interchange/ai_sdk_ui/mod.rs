//! Vercel AI SDK `UIMessage`s (docs/formats.md §6):
//! `{"id"?, "messages": [UIMessage], "x_stowage"?}` — what AI SDK apps persist.
//!
//! Modelled: ids, metadata, text, reasoning (with Anthropic signatures and
//! redacted data), client-executed tool parts in every state (as calls and
//! results), files and steps. States, `providerMetadata`, approvals and other
//! members are residues; provider-executed tools, sources, `data-*`, `custom`
//! and unknown parts are opaque provider parts.
//!
//! In keep mode a UIMessage carries `x_stowage: {"messages": [...]}`, one
//! extension per Stowage message of the group (full messages when the group
//! cannot be derived back from the UIMessage).

mod message;
mod parts;

use serde::{Deserialize, Serialize};

use super::extension::{self, MessageExt};
use super::fields::{Fields, Path, Result};
use super::pure::Out;
use super::raw::Node;
use super::residue::Residue;
use super::{Format, Transcript, line};
use crate::model::{NewMessage, Role};

pub const FORMAT: Format = Format::AiSdkUi;

/// `x_stowage` of a UIMessage.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct UiExt {
    #[serde(default)]
    messages: Vec<MessageExt>,
}

pub fn parse_line(source: &Node<'_>) -> Result<Transcript> {
    let root = Path::root();
    let fields = Fields::of(source, &root)?;
    let messages = parse_messages(fields.array("messages")?, &root.key("messages"))?;
    let (conversation_id, meta, _) = line::conversation(FORMAT, source, &["messages"], Some("id"))?;
    Ok(Transcript { conversation_id, meta, messages, display: Vec::new() })
}

/// The Stowage messages of an array of UIMessages (`path` names the array).
pub fn parse_messages(items: &[Node<'_>], path: &Path) -> Result<Vec<NewMessage>> {
    let mut messages = Vec::new();
    let mut after_assistant = false;
    for (i, item) in items.iter().enumerate() {
        let at = path.index(i);
        Fields::of(item, &at)?;
        let ext: Option<UiExt> = extension::read(item, &at)?;
        let mut group = message::parse(&extension::strip(item), &at, after_assistant)?;
        after_assistant = is_assistant(item);
        if let Some(ext) = ext {
            apply(&mut group, ext);
        }
        messages.extend(group);
    }
    Ok(messages)
}

/// The Stowage messages of one UIMessage value; `after_assistant` when it
/// follows an assistant UIMessage in a list (it then starts anew: `$new`).
pub fn parse_value(item: &Node<'_>, after_assistant: bool) -> Result<Vec<NewMessage>> {
    let root = Path::root();
    Fields::of(item, &root)?;
    let ext: Option<UiExt> = extension::read(item, &root)?;
    let mut group = message::parse(&extension::strip(item), &root, after_assistant)?;
    if let Some(ext) = ext {
        apply(&mut group, ext);
    }
    Ok(group)
}

fn apply(group: &mut Vec<NewMessage>, ext: UiExt) {
    if ext.messages.len() == group.len() {
        for (m, e) in group.iter_mut().zip(ext.messages) {
            e.apply(m);
        }
    } else {
        *group = ext.messages.into_iter().map(MessageExt::into_message).collect();
    }
}

/// Whether a UIMessage is an assistant one.
pub fn is_assistant(item: &Node<'_>) -> bool {
    let role = item.as_object().and_then(|o| o.get("role")).and_then(Node::as_str).and_then(|r| r.ok());
    role.as_deref() == Some("assistant")
}

/// Whether an Assistant message was marked to start a new UIMessage.
fn starts_anew(message: &NewMessage) -> bool {
    message.role == Role::Assistant && Residue::stored(message.extra.as_ref(), FORMAT).markers.flag("$new")
}

/// Messages grouped into UIMessages: system, developer and user messages alone;
/// a run of assistant and tool messages together (until a `$new` mark).
fn groups(messages: &[NewMessage]) -> Vec<std::ops::Range<usize>> {
    let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let joins = message::assistant_side(m.role)
            && !starts_anew(m)
            && groups.last().is_some_and(|g| message::assistant_side(messages[g.start].role));
        match groups.last_mut() {
            Some(group) if joins => group.end = i + 1,
            _ => groups.push(i..i + 1),
        }
    }
    groups
}

/// The UIMessages of `messages`, with `x_stowage` in keep mode.
pub fn render_units<'a>(messages: &'a [NewMessage], out: &mut Out) -> Vec<Node<'a>> {
    let mut units = Vec::new();
    let mut after_assistant = false;
    for range in groups(messages) {
        let group = &messages[range.clone()];
        let id = group[0].id.clone().unwrap_or_else(|| format!("msg-{}", range.start));
        let residue = Residue::stored(group[0].extra.as_ref(), FORMAT);
        let mut node = residue.apply(message::ui_node(group, &id, &residue.markers, out));
        if !out.pure() {
            let parsed = message::parse(&node, &Path::root(), after_assistant).ok();
            if parsed.is_none() {
                // Parts that do not read back (a malformed opaque part): the
                // extension carries the whole group instead.
                let role = node.as_object().and_then(|o| o.get("role")).cloned().unwrap_or(Node::string("user"));
                node = Node::object(vec![("id", Node::string(&id)), ("role", role), ("parts", Node::array(vec![]))]);
            }
            let exts: Vec<MessageExt> = match &parsed {
                Some(parsed) if parsed.len() == group.len() => {
                    group.iter().zip(parsed).map(|(m, p)| MessageExt::between(m, Some(p))).collect()
                }
                _ => group.iter().map(MessageExt::full).collect(),
            };
            if exts.iter().any(|e| !e.is_empty()) {
                extension::attach(&mut node, &UiExt { messages: exts });
            }
        }
        after_assistant = is_assistant(&node);
        units.push(node);
    }
    units
}

pub fn render_line<'a>(transcript: &'a Transcript, out: &mut Out) -> Node<'a> {
    let units = render_units(&transcript.messages, out);
    let id = transcript.conversation_id.as_deref();
    line::render(FORMAT, vec![("messages", Node::array(units))], id, &transcript.meta, out, Some("id"), None)
}
