//! Exact JSON: a tree whose leaves keep their source text.
//!
//! Provider data is never read through `serde_json::Value`, which refuses `1e400`,
//! rounds `12345678901234567890123` and keeps the last of duplicate keys. A
//! [`Node`] keeps every number, string and literal as the text it was written in,
//! keeps duplicate keys (so an object can be refused, or copied, as it came), and
//! remembers the exact source text of every object and array it was parsed from,
//! which is what [`Node::write`] emits until the node is changed.

mod scan;

use std::borrow::Cow;

use self::scan::Scanner;

/// One JSON value. Source nodes borrow from the text they were parsed from;
/// nodes built by the interchange own their text.
#[derive(Clone, Debug)]
pub enum Node<'a> {
    Object(Object<'a>),
    Array(Array<'a>),
    /// A string (with its quotes and escapes), number, `true`, `false` or `null`,
    /// exactly as written.
    Leaf(Cow<'a, str>),
}

/// A JSON object: members in source order, duplicates kept.
#[derive(Clone, Debug, Default)]
pub struct Object<'a> {
    members: Vec<(Cow<'a, str>, Node<'a>)>,
    /// The exact source text; dropped by every change.
    raw: Option<&'a str>,
}

/// A JSON array.
#[derive(Clone, Debug, Default)]
pub struct Array<'a> {
    items: Vec<Node<'a>>,
    raw: Option<&'a str>,
}

impl<'a> Node<'a> {
    /// Parses one JSON value; the error says where the text stops being JSON.
    pub fn parse(text: &'a str) -> Result<Node<'a>, serde_json::Error> {
        serde_json::from_str::<&serde_json::value::RawValue>(text)?;
        let mut scanner = Scanner { text, at: 0 };
        scanner.value().map_err(<serde_json::Error as serde::de::Error>::custom)
    }

    pub fn string(value: &str) -> Node<'static> {
        Node::Leaf(Cow::Owned(quote(value)))
    }

    pub fn number(value: u64) -> Node<'static> {
        Node::Leaf(Cow::Owned(value.to_string()))
    }

    pub fn bool(value: bool) -> Node<'static> {
        Node::Leaf(Cow::Borrowed(if value { "true" } else { "false" }))
    }

    pub fn null() -> Node<'static> {
        Node::Leaf(Cow::Borrowed("null"))
    }

    pub fn object(members: Vec<(&str, Node<'a>)>) -> Node<'a> {
        let members = members.into_iter().map(|(k, v)| (Cow::Owned(k.to_owned()), v)).collect();
        Node::Object(Object { members, raw: None })
    }

    pub fn array(items: Vec<Node<'a>>) -> Node<'a> {
        Node::Array(Array { items, raw: None })
    }

    pub fn as_object(&self) -> Option<&Object<'a>> {
        match self {
            Node::Object(object) => Some(object),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Node<'a>]> {
        match self {
            Node::Array(array) => Some(&array.items),
            _ => None,
        }
    }

    /// The decoded string; `None` for other values, an error for invalid Unicode
    /// (a lone surrogate escape).
    pub fn as_str(&self) -> Option<Result<Cow<'_, str>, String>> {
        match self {
            Node::Leaf(text) if text.starts_with('"') => Some(decode_string(text)),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Node::Leaf(text) if text == "true" => Some(true),
            Node::Leaf(text) if text == "false" => Some(false),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Node::Leaf(text) if text == "null")
    }

    /// The leaf's source text, when this is a number.
    pub fn as_number(&self) -> Option<&str> {
        match self {
            Node::Leaf(text) if text.starts_with(|c: char| c == '-' || c.is_ascii_digit()) => Some(text),
            _ => None,
        }
    }

    /// What kind of value this is, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Node::Object(_) => "an object",
            Node::Array(_) => "an array",
            Node::Leaf(text) if text.starts_with('"') => "a string",
            Node::Leaf(text) if text == "null" => "null",
            Node::Leaf(text) if text == "true" || text == "false" => "a boolean",
            Node::Leaf(_) => "a number",
        }
    }

    /// Appends the JSON text: the source text of unchanged parsed values, compact
    /// JSON with verbatim leaves otherwise.
    pub fn write(&self, out: &mut String) {
        match self {
            Node::Leaf(text) => out.push_str(text),
            Node::Object(Object { raw: Some(raw), .. }) | Node::Array(Array { raw: Some(raw), .. }) => {
                out.push_str(raw)
            }
            Node::Object(object) => {
                out.push('{');
                for (i, (key, value)) in object.members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&quote(key));
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
            Node::Array(array) => {
                out.push('[');
                for (i, item) in array.items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
        }
    }

    pub fn to_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    /// A copy that owns its text.
    pub fn into_owned(self) -> Node<'static> {
        match self {
            Node::Leaf(text) => Node::Leaf(Cow::Owned(text.into_owned())),
            Node::Object(object) => Node::Object(Object {
                members: object
                    .members
                    .into_iter()
                    .map(|(k, v)| (Cow::Owned(k.into_owned()), v.into_owned()))
                    .collect(),
                raw: None,
            }),
            Node::Array(array) => {
                Node::Array(Array { items: array.items.into_iter().map(Node::into_owned).collect(), raw: None })
            }
        }
    }
}

