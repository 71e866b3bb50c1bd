//! Moving transcripts in and out, without loss (docs/formats.md is the
//! specification).
//!
//! Five formats, as JSON Lines (one conversation per line) or as single values:
//! Stowage's own (`stowage`), OpenAI Chat Completions messages (`openai`),
//! Anthropic Messages (`anthropic`), OpenAI Responses input items
//! (`openai-responses`) and Vercel AI SDK UI messages (`ai-sdk-ui`).
//!
//! **Lossless.** Provider JSON is read as an exact tree ([`raw`]): numbers keep
//! their spelling, duplicate keys are refused where they matter, nothing passes
//! through `serde_json::Value`. Each native unit maps to modelled fields plus a
//! residue — what the fields do not derive — kept in the part's, message's or
//! conversation's `extra` under the format's name and put back in place on
//! export. Blocks, parts and items Stowage does not model are opaque provider
//! parts, rendered byte for byte.
//!
//! **Modes.** [`Mode::Keep`] (the default) adds `x_stowage` members for what a
//! format has no slot for (ids, timestamps, metadata, costs, and whatever a
//! conversion from another format could not express), so
//! `parse(render(t, Keep)) == t` for every transcript and format.
//! [`Mode::Pure`] emits only what the provider's API accepts, and reports what
//! it left out ([`Dropped`]).
//!
//! **Single values.** [`parse_message`] and [`render_messages`] convert one
//! native value at a time (a Chat or Anthropic message, a Responses item, a
//! UIMessage), for servers and clients that store values as they come;
//! [`parse_values`] converts a list of them (keeping UIMessage boundaries).

mod ai_sdk_ui;
mod anthropic;
mod compare;
mod extension;
mod fields;
mod ids;
mod keep;
mod line;
mod media;
mod openai;
mod parts;
mod pure;
mod raw;
mod residue;
mod responses;
mod stowage;
mod values;

#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;

pub use self::fields::FieldError;
pub use self::ids::{ParsedLine, assign_ids, parse_file};
pub use self::pure::Dropped;
use self::pure::Out;
use self::raw::Node;
pub use self::values::{ValueError, parse_values};
use crate::error::Error;
use crate::model::{ConversationMeta, DisplayRecord, Message, NewMessage};

/// A transcript format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    Stowage,
    OpenAi,
    Anthropic,
    OpenAiResponses,
    AiSdkUi,
}

impl Format {
    pub const ALL: [Format; 5] =
        [Format::Stowage, Format::OpenAi, Format::Anthropic, Format::OpenAiResponses, Format::AiSdkUi];

    /// The name on the command line and in `extra` keys.
    pub fn name(self) -> &'static str {
        match self {
            Format::Stowage => "stowage",
            Format::OpenAi => "openai",
            Format::Anthropic => "anthropic",
            Format::OpenAiResponses => "openai-responses",
            Format::AiSdkUi => "ai-sdk-ui",
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
        Format::ALL.into_iter().find(|f| f.name() == s).ok_or_else(|| {
            let known: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
            Error::InvalidInput(format!("unknown format `{s}` (known: {})", known.join(", ")))
        })
    }
}

/// How an export treats what the provider's API would not accept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Everything comes back, with `x_stowage` where the format has no slot.
    #[default]
    Keep,
    /// Only what the provider accepts in a request; see [`Rendered::dropped`].
    Pure,
}

/// One conversation in transit.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Transcript {
    /// `None` when a foreign file does not say; [`assign_ids`] makes one.
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

/// A line of an import file that cannot be mapped: its number (1-based, blank
/// lines counted), the field (`messages[2].content[0].is_error`, `column 17`
/// for JSON syntax, `(line)` for the line itself) and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {field}: {reason}")]
pub struct LineError {
    pub line: usize,
    pub field: String,
    pub reason: String,
}

impl LineError {
    fn at(line: usize, e: FieldError) -> Self {
        Self { line, field: e.field, reason: e.reason }
    }
}

/// A rendered line and what a pure export left out of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    pub text: String,
    pub dropped: Dropped,
}

/// Rendered native values and what a pure export left out of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderedValues {
    pub values: Vec<String>,
    pub dropped: Dropped,
}

fn parse_json(text: &str, line: usize) -> Result<Node<'_>, LineError> {
    Node::parse(text).map_err(|e| LineError {
        line,
        field: format!("column {}", e.column()),
        reason: format!("not valid JSON: {e}"),
    })
}

/// Guesses the format of a line (docs/formats.md §1.1); `--format` is
/// authoritative where this guesses wrong.
fn detect(line: &Node<'_>) -> Format {
    const ANTHROPIC_BLOCKS: &[&str] = &[
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "image",
        "document",
        "search_result",
        "server_tool_use",
        "mcp_tool_use",
        "container_upload",
        "compaction",
    ];
    let Some(object) = line.as_object() else { return Format::OpenAi };
    if object.contains("conversation_id") {
        return Format::Stowage;
    }
    if object.contains("items") {
        return Format::OpenAiResponses;
    }
    let messages: Vec<&raw::Object<'_>> =
        object.get("messages").and_then(Node::as_array).unwrap_or(&[]).iter().filter_map(Node::as_object).collect();
    if messages.iter().any(|m| m.contains("parts")) {
        return Format::AiSdkUi;
    }
    let anthropic_message = |m: &&raw::Object<'_>| {
        ["stop_reason", "usage", "stop_sequence"].iter().any(|k| m.contains(k))
            || m.get("type").and_then(Node::as_str).and_then(std::result::Result::ok).as_deref() == Some("message")
    };
    let anthropic_block = |b: &Node<'_>| {
        let kind = fields::type_of(b);
        let kind = kind.as_deref().unwrap_or("");
        ANTHROPIC_BLOCKS.contains(&kind)
            || kind.ends_with("_tool_result")
            || b.as_object().is_some_and(|o| o.contains("cache_control") || o.contains("citations"))
    };
    let blocks = messages.iter().filter_map(|m| m.get("content")).filter_map(Node::as_array).flatten();
    if object.contains("system") || messages.iter().any(anthropic_message) || blocks.clone().any(anthropic_block) {
        return Format::Anthropic;
    }
    Format::OpenAi
}

