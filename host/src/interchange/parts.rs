//! Helpers shared by the formats for turning native values into parts.

use super::Format;
use super::fields::{Path, Result};
use super::raw::Node;
use super::residue::{Markers, Residue, extra_with};
use crate::model::{JsonText, Part};

/// The exact text of a value as [`JsonText`].
pub fn json_text(node: &Node<'_>, path: &Path) -> Result<JsonText> {
    JsonText::parse(node.to_text()).map_err(|e| path.error(e.to_string()))
}

pub fn set_extra(part: &mut Part, value: Option<JsonText>) {
    match part {
        Part::Text { extra, .. }
        | Part::Thinking { extra, .. }
        | Part::ToolCall { extra, .. }
        | Part::ToolResult { extra, .. }
        | Part::Media { extra, .. }
        | Part::Provider { extra, .. } => *extra = value,
    }
}

/// An opaque part: the value verbatim, with layout `markers`.
pub fn provider(format: Format, source: &Node<'_>, path: &Path, markers: Markers<'_>) -> Result<Part> {
    let residue = Residue { markers, patch: None };
    Ok(Part::Provider {
        format: format.name().into(),
        value: json_text(source, path)?,
        extra: extra_with(format, &residue),
    })
}

/// `part` with the residue of `source` against its derivation. A part whose
/// derivation fails is kept opaque instead, so nothing is lost.
pub fn finish(
    format: Format,
    mut part: Part,
    markers: Markers<'_>,
    derived: Option<Node<'_>>,
    source: &Node<'_>,
    path: &Path,
) -> Result<Part> {
    let Some(derived) = derived else { return provider(format, source, path, Markers::new()) };
    let residue = Residue::compute(markers, &derived, source);
    set_extra(&mut part, extra_with(format, &residue));
    Ok(part)
}

/// The value and residue of a provider part of `format`.
pub fn own_provider(part: &Part, format: Format) -> Option<(&JsonText, Residue<'_>)> {
    match part {
        Part::Provider { format: f, value, extra } if f == format.name() => {
            Some((value, Residue::stored(extra.as_ref(), format)))
        }
        _ => None,
    }
}

/// A provider value as a node (`null` if it were not JSON, which `JsonText`
/// rules out).
pub fn value_node(value: &JsonText) -> Node<'_> {
    Node::parse(value.as_str()).unwrap_or(Node::null())
}

/// A plain text part: a `Text` without a residue of `format`.
pub fn plain_text(part: &Part, format: Format) -> Option<&str> {
    match part {
        Part::Text { text, extra } if Residue::stored(extra.as_ref(), format).is_empty() => Some(text),
        _ => None,
    }
}

/// Adds a layout marker to the residue a part stores for `format`.
pub fn add_marker(part: &mut Part, format: Format, name: &'static str, value: Node<'_>) {
    let mut residue = Residue::stored(part.extra(), format).into_owned();
    residue.markers.set(name, value.into_owned());
    set_extra(part, extra_with(format, &residue));
}
