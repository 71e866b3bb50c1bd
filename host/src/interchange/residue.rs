//! Residues: what a native unit has beyond what its modelled fields derive.
//!
//! Import turns a native unit (a message, a content block, an item, a UI part)
//! into modelled fields and computes `residue = diff(derive(fields), source)`;
//! export computes `apply(derive(fields), residue)`, which is the source again
//! (`apply(d, diff(d, s)) == s` for any objects `d` and `s`). A residue is an
//! object:
//!
//! - a member the source has and the derivation lacks: copied verbatim;
//! - a member both have, both objects: a nested residue;
//! - a member both have with other values: the source value (an override);
//! - members the derivation has and the source lacks: named in `"$absent"`;
//! - layout markers (`$content`, `$item`, …), read by the format, come first.
//!
//! Numbers compare by their text, so every spelling survives. A provider key
//! that starts with `$` is stored as `$$key`. Residues are stored in `extra`, an
//! object keyed by format name; each format reads and writes only its own key.

use std::borrow::Cow;

use super::Format;
use super::compare::{Numbers, same};
use super::raw::{Node, Object};
use crate::model::JsonText;

const ABSENT: &str = "$absent";

/// Layout markers of one residue (`$content`, `$in`, …).
#[derive(Clone, Debug, Default)]
pub struct Markers<'a>(Vec<(&'static str, Node<'a>)>);

impl<'a> Markers<'a> {
    pub fn new() -> Self {
        Self(Vec::new())
    }

    pub fn get(&self, name: &str) -> Option<&Node<'a>> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// A string marker's value.
    pub fn str(&self, name: &str) -> Option<String> {
        self.get(name).and_then(Node::as_str).and_then(std::result::Result::ok).map(Cow::into_owned)
    }

    /// A boolean marker, `false` when absent.
    pub fn flag(&self, name: &str) -> bool {
        self.get(name).and_then(Node::as_bool).unwrap_or(false)
    }

    pub fn set(&mut self, name: &'static str, value: Node<'a>) {
        self.0.retain(|(n, _)| *n != name);
        self.0.push((name, value));
    }

