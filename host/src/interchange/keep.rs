//! Native units ↔ Stowage messages for the formats whose units each belong to
//! one message (Chat Completions messages, Anthropic messages, Responses items).
//!
//! Import groups consecutive units by the format's rule (`joins`); a unit with
//! `x_stowage` starts a new message (or, with `"continues": true`, continues
//! the previous one). Keep-mode export renders each message, parses its units
//! back exactly as import will, and attaches to the first unit whatever that
//! parse does not reproduce — so `parse(render(m, Keep)) == m` holds by
//! construction, for messages from any format.

use super::extension::{self, MessageExt};
use super::fields::{Fields, Path, Result};
use super::raw::Node;
use crate::model::NewMessage;

/// Parses an array of units (`path` names the array) into messages.
pub fn parse_units<'a>(
    units: &[Node<'a>],
    path: &Path,
    joins: impl Fn(&Node<'a>, &Node<'a>) -> bool,
    mut parse_group: impl FnMut(&[(Node<'a>, Path)]) -> Result<NewMessage>,
) -> Result<Vec<NewMessage>> {
    type Group<'a> = (Vec<(Node<'a>, Path)>, Option<MessageExt>);
    let mut groups: Vec<Group<'a>> = Vec::new();
    for (i, unit) in units.iter().enumerate() {
        let at = path.index(i);
        Fields::of(unit, &at)?;
        let ext: Option<MessageExt> = extension::read(unit, &at)?;
        let stripped = extension::strip(unit);
        match (ext, groups.last_mut()) {
            (Some(ext), Some((group, _))) if ext.continues => group.push((stripped, at)),
            (Some(ext), None) if ext.continues => {
                return at.key(extension::KEY).fail("`continues` on the first message");
            }
            (Some(ext), _) => groups.push((vec![(stripped, at)], Some(ext))),
            (None, Some((group, _))) if joins(&group[0].0, &stripped) => group.push((stripped, at)),
            (None, _) => groups.push((vec![(stripped, at)], None)),
        }
    }
    groups
        .into_iter()
        .map(|(group, ext)| {
            let mut message = parse_group(&group)?;
            if let Some(ext) = ext {
                ext.apply(&mut message);
            }
            Ok(message)
        })
        .collect()
}

/// One message from a single unit (the value API): `x_stowage` honoured.
pub fn parse_one<'a>(
    unit: &Node<'a>,
    parse_group: impl FnOnce(&[(Node<'a>, Path)]) -> Result<NewMessage>,
) -> Result<NewMessage> {
    let root = Path::root();
    Fields::of(unit, &root)?;
    let ext: Option<MessageExt> = extension::read(unit, &root)?;
    let mut message = parse_group(&[(extension::strip(unit), root)])?;
    if let Some(ext) = ext {
        ext.apply(&mut message);
    }
    Ok(message)
}

/// Keep-mode units for `messages`. `render` gives a message's units (possibly
/// none); `carrier` a unit that parses cleanly, used when there are none.
pub fn keep_units<'a>(
    messages: &'a [NewMessage],
    mut render: impl FnMut(&'a NewMessage) -> Vec<Node<'a>>,
    carrier: impl Fn(&NewMessage) -> Node<'static>,
    joins: impl Fn(&Node<'a>, &Node<'a>) -> bool,
    mut parse_group: impl FnMut(&[(Node<'a>, Path)]) -> Result<NewMessage>,
) -> Vec<Node<'a>> {
    let mut out = Vec::new();
    let mut previous: Option<Node<'a>> = None;
    for message in messages {
        let rendered = render(message);
        let parsed = if rendered.is_empty() { None } else { parse_alone(&rendered, &mut parse_group) };
        let (mut units, parsed) = match parsed {
            Some(parsed) => (rendered, Some(parsed)),
            None => (vec![carrier(message)], None),
        };
        for j in 1..units.len() {
            if !joins(&units[0], &units[j]) {
                let continues = MessageExt { continues: true, ..MessageExt::default() };
                extension::attach(&mut units[j], &continues);
            }
        }
        let ext = MessageExt::between(message, parsed.as_ref());
        let boundary = previous.as_ref().is_some_and(|p| joins(p, &units[0]));
        previous = Some(units[0].clone());
        if !ext.is_empty() || boundary {
            extension::attach(&mut units[0], &ext);
        }
        out.extend(units);
    }
    out
}

/// What import makes of these units as one message.
fn parse_alone<'a>(
    units: &[Node<'a>],
    parse_group: &mut impl FnMut(&[(Node<'a>, Path)]) -> Result<NewMessage>,
) -> Option<NewMessage> {
    let group: Vec<(Node<'a>, Path)> =
        units.iter().enumerate().map(|(i, u)| (u.clone(), Path::root().key("units").index(i))).collect();
    parse_group(&group).ok()
}
