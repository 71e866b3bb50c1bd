//! Whole import files: every line checked before anything is stored, and ids
//! given deterministically so importing the same file twice stores nothing twice.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use super::{Format, LineError, Transcript, parse_line};

/// One parsed line of a file.
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedLine {
    /// 1-based, blank lines counted.
    pub line: usize,
    pub format: Format,
    /// The conversation id (given, or made by [`assign_ids`]).
    pub conversation_id: String,
    pub transcript: Transcript,
}

fn short_hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// Gives the conversation and every message without an id one, derived from the
/// line's text and the message's position and parts; returns the conversation id.
pub fn assign_ids(line_text: &str, transcript: &mut Transcript) -> String {
    let conversation = transcript
        .conversation_id
        .get_or_insert_with(|| format!("import-{}", short_hash(line_text.as_bytes())))
        .clone();
    for (index, message) in transcript.messages.iter_mut().enumerate() {
        if message.id.is_none() {
            let fingerprint = serde_json::to_vec(&message.parts).unwrap_or_default();
            message.id = Some(format!("{conversation}-{index}-{}", short_hash(&fingerprint)));
        }
    }
    conversation
}

/// Parses every non-blank line (`format: None` detects each), gives ids, and
/// refuses a conversation id that appears on two lines. The first problem is
/// the error: nothing of a file that fails should be stored.
pub fn parse_file(format: Option<Format>, text: &str) -> Result<Vec<ParsedLine>, LineError> {
    let mut lines = Vec::new();
    let mut first_line: HashMap<String, usize> = HashMap::new();
    for (index, text) in text.lines().enumerate() {
        if text.trim().is_empty() {
            continue;
        }
        let line = index + 1;
        let (format, mut transcript) = parse_line(format, line, text)?;
        let conversation_id = assign_ids(text, &mut transcript);
        if let Some(previous) = first_line.insert(conversation_id.clone(), line) {
            return Err(LineError {
                line,
                field: "conversation_id".into(),
                reason: format!("conversation `{conversation_id}` already appears on line {previous}"),
            });
        }
        lines.push(ParsedLine { line, format, conversation_id, transcript });
    }
    Ok(lines)
}
