//! The conversation around the messages of a line: its id, its meta, and the
//! line's other members (request parameters such as `model` or `tools`), which
//! are kept verbatim as the conversation's extra for that format.

use super::Format;
use super::extension::{self, LineExt, MessageExt};
use super::fields::{self, Path, Result};
use super::pure::Out;
use super::raw::Node;
use super::residue::{Markers, Residue, extra_with};
use crate::model::ConversationMeta;

/// The members the format interprets, copied from `source`: what a line's
/// residue is computed against.
fn known<'a>(source: &Node<'a>, names: &[&str]) -> Node<'a> {
    let mut members = Vec::new();
    if let Some(object) = source.as_object() {
        for name in names {
            if let Some(value) = object.get(name) {
                members.push((*name, value.clone()));
            }
        }
    }
    Node::object(members)
}

/// The conversation of a line whose interpreted members are `names` (plus the
/// native id member `native_id`, if the format has one); returns the extension
/// of the message rendered as Anthropic's `system`, if any.
pub fn conversation(
    format: Format,
    source: &Node<'_>,
    names: &[&str],
    native_id: Option<&str>,
) -> Result<(Option<String>, ConversationMeta, Option<MessageExt>)> {
    let root = Path::root();
    let stripped = extension::strip(source);
    let mut all: Vec<&str> = names.to_vec();
    all.extend(native_id);
    let residue = Residue::compute(Markers::new(), &known(&stripped, &all), &stripped);
    let mut meta = ConversationMeta { extra: extra_with(format, &residue), ..ConversationMeta::default() };
    let mut id = None;
    if let Some(key) = native_id
        && let Some(value) = source.as_object().and_then(|o| o.get(key)).filter(|v| !v.is_null())
    {
        id = Some(fields::string(value, &root.key(key))?.into_owned());
    }
    let ext: Option<LineExt> = extension::read(source, &root)?;
    let mut system = None;
    if let Some(mut ext) = ext {
        system = ext.system.take();
        ext.apply(&mut id, &mut meta);
    }
    Ok((id, meta, system))
}

/// A line from its derived members: the conversation's residue applied, and in
/// keep mode `x_stowage` with what the line does not carry itself.
pub fn render<'a>(
    format: Format,
    mut members: Vec<(&'static str, Node<'a>)>,
    conversation_id: Option<&str>,
    meta: &'a ConversationMeta,
    out: &Out,
    native_id: Option<&'static str>,
    system: Option<MessageExt>,
) -> Node<'a> {
    let native = native_id.zip(conversation_id);
    if let Some((key, id)) = native {
        members.insert(0, (key, Node::string(id)));
    }
    let names: Vec<String> = members.iter().map(|(k, _)| (*k).to_owned()).collect();
    let derived = members.clone();
    let mut node = Residue::stored(meta.extra.as_ref(), format).apply(Node::object(members));
    // Import never puts the members it interprets in the residue; an extra that
    // names them anyway must not replace the messages (x_stowage keeps it).
    if let Node::Object(object) = &mut node {
        for (name, value) in derived {
            object.set(name, value);
        }
    }
    if !out.pure() {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let parsed = Residue::compute(Markers::new(), &known(&node, &names), &node);
        let mut ext = LineExt::of(conversation_id, meta, extra_with(format, &parsed).as_ref(), native.is_some());
        ext.system = system.filter(|s| !s.is_empty());
        if !ext.is_empty() {
            extension::attach(&mut node, &ext);
        }
    }
    node
}
