//! `?format=` and `?mode=`: which transcript format message bodies use.
//!
//! The hook into `stowage::interchange`, used by every route that carries
//! messages: [`decode`] for request bodies (append, replace, display
//! save-message), [`encode`] for answers (load, load-all, pop). Formats:
//! `stowage` (the default: the store's own JSON model, decoded with serde here),
//! `openai` (Chat Completions messages), `anthropic` (Messages API messages),
//! `openai-responses` (Responses input items, what the OpenAI Agents SDK
//! stores) and `ai-sdk-ui` (Vercel AI SDK `UIMessage`s). A name interchange does
//! not know is a 400 `unsupported_format` naming the known ones — never a silent
//! fallback to `stowage`.
//!
//! Conversion is per value (`interchange::parse_values`): each request item
//! becomes its own message(s) — a `UIMessage` may be several, every other value
//! is one — and grouping across items is not done, but UIMessage boundaries are
//! kept: an assistant UIMessage right after another one in the same request is
//! marked to start a UIMessage of its own, so the two come back as two (not
//! merged, as a run of assistant messages is rendered). Answers render the page's
//! messages (`interchange::render_messages`), so a `UIMessage` whose steps span a
//! page boundary is split there; load-all returns whole ones. `mode=keep` (the
//! default) adds `x_stowage` where a format has no slot, so nothing is lost;
//! `mode=pure` emits only what the provider's API accepts (for sending the items
//! to a model) and lists what it left out in `dropped`.

use serde::Serialize;
use serde_json::value::RawValue;
use stowage::interchange::{self, Format, Mode};
use stowage::{Message, NewMessage};

use crate::errors::{ApiError, Code};
use crate::extract::decode_json;

/// A format of `?format=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WireFormat(pub Format);

impl WireFormat {
    pub const STOWAGE: WireFormat = WireFormat(Format::Stowage);

    /// The format of `?format=` (absent: `stowage`).
    pub fn parse(name: Option<&str>) -> Result<Self, ApiError> {
        let Some(name) = name else { return Ok(Self::STOWAGE) };
        Format::ALL.into_iter().find(|f| f.name() == name).map(WireFormat).ok_or_else(|| {
            let known: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
            ApiError::new(
                Code::UnsupportedFormat,
                format!("format `{}` is not supported (supported: {})", name.escape_debug(), known.join(", ")),
            )
        })
    }

    pub fn name(self) -> &'static str {
        self.0.name()
    }
}

/// `?mode=keep|pure` of answers carrying messages (absent: keep).
pub fn parse_mode(mode: Option<&str>, format: WireFormat) -> Result<Mode, ApiError> {
    match mode {
        None | Some("keep") => Ok(Mode::Keep),
        Some("pure") if format == WireFormat::STOWAGE => {
            Err(ApiError::new(Code::InvalidInput, "mode=pure applies to provider formats, not `stowage`"))
        }
        Some("pure") => Ok(Mode::Pure),
        Some(_) => Err(ApiError::new(Code::InvalidInput, "mode must be keep or pure")),
    }
}

/// Request items in `format` → messages to store.
pub fn decode(format: WireFormat, items: &[Box<RawValue>]) -> Result<Vec<NewMessage>, ApiError> {
    if format != WireFormat::STOWAGE {
        let texts: Vec<&str> = items.iter().map(|item| item.get()).collect();
        return interchange::parse_values(format.0, &texts).map_err(|e| {
            let field = if e.field.is_empty() || e.field == "(line)" { String::new() } else { format!(".{}", e.field) };
            let i = e.index;
            ApiError::new(Code::InvalidInput, format!("messages[{i}]{field}: {} ({})", e.reason, format.name()))
        });
    }
    let mut messages = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let message = decode_json::<NewMessage>(item.get().as_bytes())
            .map_err(|e| ApiError { message: format!("messages[{i}]: {}", e.message), ..e })?;
        messages.push(message);
    }
    Ok(messages)
}

/// What an export left out (`mode=pure`), by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct DroppedItem {
    pub what: String,
    pub count: u64,
}

/// Stored messages → answer items in `format`, with what `mode=pure` left out.
pub fn encode(
    format: WireFormat,
    mode: Mode,
    messages: &[Message],
) -> Result<(Vec<Box<RawValue>>, Vec<DroppedItem>), ApiError> {
    let internal = |e: serde_json::Error| ApiError::new(Code::Internal, format!("encoding messages: {e}"));
    if format == WireFormat::STOWAGE {
        let values = messages.iter().map(|m| serde_json::value::to_raw_value(m).map_err(internal));
        return Ok((values.collect::<Result<_, _>>()?, Vec::new()));
    }
    let rendered = interchange::render_messages(format.0, messages, mode).map_err(ApiError::from)?;
    let values = rendered.values.into_iter().map(|v| RawValue::from_string(v).map_err(internal));
    let dropped = rendered.dropped.entries().map(|(what, count)| DroppedItem { what: what.to_owned(), count });
    Ok((values.collect::<Result<_, _>>()?, dropped.collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Result<Box<RawValue>, ApiError> {
        serde_json::from_str(text).map_err(|e| ApiError::new(Code::InvalidJson, e.to_string()))
    }

    #[test]
    fn unknown_formats_and_modes_are_refused_by_name() {
        assert_eq!(WireFormat::parse(None).ok(), Some(WireFormat::STOWAGE));
        for known in ["stowage", "openai", "anthropic", "openai-responses", "ai-sdk-ui"] {
            assert_eq!(WireFormat::parse(Some(known)).map(WireFormat::name).ok(), Some(known));
        }
        for unknown in ["xml", "", "OpenAI"] {
            let err = WireFormat::parse(Some(unknown)).err();
            assert!(err.is_some_and(|e| e.code == Code::UnsupportedFormat && e.message.contains("ai-sdk-ui")));
        }
        assert!(parse_mode(Some("pure"), WireFormat::STOWAGE).is_err());
        assert!(parse_mode(Some("loose"), WireFormat(Format::OpenAiResponses)).is_err());
    }

    #[test]
    fn stowage_items_keep_json_verbatim_and_errors_name_the_item() -> Result<(), ApiError> {
        let item = raw(r#"{"id":"m1","role":"user","parts":[{"type":"text","text":"hi"}],"metadata":{"k": 1.50}}"#)?;
        let messages = decode(WireFormat::STOWAGE, &[item])?;
        assert_eq!(messages[0].metadata.as_ref().map(|m| m.as_str()), Some(r#"{"k": 1.50}"#));
        let err = decode(WireFormat::STOWAGE, &[raw(r#"{"role":"robot"}"#)?]).err();
        assert!(err.is_some_and(|e| e.code == Code::InvalidJson && e.message.starts_with("messages[0]")));
        let err = decode(WireFormat(Format::OpenAiResponses), &[raw(r#"{"x":1}"#)?]).err();
        assert!(err.is_some_and(|e| e.code == Code::InvalidInput && e.message.starts_with("messages[0]")));
        Ok(())
    }
}
