//! Reading a [`Part`] from JSON in one pass.
//!
//! A part is an object tagged by `"type"`. serde's internally tagged enums
//! buffer every field before they know the variant, and a buffered value can no
//! longer be kept verbatim (see [`JsonText`]); so this reader takes the fields
//! itself. When `type` comes first — as in everything Stowage writes — each
//! field is read straight into its variant's slot, once. Fields before `type`
//! are kept as raw JSON and read when the variant is known. Fields the variant
//! does not have are skipped, as serde's derive does; a repeated field is an
//! error. Needs `serde_json`'s deserializer (raw values).

use std::fmt;

use serde::de::{self, DeserializeOwned, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::json::JsonText;
use super::message::{MediaSource, Part};

const VARIANTS: &[&str] = &["text", "thinking", "tool_call", "tool_result", "media", "provider"];

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    Media,
    Provider,
}

/// Every field any variant has.
const FIELDS: &[&str] = &[
    "text",
    "signature",
    "redacted",
    "id",
    "name",
    "arguments",
    "call_id",
    "content",
    "is_error",
    "mime_type",
    "source",
    "format",
    "value",
    "extra",
];

impl Kind {
    /// Whether `field` belongs to this variant (`extra` belongs to all).
    fn has(self, field: &str) -> bool {
        let fields: &[&str] = match self {
            Kind::Text => &["text"],
            Kind::Thinking => &["text", "signature", "redacted"],
            Kind::ToolCall => &["id", "name", "arguments"],
            Kind::ToolResult => &["call_id", "content", "is_error"],
            Kind::Media => &["mime_type", "source", "name"],
            Kind::Provider => &["format", "value"],
        };
        field == "extra" || fields.contains(&field)
    }
}

/// A key of a part's object, read without allocating.
enum Key {
    Type,
    Field(&'static str),
    /// No variant has it: skipped.
    Other,
}

/// Reads names (of keys and of variants) by borrowing when it can.
struct NameVisitor<T>(fn(&str) -> Result<T, String>);

impl<T> Visitor<'_> for NameVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.0)(v).map_err(E::custom)
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(NameVisitor(|name| {
            Ok(match name {
                "type" => Key::Type,
                _ => FIELDS.iter().find(|f| **f == name).map_or(Key::Other, |f| Key::Field(f)),
            })
        }))
    }
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(NameVisitor(|name| {
            Ok(match name {
                "text" => Kind::Text,
                "thinking" => Kind::Thinking,
                "tool_call" => Kind::ToolCall,
                "tool_result" => Kind::ToolResult,
                "media" => Kind::Media,
                "provider" => Kind::Provider,
                other => return Err(format!("unknown variant `{other}`, expected one of {}", VARIANTS.join(", "))),
            })
        }))
    }
}

/// Where the next field's value comes from: the object being read, or a raw
/// value kept from before `type` was known.
enum Source<'s, A> {
    Map(&'s mut A),
    Raw(&'s RawValue),
}

impl<'de, A: MapAccess<'de>> Source<'_, A> {
    fn value<T: DeserializeOwned>(self) -> Result<T, A::Error> {
        match self {
            Source::Map(map) => map.next_value(),
            Source::Raw(raw) => serde_json::from_str(raw.get()).map_err(de::Error::custom),
        }
    }
}

/// Every field any variant has; a variant reads only its own.
#[derive(Default)]
struct Fields {
    text: Option<String>,
    signature: Option<Option<String>>,
    redacted: Option<bool>,
    id: Option<String>,
    name: Option<Option<String>>,
    arguments: Option<String>,
    call_id: Option<String>,
    content: Option<String>,
    is_error: Option<bool>,
    mime_type: Option<String>,
    source: Option<MediaSource>,
    format: Option<String>,
    value: Option<JsonText>,
    extra: Option<Option<JsonText>>,
}

fn put<'de, T: DeserializeOwned, A: MapAccess<'de>>(
    slot: &mut Option<T>,
    field: &'static str,
    source: Source<'_, A>,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(field));
    }
    *slot = Some(source.value()?);
    Ok(())
}

fn required<T, E: de::Error>(slot: Option<T>, field: &'static str) -> Result<T, E> {
    slot.ok_or_else(|| E::missing_field(field))
}

impl Fields {
    /// Reads `field` of a `kind` part; the caller has checked it belongs there.
    fn read<'de, A: MapAccess<'de>>(&mut self, field: &str, source: Source<'_, A>) -> Result<(), A::Error> {
        match field {
            "text" => put(&mut self.text, "text", source),
            "signature" => put(&mut self.signature, "signature", source),
            "redacted" => put(&mut self.redacted, "redacted", source),
            "id" => put(&mut self.id, "id", source),
            "name" => put(&mut self.name, "name", source),
            "arguments" => put(&mut self.arguments, "arguments", source),
            "call_id" => put(&mut self.call_id, "call_id", source),
            "content" => put(&mut self.content, "content", source),
            "is_error" => put(&mut self.is_error, "is_error", source),
            "mime_type" => put(&mut self.mime_type, "mime_type", source),
            "source" => put(&mut self.source, "source", source),
            "format" => put(&mut self.format, "format", source),
            "value" => put(&mut self.value, "value", source),
            "extra" => put(&mut self.extra, "extra", source),
            // `Kind::has` admits no other field; should it ever, refuse it
            // rather than store it under another name.
            other => Err(de::Error::unknown_field(other, &[])),
        }
    }

