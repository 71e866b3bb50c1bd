//! Reading what the 0.1.0 adapter wrote.
//!
//! Its directory layout and frame format are this adapter's own; only the
//! frame payloads (serde JSON, always starting with `{`) and `meta.json` differ.
//! Legacy frames are decoded on read and handed out in the 0.2.0 "plain
//! legacy" form ([`convert`]). A legacy log is never appended to: the first
//! write to it rewrites the whole log in this adapter's format (atomically,
//! like any rewrite), converting every record once; `meta.json` is never
//! rewritten and stays in the 0.1.0 shape.

pub mod convert;
pub mod types;

#[cfg(test)]
mod tests;

/// The first byte of every 0.1.0 frame payload (a JSON object).
pub const JSON_START: u8 = b'{';

/// One frame of a 0.1.0 `messages.log`.
pub fn message_entry(payload: &[u8]) -> Result<types::Entry, String> {
    serde_json::from_slice(payload).map_err(|e| format!("0.1.0 record: {e}"))
}

/// One frame of a 0.1.0 `display.log`.
pub fn display_entry(payload: &[u8]) -> Result<types::DisplayEntry, String> {
    serde_json::from_slice(payload).map_err(|e| format!("0.1.0 display record: {e}"))
}