impl<'a> Object<'a> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn members(&self) -> &[(Cow<'a, str>, Node<'a>)] {
        &self.members
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The first member named `key`.
    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        self.members.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn contains(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// A key that appears more than once.
    pub fn duplicate_key(&self) -> Option<&str> {
        let mut seen = std::collections::HashSet::new();
        self.members.iter().map(|(k, _)| k.as_ref()).find(|k| !seen.insert(*k))
    }

    /// Replaces the first member named `key`, or appends one.
    pub fn set(&mut self, key: &str, value: Node<'a>) {
        self.raw = None;
        match self.members.iter_mut().find(|(k, _)| k == key) {
            Some(member) => member.1 = value,
            None => self.members.push((Cow::Owned(key.to_owned()), value)),
        }
    }

    /// Appends a member even when one of that name exists.
    pub fn push(&mut self, key: Cow<'a, str>, value: Node<'a>) {
        self.raw = None;
        self.members.push((key, value));
    }

    /// Removes the first member named `key`.
    pub fn remove(&mut self, key: &str) -> Option<Node<'a>> {
        let index = self.members.iter().position(|(k, _)| k == key)?;
        self.raw = None;
        Some(self.members.remove(index).1)
    }

    /// Keeps the members `keep` says yes to; returns the names removed.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &Node<'a>) -> bool) -> Vec<String> {
        let mut removed = Vec::new();
        self.members.retain(|(k, v)| {
            let kept = keep(k, v);
            if !kept {
                removed.push(k.to_string());
            }
            kept
        });
        if !removed.is_empty() {
            self.raw = None;
        }
        removed
    }

    pub fn into_node(self) -> Node<'a> {
        Node::Object(self)
    }
}

/// `value` as a JSON string literal.
pub fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Decodes a JSON string literal (with its quotes).
fn decode_string(literal: &str) -> Result<Cow<'_, str>, String> {
    if !literal.contains('\\') && literal.len() >= 2 {
        return Ok(Cow::Borrowed(&literal[1..literal.len() - 1]));
    }
    serde_json::from_str::<String>(literal).map(Cow::Owned).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_text_survives_exactly_until_changed() -> Result<(), serde_json::Error> {
        let text = r#"{ "n": 1e400, "big":12345678901234567890123, "s":"a\u00e9\udc00", "d":1,"d":2, "x":[ 1.50 ] }"#;
        let node = Node::parse(text)?;
        assert_eq!(node.to_text(), text);
        let Node::Object(mut object) = node else { panic!("object") };
        assert_eq!(object.duplicate_key(), Some("d"));
        assert_eq!(object.get("s").and_then(Node::as_str).map(|r| r.is_err()), Some(true));
        assert_eq!(object.get("x").map(Node::to_text).as_deref(), Some("[ 1.50 ]"));
        object.remove("s");
        assert_eq!(
            object.into_node().to_text(),
            r#"{"n":1e400,"big":12345678901234567890123,"d":1,"d":2,"x":[ 1.50 ]}"#
        );
        assert!(Node::parse("{\"a\":1").is_err());
        Ok(())
    }

    #[test]
    fn quoting_round_trips() -> Result<(), serde_json::Error> {
        let tricky = "q\" b\\ \n\t\u{0} \u{2028} 😀";
        let literal = quote(tricky);
        assert_eq!(serde_json::from_str::<String>(&literal)?, tricky);
        assert_eq!(Node::string(tricky).as_str().and_then(Result::ok).as_deref(), Some(tricky));
        Ok(())
    }
}
