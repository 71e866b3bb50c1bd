//! How the host encodes what adapters store opaquely.
//!
//! Plain form: the byte [`PLAIN`] followed by compact UTF-8 JSON. The same form
//! is what adapters hand back for records they stored before contract 0.2.0 (with
//! an empty tag). Sealed form: see `seal`. JSON-valued fields (metadata, provider
//! extras, display content) are embedded raw, so their exact text survives.

use serde::{Deserialize, Serialize};

use crate::model::{ConversationMeta, JsonText, Part, StopReason, Usage};

/// First byte of a plain encoding.
pub const PLAIN: u8 = 0x01;
/// First byte of a sealed encoding.
pub const SEALED: u8 = 0x02;

/// The content of a message: everything but its id, seq, role and time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageContent {
    #[serde(default)]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<JsonText>,
}

/// The content of a display record: what it shows and its metadata.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DisplayBody {
    pub content: JsonText,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonText>,
}

/// `value` in plain form.
pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(256);
    out.push(PLAIN);
    serde_json::to_writer(&mut out, value).map_err(|e| format!("encoding failed: {e}"))?;
    Ok(out)
}

/// Decodes a plain form (the caller has unsealed a sealed one).
pub fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T, String> {
    match bytes.split_first() {
        Some((&PLAIN, json)) => serde_json::from_slice(json).map_err(|e| format!("cannot be decoded: {e}")),
        Some((&SEALED, _)) => Err("is sealed, but the store does not unseal".into()),
        Some((other, _)) => Err(format!("has an unknown encoding (first byte {other:#04x})")),
        None => Err("is empty".into()),
    }
}

/// Encoded conversation meta.
pub fn encode_meta(meta: &ConversationMeta) -> Result<Vec<u8>, String> {
    encode(meta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::MediaSource;

    #[test]
    fn plain_content_round_trips_with_json_text_verbatim() -> Result<(), String> {
        let metadata = JsonText::parse("{\"z\": [1.50, 2e3],\n \"a\": null}").map_err(|e| e.to_string())?;
        let content = MessageContent {
            parts: vec![
                Part::text("hi"),
                Part::media("image/png", MediaSource::Inline(vec![0, 255]), None),
                Part::Provider {
                    format: "anthropic".into(),
                    value: JsonText::parse(r#"{"type":"server_tool_use", "id":"x"}"#).map_err(|e| e.to_string())?,
                    extra: None,
                },
            ],
            usage: Some(Usage { input_tokens: 1, output_tokens: 2, cached_tokens: 0, cost: Some(0.25) }),
            stop_reason: Some(StopReason::Other("pause_turn".into())),
            metadata: Some(metadata.clone()),
            extra: None,
        };
        let bytes = encode(&content)?;
        assert_eq!(bytes[0], PLAIN);
        let back: MessageContent = decode(&bytes)?;
        assert_eq!(back, content);
        assert_eq!(back.metadata.map(JsonText::into_string), Some(metadata.into_string()));
        Ok(())
    }

    #[test]
    fn the_documented_legacy_shape_decodes() -> Result<(), String> {
        let legacy =
            br#"{"parts":[{"type":"tool_result","call_id":"c","content":"ok","is_error":true}],"metadata":{"k": 1}}"#;
        let mut bytes = vec![PLAIN];
        bytes.extend_from_slice(legacy);
        let content: MessageContent = decode(&bytes)?;
        assert_eq!(content.parts, vec![Part::tool_result("c", "ok", true)]);
        assert_eq!(content.metadata.map(JsonText::into_string).as_deref(), Some("{\"k\": 1}"));
        Ok(())
    }

    #[test]
    fn garbage_is_reported_not_guessed() {
        for bad in [&b""[..], b"\x07{}", b"\x01not json", b"\x02sealed"] {
            assert!(decode::<MessageContent>(bad).is_err(), "{bad:?}");
        }
    }
}
