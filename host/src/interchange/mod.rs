//! Moving transcripts in and out: JSON Lines, one conversation per line, in
//! Stowage's own format, as OpenAI Chat Completions messages, or as Anthropic
//! Messages API messages.
//!
//! Round trips are lossless in every format. The foreign formats carry what they
//! can natively (roles, text, tool calls and results, images, Anthropic thinking
//! with signatures, usage and stop reasons); each message is then derived back from
//! those native fields, and whatever that derivation would lose (ids, timestamps,
//! metadata, costs, OpenAI thinking, exact part order) travels in an `x_stowage`
//! object that the providers' own tools ignore. Foreign data without `x_stowage`
//! imports as far as it maps; what cannot be mapped is an error naming the line and
//! the field.

mod anthropic;
mod fields;
mod openai;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use self::fields::FieldError;
use crate::display::model::DisplayRecord;
use crate::error::Error;
use crate::model::{ConversationMeta, JsonText, Message, NewMessage, Part, Role, StopReason, Timestamp, Usage};

/// A transcript format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    Stowage,
    OpenAi,
    Anthropic,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Stowage => "stowage",
            Format::OpenAi => "openai",
            Format::Anthropic => "anthropic",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "stowage" => Ok(Format::Stowage),
            "openai" => Ok(Format::OpenAi),
            "anthropic" => Ok(Format::Anthropic),
            other => Err(Error::InvalidInput(format!("unknown format `{other}` (known: stowage, openai, anthropic)"))),
        }
    }
}

/// One conversation in transit.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Transcript {
    /// `None` when a foreign file does not say; the importer then makes one.
    pub conversation_id: Option<String>,
    pub meta: ConversationMeta,
    /// In order; ids and timestamps set when they came from a store.
    pub messages: Vec<NewMessage>,
    /// Display records (Stowage format only).
    pub display: Vec<DisplayRecord>,
}

impl Transcript {
    /// A stored conversation, ready to export.
    pub fn from_stored(
        conversation_id: &str,
        meta: ConversationMeta,
        messages: Vec<Message>,
        display: Vec<DisplayRecord>,
    ) -> Self {
        Self {
            conversation_id: Some(conversation_id.to_owned()),
            meta,
            messages: messages.into_iter().map(NewMessage::from).collect(),
            display,
        }
    }
}

impl From<Message> for NewMessage {
    fn from(m: Message) -> Self {
        NewMessage {
            id: Some(m.id),
            role: m.role,
            parts: m.parts,
            usage: m.usage,
            stop_reason: m.stop_reason,
            created_at: Some(m.created_at),
            metadata: m.metadata,
        }
    }
}

/// A line of an import file that cannot be mapped.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {field}: {reason}")]
pub struct LineError {
    pub line: usize,
    pub field: String,
    pub reason: String,
}

/// Conversation-level extension carried by the foreign formats. JSON-valued fields
/// travel as strings: a provider file is handled as parsed JSON, which would not
/// keep their exact text.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LineExtension {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    conversation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<String>,
    /// Anthropic: the extension of the message exported as the top-level `system`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    system: Option<MessageExtension>,
}

fn is_default_meta(meta: &ConversationMeta) -> bool {
    *meta == ConversationMeta::default()
}

/// Per-message extension: what the foreign format could not carry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageExtension {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created_at: Option<Timestamp>,
    /// JSON text, as a string (see [`LineExtension`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    role: Option<Role>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parts: Option<Vec<Part>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usage: Option<Usage>,
    /// The exact stop reason, where the format has no slot or a coarser one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stop_reason: Option<StopReason>,
    /// OpenAI: this message continues the previous one (a tool message with
    /// several results is several OpenAI messages).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    continues: bool,
}

impl MessageExtension {
    fn is_empty(&self) -> bool {
        *self == MessageExtension::default()
    }
}

/// What a foreign format carried natively for one message.
struct Derived {
    role: Role,
    parts: Vec<Part>,
    usage: Option<Usage>,
    stop_reason: Option<StopReason>,
}

