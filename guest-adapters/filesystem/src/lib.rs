//! The filesystem adapter (contract `stowage:store@0.2.0`, world `adapter`):
//! each conversation is a directory under the store's data directory (the only
//! path the host lets it see, preopened at `/data`); see [`layout`].
//!
//! Crash safety:
//! - the message history and the display records are append-only logs of
//!   checksummed frames ([`frame`]); a batch is one frame, so it is all there or
//!   not at all. A torn tail (the frame being written when the process died) is
//!   ignored by readers and cut off by the next writer; damage followed by intact
//!   data is reported with the file and byte offset, never skipped.
//! - every acknowledged write is on stable storage before the call returns: an
//!   appended frame is `sync_data`ed; a file written whole (metadata, a replaced,
//!   truncated or converted log) is written beside its target, `sync_all`ed,
//!   renamed over it and its directory fsynced; every new directory's parent is
//!   fsynced ([`durable`]).
//! - a deleted conversation is renamed into a trash folder first (both
//!   directories fsynced), so it disappears atomically even if removing its
//!   files is interrupted.
//!
//! Speed: each instance caches, per conversation, an index of its log (id →
//! seq, seq → frame), validated against the file on every call and extended by
//! reading only the log's new tail ([`logfile`]); loads read only the frames
//! they return. So `append` and `load` cost the same at any history length.
//!
//! Stores of the 0.1.0 adapter open and read unchanged ([`legacy`]).

mod codec;
mod display;
mod durable;
mod frame;
mod layout;
mod legacy;
mod logfile;
mod lru;
mod messages;
mod meta;
mod rewrite;
mod store;

#[cfg(test)]
mod tests;

wit_bindgen::generate!({
    path: "../../wit/v0.2.0",
    world: "adapter",
    additional_derives: [PartialEq],
});

use exports::stowage::store::conversation_store::{
    AppendOutcome, Guest as ConversationStore, MessageRange, TruncateOutcome,
};
use exports::stowage::store::display_store::{
    DisplayPosition, Guest as DisplayStore, InsertOutcome, LocatedDisplayRecord, StoredDisplayRecord,
};
use store::with_store;
use stowage::store::types::{ConversationInfo, ConversationMeta, Error, Scope, StoredMessage};

/// Maps an I/O failure to the contract's `storage` error, saying what failed.
pub(crate) fn io_error(what: &str, err: std::io::Error) -> Error {
    Error::Storage(format!("{what}: {err}"))
}

/// A one-line description of an error, for diagnostics.
pub(crate) fn describe(error: &Error) -> String {
    match error {
        Error::Storage(s) | Error::InvalidInput(s) | Error::Unsupported(s) | Error::AccessDenied(s) => s.clone(),
        other => format!("{other:?}"),
    }
}

/// Logs a warning through the host (never message content). A no-op in
/// native unit tests, where there is no host.
pub(crate) fn warn(message: &str) {
    #[cfg(target_arch = "wasm32")]
    stowage::store::log::log(stowage::store::log::Level::Warn, message);
    #[cfg(not(target_arch = "wasm32"))]
    let _ = message;
}

struct Filesystem;

impl ConversationStore for Filesystem {
    fn open(
        scope: Scope,
        conversation_id: String,
        meta: ConversationMeta,
        now: i64,
    ) -> Result<ConversationInfo, Error> {
        with_store(|s| s.open(&scope, &conversation_id, meta, now))
    }

    fn info(scope: Scope, conversation_id: String) -> Result<ConversationInfo, Error> {
        with_store(|s| s.info(&scope, &conversation_id))
    }

    fn update_meta(scope: Scope, conversation_id: String, meta: ConversationMeta) -> Result<(), Error> {
        with_store(|s| s.update_meta(&scope, &conversation_id, meta))
    }

    fn append(
        scope: Scope,
        conversation_id: String,
        messages: Vec<StoredMessage>,
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<AppendOutcome, Error> {
        with_store(|s| s.append(&scope, &conversation_id, messages, expected_version, now))
    }

    fn replace(
        scope: Scope,
        conversation_id: String,
        messages: Vec<StoredMessage>,
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<u64, Error> {
        with_store(|s| s.replace(&scope, &conversation_id, messages, expected_version, now))
    }

    fn load(
        scope: Scope,
        conversation_id: String,
        range: MessageRange,
        limit: u32,
    ) -> Result<Vec<StoredMessage>, Error> {
        with_store(|s| s.load(&scope, &conversation_id, range, limit))
    }

    fn truncate_after(
        scope: Scope,
        conversation_id: String,
        seq: u64,
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<TruncateOutcome, Error> {
        with_store(|s| s.truncate_after(&scope, &conversation_id, seq, expected_version, now))
    }

    fn delete(scope: Scope, conversation_id: String) -> Result<bool, Error> {
        with_store(|s| s.delete(&scope, &conversation_id))
    }

    fn list(scope: Scope, after: Option<String>, limit: u32) -> Result<Vec<ConversationInfo>, Error> {
        with_store(|s| s.list(&scope, after.as_deref(), limit))
    }
}

impl DisplayStore for Filesystem {
    fn insert(
        scope: Scope,
        conversation_id: String,
        records: Vec<StoredDisplayRecord>,
    ) -> Result<InsertOutcome, Error> {
        with_store(|s| s.insert(&scope, &conversation_id, records))
    }

    fn by_tool_call_id(
        scope: Scope,
        conversation_id: String,
        tool_call_id: String,
    ) -> Result<Vec<StoredDisplayRecord>, Error> {
        with_store(|s| s.by_tool_call_id(&scope, &conversation_id, &tool_call_id))
    }

    fn update(scope: Scope, conversation_id: String, record: StoredDisplayRecord) -> Result<(), Error> {
        with_store(|s| s.update(&scope, &conversation_id, record))
    }

    fn list(scope: Scope, conversation_id: String, after: u64, limit: u32) -> Result<Vec<StoredDisplayRecord>, Error> {
        with_store(|s| s.list_display(&scope, &conversation_id, after, limit))
    }

    fn find_by_status(
        statuses: Vec<String>,
        after: Option<DisplayPosition>,
        limit: u32,
    ) -> Result<Vec<LocatedDisplayRecord>, Error> {
        with_store(|s| s.find_by_status(&statuses, after.as_ref(), limit))
    }
}

export!(Filesystem);