    pub fn set_str(&mut self, name: &'static str, value: &str) {
        self.set(name, Node::string(value));
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A stored residue, split into its markers and the patch that `apply` uses.
#[derive(Clone, Debug, Default)]
pub struct Residue<'a> {
    pub markers: Markers<'a>,
    pub patch: Option<Node<'a>>,
}

impl<'a> Residue<'a> {
    /// The residue `format` stored in `extra` (none when the extra has no entry
    /// for it, or is not an object).
    pub fn stored(extra: Option<&'a JsonText>, format: Format) -> Residue<'a> {
        let Some(Node::Object(object)) = extra.and_then(|e| Node::parse(e.as_str()).ok()) else {
            return Residue::default();
        };
        match object.members().iter().find(|(k, _)| k == format.name()) {
            Some((_, Node::Object(entry))) => Residue::split(entry.clone()),
            _ => Residue::default(),
        }
    }

    /// A residue held in a node (a `$item` marker's value, for instance).
    pub fn from_node(node: &Node<'a>) -> Residue<'a> {
        match node {
            Node::Object(object) => Residue::split(object.clone()),
            _ => Residue::default(),
        }
    }

    /// A copy that owns its text.
    pub fn into_owned(self) -> Residue<'static> {
        Residue {
            markers: Markers(self.markers.0.into_iter().map(|(n, v)| (n, v.into_owned())).collect()),
            patch: self.patch.map(Node::into_owned),
        }
    }

    fn split(entry: Object<'a>) -> Residue<'a> {
        let mut markers = Markers::new();
        let mut patch = Object::new();
        for (key, value) in entry.members() {
            match marker_name(key) {
                Some(name) => markers.0.push((name, value.clone())),
                None => patch.push(key.clone(), value.clone()),
            }
        }
        let patch = (!patch.is_empty()).then(|| patch.into_node());
        Residue { markers, patch }
    }

    /// `markers` plus `diff(derived, source)`.
    pub fn compute(markers: Markers<'a>, derived: &Node<'_>, source: &Node<'a>) -> Residue<'a> {
        Residue { markers, patch: diff(derived, source) }
    }

    pub fn is_empty(&self) -> bool {
        self.markers.is_empty() && self.patch.is_none()
    }

    /// The stored form: markers (alphabetical), then the patch's members.
    pub fn to_node(&self) -> Option<Node<'a>> {
        if self.is_empty() {
            return None;
        }
        let mut markers = self.markers.0.clone();
        let mut object = Object::new();
        let patch_members = self.patch.as_ref().and_then(Node::as_object).map(Object::members).unwrap_or(&[]);
        for (key, value) in patch_members {
            if key == ABSENT {
                markers.push((ABSENT, value.clone()));
            } else {
                object.push(key.clone(), value.clone());
            }
        }
        markers.sort_by_key(|(name, _)| *name);
        let mut out = Object::new();
        for (name, value) in markers {
            out.push(Cow::Borrowed(name), value);
        }
        for (key, value) in object.members() {
            out.push(key.clone(), value.clone());
        }
        Some(out.into_node())
    }

    /// `derived` with the patch applied.
    pub fn apply(&self, derived: Node<'a>) -> Node<'a> {
        match &self.patch {
            Some(patch) => apply(derived, patch),
            None => derived,
        }
    }
}

/// An `extra` holding one format's residue (none when the residue is empty).
pub fn extra_with(format: Format, residue: &Residue<'_>) -> Option<JsonText> {
    let node = residue.to_node()?;
    let text = Node::object(vec![(format.name(), node)]).to_text();
    JsonText::parse(text).ok()
}

/// The marker a residue key names (`$content` → `"$content"`), `None` for a
/// provider key or `$absent`.
fn marker_name(key: &str) -> Option<&'static str> {
    const NAMES: [&str; 8] = ["$content", "$refusal", "$custom", "$item", "$in", "$output", "$step_start", "$new"];
    NAMES.iter().copied().find(|n| *n == key)
}

fn escape(key: &str) -> Cow<'_, str> {
    if key.starts_with('$') { Cow::Owned(format!("${key}")) } else { Cow::Borrowed(key) }
}

fn unescape(key: &str) -> &str {
    if key.starts_with("$$") { &key[1..] } else { key }
}

/// The patch that turns `derived` into `source` (both objects), `None` when
/// they are equal. Numbers compare by their text.
pub fn diff<'a>(derived: &Node<'_>, source: &Node<'a>) -> Option<Node<'a>> {
    let (Some(d), Some(s)) = (derived.as_object(), source.as_object()) else {
        return None;
    };
    let mut patch = Object::new();
    let duplicates = s.duplicate_key().is_some();
    let absent: Vec<Node<'static>> =
        d.members().iter().filter(|(k, _)| duplicates || !s.contains(k)).map(|(k, _)| Node::string(k)).collect();
    if !absent.is_empty() {
        patch.push(Cow::Borrowed(ABSENT), Node::array(absent));
    }
    for (key, value) in s.members() {
        match d.get(key).filter(|_| !duplicates) {
            None => patch.push(escape(key).into_owned().into(), value.clone()),
            Some(derived_value) => {
                if derived_value.as_object().is_some() && value.as_object().is_some() {
                    if let Some(nested) = diff(derived_value, value) {
                        patch.push(escape(key).into_owned().into(), nested);
                    }
                } else if !same(derived_value, value, Numbers::Exact) {
                    patch.push(escape(key).into_owned().into(), value.clone());
                }
            }
        }
    }
    (!patch.is_empty()).then(|| patch.into_node())
}

/// `derived` with `patch` applied (see [`diff`]).
pub fn apply<'a>(derived: Node<'a>, patch: &Node<'a>) -> Node<'a> {
    let (Node::Object(mut object), Some(patch)) = (derived, patch.as_object()) else {
        return patch.clone();
    };
    let mut written: Vec<&str> = Vec::new();
    for (key, value) in patch.members() {
        if key == ABSENT {
            for name in value.as_array().unwrap_or(&[]) {
                if let Some(Ok(name)) = name.as_str() {
                    object.remove(&name);
                }
            }
            continue;
        }
        if key.starts_with('$') && !key.starts_with("$$") {
            continue; // a marker (of this or a newer version), not provider data
        }
        let name = unescape(key);
        if written.contains(&name) {
            object.push(Cow::Owned(name.to_owned()), value.clone());
            continue;
        }
        written.push(name);
        let merged = match object.get(name) {
            Some(current @ Node::Object(_)) if value.as_object().is_some() => apply(current.clone(), value),
            _ => value.clone(),
        };
        object.set(name, merged);
    }
    object.into_node()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(text: &str) -> Node<'_> {
        Node::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn apply_of_diff_is_the_source() {
        let cases = [
            (r#"{"a":1,"b":{"c":2,"d":3}}"#, r#"{"a":1.0,"b":{"c":2,"e":[1e400]},"$x":"y","f":null}"#),
            (r#"{"type":"text","text":"x"}"#, r#"{"text":"x","type":"text","cache_control":{"type":"ephemeral"}}"#),
            (r#"{"k":{"a":1}}"#, r#"{"k":{"a":1,"a":2}}"#),
            (r#"{"k":{"a":1}}"#, r#"{"k":"flat"}"#),
            (r#"{"k":"flat"}"#, r#"{"k":{"a":1}}"#),
            (r#"{"a":1}"#, r#"{"a":1,"a":2,"b":3}"#),
            (r#"{}"#, r#"{}"#),
        ];
        for (derived, source) in cases {
            let (d, s) = (node(derived), node(source));
            let residue = Residue::compute(Markers::new(), &d, &s);
            let back = residue.apply(d.clone());
            assert!(same(&back, &s, Numbers::Exact), "{derived} + {:?} = {} != {source}", residue, back.to_text());
            // Stored and read back, the residue does the same.
            let stored = extra_with(Format::OpenAi, &residue);
            let again = Residue::stored(stored.as_ref(), Format::OpenAi).apply(d);
            assert!(same(&again, &s, Numbers::Exact), "stored: {}", again.to_text());
        }
    }

    #[test]
    fn markers_come_first_and_stay_out_of_the_patch() {
        let mut markers = Markers::new();
        markers.set_str("$content", "array");
        let residue = Residue::compute(markers, &node(r#"{"a":1,"z":0}"#), &node(r#"{"z":0,"b":2,"$in":3}"#));
        let stored = residue.to_node().map(|n| n.to_text());
        assert_eq!(stored.as_deref(), Some(r#"{"$absent":["a"],"$content":"array","b":2,"$$in":3}"#));
        let text = JsonText::parse(format!("{{\"openai\":{}}}", stored.unwrap_or_default())).ok();
        let back = Residue::stored(text.as_ref(), Format::OpenAi);
        assert_eq!(back.markers.str("$content").as_deref(), Some("array"));
        assert_eq!(back.apply(node(r#"{"a":1,"z":0}"#)).to_text(), r#"{"z":0,"b":2,"$in":3}"#);
        assert!(Residue::stored(text.as_ref(), Format::Anthropic).is_empty());
    }
}