/// The extension that makes `derived` + extension == `message`.
fn residue(message: &NewMessage, derived: &Derived) -> MessageExtension {
    MessageExtension {
        id: message.id.clone(),
        created_at: message.created_at,
        metadata: message.metadata.as_ref().map(|m| m.as_str().to_owned()),
        role: (derived.role != message.role).then_some(message.role),
        parts: (derived.parts != message.parts).then(|| message.parts.clone()),
        usage: if derived.usage != message.usage { message.usage.clone() } else { None },
        stop_reason: if derived.stop_reason != message.stop_reason { message.stop_reason.clone() } else { None },
        continues: false,
    }
}

fn json_text(text: Option<String>, field: &str) -> fields::Result<Option<JsonText>> {
    text.map(|t| JsonText::parse(t).or_else(|_| fields::fail(field, "not valid JSON text"))).transpose()
}

/// `derived` completed by its extension (`field` names the message for errors).
fn complete(derived: Derived, ext: MessageExtension, field: &str) -> fields::Result<NewMessage> {
    Ok(NewMessage {
        id: ext.id,
        role: ext.role.unwrap_or(derived.role),
        parts: ext.parts.unwrap_or(derived.parts),
        usage: ext.usage.or(derived.usage),
        stop_reason: ext.stop_reason.or(derived.stop_reason),
        created_at: ext.created_at,
        metadata: json_text(ext.metadata, &format!("{field}.x_stowage.metadata"))?,
    })
}

/// Stowage's own line format.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StowageLine {
    conversation_id: Option<String>,
    #[serde(default, skip_serializing_if = "is_default_meta")]
    meta: ConversationMeta,
    messages: Vec<NewMessage>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    display: Vec<DisplayRecord>,
}

/// Guesses the format of one parsed line.
pub fn detect(line: &Value) -> Format {
    let messages = line.get("messages").and_then(Value::as_array);
    let has = |pred: &dyn Fn(&Value) -> bool| messages.is_some_and(|m| m.iter().any(pred));
    if line.get("conversation_id").is_some() || has(&|m| m.get("parts").is_some()) {
        return Format::Stowage;
    }
    let anthropic_block = |b: &Value| {
        matches!(
            b.get("type").and_then(Value::as_str),
            Some("tool_use" | "tool_result" | "thinking" | "redacted_thinking" | "image" | "document")
        )
    };
    if line.get("system").is_some()
        || has(&|m| m.get("content").and_then(Value::as_array).is_some_and(|c| c.iter().any(anthropic_block)))
    {
        return Format::Anthropic;
    }
    Format::OpenAi
}

fn line_error(line: usize, e: FieldError) -> LineError {
    LineError { line, field: e.field, reason: e.reason }
}

/// Parses one line (1-based `line` for messages); `format` `None` auto-detects.
pub fn parse_line(format: Option<Format>, line: usize, text: &str) -> Result<(Format, Transcript), LineError> {
    let value: Value = serde_json::from_str(text).map_err(|e| LineError {
        line,
        field: format!("column {}", e.column()),
        reason: format!("not valid JSON: {e}"),
    })?;
    if !value.is_object() {
        return Err(LineError { line, field: "(line)".into(), reason: "expected a JSON object per line".into() });
    }
    let format = format.unwrap_or_else(|| detect(&value));
    let transcript = match format {
        Format::Stowage => {
            let l: StowageLine = fields::typed_str(text, "(line)").map_err(|e| line_error(line, e))?;
            Transcript { conversation_id: l.conversation_id, meta: l.meta, messages: l.messages, display: l.display }
        }
        Format::OpenAi => openai::parse(&value).map_err(|e| line_error(line, e))?,
        Format::Anthropic => anthropic::parse(&value).map_err(|e| line_error(line, e))?,
    };
    Ok((format, transcript))
}

/// Parses JSON Lines of Stowage messages (one `NewMessage` per line, blank lines
/// skipped); the first bad line is an error naming the line and field.
pub fn parse_messages(text: &str) -> Result<Vec<NewMessage>, LineError> {
    let mut messages = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line).map_err(|e| LineError {
            line: index + 1,
            field: format!("column {}", e.column()),
            reason: format!("not valid JSON: {e}"),
        })?;
        if !value.is_object() {
            return Err(LineError {
                line: index + 1,
                field: "(line)".into(),
                reason: "expected a message object".into(),
            });
        }
        messages.push(fields::typed_str(line, "(line)").map_err(|e| line_error(index + 1, e))?);
    }
    Ok(messages)
}