/// Parses one line (`line` is its 1-based number, for errors); `format: None`
/// detects it. Nothing is lost: see the module documentation.
pub fn parse_line(format: Option<Format>, line: usize, text: &str) -> Result<(Format, Transcript), LineError> {
    let node = parse_json(text, line)?;
    if node.as_object().is_none() {
        return Err(LineError { line, field: "(line)".into(), reason: "expected a JSON object per line".into() });
    }
    let format = format.unwrap_or_else(|| detect(&node));
    let transcript = match format {
        Format::Stowage => stowage::parse_line(&node, text),
        Format::OpenAi => openai::parse_line(&node),
        Format::Anthropic => anthropic::parse_line(&node),
        Format::OpenAiResponses => responses::parse_line(&node),
        Format::AiSdkUi => ai_sdk_ui::parse_line(&node),
    }
    .map_err(|e| LineError::at(line, e))?;
    Ok((format, transcript))
}

/// Renders one line (no trailing newline). `Mode::Pure` is refused for the
/// `stowage` format, which has no provider to be pure for.
pub fn render_line(format: Format, transcript: &Transcript, mode: Mode) -> Result<Rendered, Error> {
    let mut out = Out::new(mode == Mode::Pure);
    let node = match format {
        Format::Stowage => {
            refuse_pure(mode)?;
            return Ok(Rendered { text: stowage::render_line(transcript)?, dropped: Dropped::default() });
        }
        Format::OpenAi => openai::render_line(transcript, &mut out),
        Format::Anthropic => anthropic::render_line(transcript, &mut out),
        Format::OpenAiResponses => responses::render_line(transcript, &mut out),
        Format::AiSdkUi => ai_sdk_ui::render_line(transcript, &mut out),
    };
    Ok(Rendered { text: node.to_text(), dropped: out.dropped })
}

fn refuse_pure(mode: Mode) -> Result<(), Error> {
    match mode {
        Mode::Pure => Err(Error::InvalidInput("pure export applies to provider formats, not `stowage`".into())),
        Mode::Keep => Ok(()),
    }
}

/// Converts one native value: a Chat Completions message (`openai`), an
/// Anthropic message, a Responses input item, a `UIMessage` (`ai-sdk-ui`) or a
/// Stowage message. A UIMessage can hold several Stowage messages (each step,
/// and the tool results of each step), hence the `Vec`; every other value is
/// one message. Values carry their residues and honour `x_stowage` exactly as
/// lines do; grouping across values (consecutive Chat tool messages, runs of
/// Responses items) is the caller's: each value here is its own message. A
/// list of values: [`parse_values`].
pub fn parse_message(format: Format, text: &str) -> Result<Vec<NewMessage>, FieldError> {
    values::parse_node(format, &values::parse_json(text)?, text, false)
}

/// Renders messages as native values (JSON texts): Chat messages (a tool
/// message gives one per result), Anthropic messages (every role as a message:
/// the `system` prompt exists only on lines), Responses items, UIMessages (one
/// per user or system message, one per run of assistant and tool messages) or
/// Stowage messages. Keep mode adds `x_stowage` to the values as lines do.
/// Takes stored [`Message`]s or [`NewMessage`]s.
pub fn render_messages<M: Clone + Into<NewMessage>>(
    format: Format,
    messages: &[M],
    mode: Mode,
) -> Result<RenderedValues, Error> {
    let messages: Vec<NewMessage> = messages.iter().cloned().map(Into::into).collect();
    let mut out = Out::new(mode == Mode::Pure);
    let units = match format {
        Format::Stowage => {
            refuse_pure(mode)?;
            let values = messages.iter().map(stowage::render_message).collect::<Result<_, _>>()?;
            return Ok(RenderedValues { values, dropped: Dropped::default() });
        }
        Format::OpenAi => openai::render_units(&messages, &mut out),
        Format::Anthropic => anthropic::render_units(&messages, &mut out),
        Format::OpenAiResponses => responses::render_units(&messages, &mut out),
        Format::AiSdkUi => ai_sdk_ui::render_units(&messages, &mut out),
    };
    Ok(RenderedValues { values: units.iter().map(Node::to_text).collect(), dropped: out.dropped })
}

/// Parses JSON Lines of Stowage messages (one `NewMessage` per line, blank
/// lines skipped); the first bad line is an error naming the line and field.
pub fn parse_messages(text: &str) -> Result<Vec<NewMessage>, LineError> {
    let mut messages = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let node = parse_json(line, index + 1)?;
        if node.as_object().is_none() {
            return Err(LineError {
                line: index + 1,
                field: "(line)".into(),
                reason: "expected a message object".into(),
            });
        }
        messages.push(stowage::parse_message(&node, line).map_err(|e| LineError::at(index + 1, e))?);
    }
    Ok(messages)
}

/// Whether two JSON texts hold the same value: objects compared member-wise
/// ignoring order, strings by value, numbers by exact decimal value (`1.50` and
/// `15e-1` are equal, `-0` and `0` are not). What "lossless" means here.
pub fn json_equivalent(a: &str, b: &str) -> bool {
    compare::equivalent_text(a, b)
}