    fn build<E: de::Error>(self, kind: Kind) -> Result<Part, E> {
        let extra = self.extra.flatten();
        Ok(match kind {
            Kind::Text => Part::Text { text: required(self.text, "text")?, extra },
            Kind::Thinking => Part::Thinking {
                text: required(self.text, "text")?,
                signature: self.signature.flatten(),
                redacted: self.redacted.unwrap_or(false),
                extra,
            },
            Kind::ToolCall => Part::ToolCall {
                id: required(self.id, "id")?,
                name: required(self.name, "name")?.ok_or_else(|| E::invalid_type(de::Unexpected::Unit, &"a string"))?,
                arguments: required(self.arguments, "arguments")?,
                extra,
            },
            Kind::ToolResult => Part::ToolResult {
                call_id: required(self.call_id, "call_id")?,
                content: required(self.content, "content")?,
                is_error: self.is_error.unwrap_or(false),
                extra,
            },
            Kind::Media => Part::Media {
                mime_type: required(self.mime_type, "mime_type")?,
                source: required(self.source, "source")?,
                name: self.name.flatten(),
                extra,
            },
            Kind::Provider => Part::Provider {
                format: required(self.format, "format")?,
                value: required(self.value, "value")?,
                extra,
            },
        })
    }
}

struct PartVisitor;

impl<'de> Visitor<'de> for PartVisitor {
    type Value = Part;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a message part (an object tagged by \"type\")")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Part, A::Error> {
        let mut kind: Option<Kind> = None;
        let mut early: Vec<(&'static str, Box<RawValue>)> = Vec::new();
        let mut fields = Fields::default();
        while let Some(key) = map.next_key::<Key>()? {
            match (key, kind) {
                (Key::Type, Some(_)) => return Err(de::Error::duplicate_field("type")),
                (Key::Type, None) => {
                    let k: Kind = map.next_value()?;
                    kind = Some(k);
                    for (field, raw) in std::mem::take(&mut early) {
                        if k.has(field) {
                            fields.read::<A>(field, Source::Raw(&raw))?;
                        }
                    }
                }
                (Key::Field(field), Some(k)) if k.has(field) => fields.read(field, Source::Map(&mut map))?,
                (Key::Field(field), None) => early.push((field, map.next_value()?)),
                (Key::Field(_) | Key::Other, _) => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let kind = kind.ok_or_else(|| de::Error::missing_field("type"))?;
        fields.build(kind)
    }
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(PartVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(json: &str) -> Result<Part, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn every_variant_round_trips_with_json_text_verbatim() -> Result<(), Box<dyn std::error::Error>> {
        let extra = Some(JsonText::parse(r#"{"anthropic": {"cache_control": {"type":"ephemeral"}}}"#)?);
        let parts = vec![
            Part::Text { text: "héllo \"q\"\n".into(), extra: extra.clone() },
            Part::Thinking { text: "t".into(), signature: Some("sig".into()), redacted: true, extra: None },
            Part::ToolCall { id: "c1".into(), name: "f".into(), arguments: "{\"a\": 1".into(), extra: None },
            Part::ToolResult { call_id: "c1".into(), content: "ok".into(), is_error: true, extra: extra.clone() },
            Part::media("image/png", MediaSource::Url("https://x/y.png".into()), Some("y".into())),
            Part::media("image/png", MediaSource::Inline(vec![0, 1, 255]), None),
            Part::Provider { format: "openai".into(), value: JsonText::parse("{\"z\": 1.50,  \"a\": [ ]}")?, extra },
        ];
        for p in parts {
            let text = serde_json::to_string(&p)?;
            let back = part(&text)?;
            assert_eq!(back, p, "{text}");
            assert_eq!(serde_json::to_string(&back)?, text, "verbatim");
        }
        Ok(())
    }

    #[test]
    fn type_may_come_anywhere_and_unknown_fields_are_skipped() -> Result<(), Box<dyn std::error::Error>> {
        let p = part(r#"{"content": "ok", "extra": {"k": [1, 2]}, "text": 5, "call_id": "c", "type": "tool_result"}"#)?;
        let Part::ToolResult { call_id, content, is_error, extra } = p else { panic!("variant") };
        assert_eq!((call_id.as_str(), content.as_str(), is_error), ("c", "ok", false));
        assert_eq!(extra.map(JsonText::into_string).as_deref(), Some(r#"{"k": [1, 2]}"#));
        let p = part(r#"{"type": "text", "text": "a", "content": 7, "future": {"x": null}, "extra": null}"#)?;
        assert_eq!(p, Part::text("a"));
        Ok(())
    }

    #[test]
    fn malformed_parts_are_errors() {
        for bad in [
            r#"{"text": "a"}"#,
            r#"{"type": "text"}"#,
            r#"{"type": "text", "text": "a", "text": "b"}"#,
            r#"{"text": "a", "type": "text", "text": "b"}"#,
            r#"{"type": "text", "type": "text", "text": "a"}"#,
            r#"{"type": "video", "text": "a"}"#,
            r#"{"type": "tool_call", "id": "c", "name": null, "arguments": "{}"}"#,
            r#"{"type": "tool_result", "call_id": "c", "content": 1}"#,
            r#"{"type": "provider", "format": "x", "value": nope}"#,
            r#"["text", "a"]"#,
        ] {
            assert!(part(bad).is_err(), "{bad}");
        }
    }
}