/// Renders one line (no trailing newline).
pub fn render_line(format: Format, transcript: &Transcript) -> Result<String, Error> {
    let value = match format {
        // Straight to text: JSON-valued fields are embedded verbatim.
        Format::Stowage => {
            let line = StowageLine {
                conversation_id: transcript.conversation_id.clone(),
                meta: transcript.meta.clone(),
                messages: transcript.messages.clone(),
                display: transcript.display.clone(),
            };
            return serde_json::to_string(&line).map_err(|e| Error::Internal(format!("encoding a transcript: {e}")));
        }
        Format::OpenAi => openai::render(transcript)?,
        Format::Anthropic => anthropic::render(transcript)?,
    };
    serde_json::to_string(&value).map_err(|e| Error::Internal(format!("encoding a transcript: {e}")))
}

fn line_extension(transcript: &Transcript, system: Option<MessageExtension>) -> Option<Value> {
    let meta = &transcript.meta;
    let ext = LineExtension {
        conversation_id: transcript.conversation_id.clone(),
        agent_id: meta.agent_id.clone(),
        title: meta.title.clone(),
        metadata: meta.metadata.as_ref().map(|m| m.as_str().to_owned()),
        system,
    };
    (ext != LineExtension::default()).then(|| json!(ext))
}

/// The line extension, and the conversation it describes.
fn parse_line_extension(value: &Value) -> fields::Result<(LineExtension, Option<String>, ConversationMeta)> {
    let ext: LineExtension = match value.get("x_stowage") {
        None | Some(Value::Null) => LineExtension::default(),
        Some(ext) => fields::typed(ext, "x_stowage")?,
    };
    let meta = ConversationMeta {
        agent_id: ext.agent_id.clone(),
        title: ext.title.clone(),
        metadata: json_text(ext.metadata.clone(), "x_stowage.metadata")?,
    };
    let id = ext.conversation_id.clone();
    Ok((ext, id, meta))
}

fn parse_message_extension(message: &Value, field: &str) -> fields::Result<MessageExtension> {
    match message.get("x_stowage") {
        None | Some(Value::Null) => Ok(MessageExtension::default()),
        Some(ext) => fields::typed(ext, &format!("{field}.x_stowage")),
    }
}

fn attach(mut message: Value, ext: &MessageExtension) -> Value {
    if !ext.is_empty()
        && let Some(map) = message.as_object_mut()
    {
        map.insert("x_stowage".into(), json!(ext));
    }
    message
}

/// `data:<mime>;base64,<data>` for inline media in formats that take URLs.
fn data_url(mime: &str, bytes: &[u8]) -> String {
    use base64::Engine;
    format!("data:{mime};base64,{}", base64::engine::general_purpose::STANDARD.encode(bytes))
}

fn decode_base64(data: &str, field: &str) -> fields::Result<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .or_else(|e| fields::fail(field, format!("invalid base64: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::MediaSource;

    fn rich() -> Result<Transcript, Error> {
        let meta = ConversationMeta {
            agent_id: Some("a".into()),
            title: Some("T".into()),
            metadata: Some(JsonText::parse("{\"k\": 1}")?),
        };
        let messages = vec![
            NewMessage::text(Role::System, "be brief").with_id("s").with_created_at(1),
            NewMessage::new(Role::Developer, vec![Part::text("dev note")]).with_id("d").with_created_at(2),
            NewMessage::new(
                Role::User,
                vec![
                    Part::text("look"),
                    Part::Media {
                        mime_type: "image/png".into(),
                        source: MediaSource::Inline(vec![0, 1, 255]),
                        name: None,
                    },
                    Part::Media {
                        mime_type: "image/jpeg".into(),
                        source: MediaSource::Url("https://x/y.jpg".into()),
                        name: Some("y".into()),
                    },
                ],
            )
            .with_id("u")
            .with_created_at(3),
            NewMessage::new(
                Role::Assistant,
                vec![
                    Part::thinking("hmm", Some("sig==".into())),
                    Part::Thinking { text: "opaque".into(), signature: None, redacted: true },
                    Part::text("calling"),
                    Part::tool_call("c1", "f", r#"{"a":1,"b":[true,null]}"#),
                    Part::tool_call("c2", "g", "{not json"),
                    Part::text("after the calls"),
                ],
            )
            .with_id("a1")
            .with_created_at(4)
            .with_usage(Usage { input_tokens: 10, output_tokens: 5, cached_tokens: 2, cost: Some(0.5) })
            .with_stop_reason(StopReason::ToolUse)
            .with_metadata(JsonText::parse("{\"model\": \"m\"}")?),
            NewMessage::new(
                Role::Tool,
                vec![Part::tool_result("c1", "ok", false), Part::tool_result("c2", "bad args", true)],
            )
            .with_id("t1")
            .with_created_at(5),
            NewMessage::text(Role::Assistant, "done")
                .with_id("a2")
                .with_created_at(6)
                .with_stop_reason(StopReason::Other("pause_turn".into()))
                .with_usage(Usage { input_tokens: 1, output_tokens: 1, cached_tokens: 0, cost: None }),
            NewMessage::text(Role::System, "late system note").with_id("s2").with_created_at(7),
        ];
        Ok(Transcript { conversation_id: Some("conv".into()), meta, messages, display: vec![] })
    }

    #[test]
    fn every_format_round_trips_losslessly_and_is_detected() -> Result<(), Box<dyn std::error::Error>> {
        let original = rich()?;
        for format in [Format::Stowage, Format::OpenAi, Format::Anthropic] {
            let line = render_line(format, &original)?;
            let (detected, back) = parse_line(None, 1, &line)?;
            assert_eq!(detected, format, "detection of {format}");
            assert_eq!(back, original, "{format} round trip; line: {line}");
        }
        Ok(())
    }

    #[test]
    fn plain_provider_data_maps_without_extensions() -> Result<(), Box<dyn std::error::Error>> {
        let openai = r#"{"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]}"#;
        let (format, t) = parse_line(None, 1, openai)?;
        assert_eq!(format, Format::OpenAi);
        assert_eq!(t.messages.len(), 4);
        assert_eq!(t.messages[2].parts, vec![Part::tool_call("c", "f", "{}")]);
        assert_eq!(t.messages[3].role, Role::Tool);
        let anthropic = r#"{"system":"s","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"x"},{"type":"tool_use","id":"c","name":"f","input":{"q":"a"}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":4}},{"role":"user","content":[{"type":"tool_result","tool_use_id":"c","content":"r"}]}]}"#;
        let (format, t) = parse_line(None, 1, anthropic)?;
        assert_eq!(format, Format::Anthropic);
        assert_eq!(t.messages[0].role, Role::System);
        assert_eq!(t.messages[2].stop_reason, Some(StopReason::ToolUse));
        assert_eq!(t.messages[2].parts[1], Part::tool_call("c", "f", r#"{"q":"a"}"#));
        assert_eq!(t.messages[3].role, Role::Tool);
        Ok(())
    }

    #[test]
    fn unmappable_input_names_the_line_and_field() {
        let cases = [
            (r#"{"messages":[{"role":"function","content":"x"}]}"#, "messages[0].role"),
            (
                r#"{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{}}}]}]}"#,
                "messages[0].tool_calls[0].function.arguments",
            ),
            (
                r#"{"system":"s","messages":[{"role":"user","content":[{"type":"audio"}]}]}"#,
                "messages[0].content[0].type",
            ),
            (r#"{"conversation_id":"c","messages":[{"role":"robot","parts":[]}]}"#, "messages[0].role"),
            ("{not json", "column"),
        ];
        for (text, field) in cases {
            match parse_line(None, 7, text) {
                Err(e) => {
                    assert_eq!(e.line, 7);
                    assert!(e.field.starts_with(field), "{text}: field {:?}, want {field:?} ({})", e.field, e.reason);
                }
                Ok(t) => panic!("{text} parsed: {t:?}"),
            }
        }
    }
}
