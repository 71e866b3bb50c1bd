//! The filesystem adapter: each conversation is a directory under the store's
//! data directory (the only path the host lets it see, preopened at `/data`).
//!
//! Crash safety:
//! - the message history and the display records are append-only logs of
//!   checksummed frames ([`frame`]); a batch is one frame, so it is all there
//!   or not at all. A torn tail (the frame being written when the process died) is
//!   ignored by readers and cut off by the next writer.
//! - files that are rewritten whole (conversation metadata, a replaced history) are
//!   written to a temporary file, fsynced and renamed over the old one.
//! - a deleted conversation is renamed into a trash folder first, so it disappears
//!   atomically even if removing its files is interrupted.

mod conversation;
mod display;
mod frame;
mod layout;

wit_bindgen::generate!({
    path: "../../wit",
    world: "adapter",
    additional_derives: [PartialEq, serde::Serialize, serde::Deserialize],
});

use exports::stowage::store::conversation_store::{
    AppendOutcome, ConversationInfo, ConversationMeta, Guest as ConversationStore, Message,
    MessageRange, Scope, StoredMessage, TruncateOutcome,
};
use exports::stowage::store::display_store::{
    DisplayRecord, Guest as DisplayStore, LocatedDisplayRecord, StoredDisplayRecord,
};
use stowage::store::types::Error;

/// Maps an I/O failure to the contract's `storage` error, saying what failed.
pub(crate) fn io_error(what: &str, err: std::io::Error) -> Error {
    Error::Storage(format!("{what}: {err}"))
}

struct Filesystem;

impl ConversationStore for Filesystem {
    fn open(
        scope: Scope,
        conversation_id: String,
        meta: ConversationMeta,
        now: i64,
    ) -> Result<ConversationInfo, Error> {
        conversation::open(&scope, &conversation_id, meta, now)
    }

    fn info(scope: Scope, conversation_id: String) -> Result<ConversationInfo, Error> {
        conversation::Conversation::existing(&scope, &conversation_id)?.info()
    }

    fn append(
        scope: Scope,
        conversation_id: String,
        messages: Vec<Message>,
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<AppendOutcome, Error> {
        conversation::Conversation::existing(&scope, &conversation_id)?.append(
            messages,
            expected_version,
            now,
        )
    }

    fn replace(
        scope: Scope,
        conversation_id: String,
        messages: Vec<Message>,
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<u64, Error> {
        conversation::Conversation::existing(&scope, &conversation_id)?.replace(
            messages,
            expected_version,
            now,
        )
    }

    fn load(
        scope: Scope,
        conversation_id: String,
        range: MessageRange,
        limit: u32,
    ) -> Result<Vec<StoredMessage>, Error> {
        conversation::Conversation::existing(&scope, &conversation_id)?.load(range, limit)
    }

    fn truncate_after(
        scope: Scope,
        conversation_id: String,
        seq: u64,
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<TruncateOutcome, Error> {
        conversation::Conversation::existing(&scope, &conversation_id)?.truncate_after(
            seq,
            expected_version,
            now,
        )
    }

    fn delete(scope: Scope, conversation_id: String) -> Result<bool, Error> {
        conversation::delete(&scope, &conversation_id)
    }

    fn list(
        scope: Scope,
        after: Option<String>,
        limit: u32,
    ) -> Result<Vec<ConversationInfo>, Error> {
        conversation::list(&scope, after.as_deref(), limit)
    }
}

impl DisplayStore for Filesystem {
    fn insert(
        scope: Scope,
        conversation_id: String,
        records: Vec<DisplayRecord>,
    ) -> Result<Vec<u64>, Error> {
        display::insert(&scope, &conversation_id, records)
    }

    fn by_tool_call_id(
        scope: Scope,
        conversation_id: String,
        tool_call_id: String,
    ) -> Result<Vec<StoredDisplayRecord>, Error> {
        display::by_tool_call_id(&scope, &conversation_id, &tool_call_id)
    }

    fn update(
        scope: Scope,
        conversation_id: String,
        seq: u64,
        record: DisplayRecord,
    ) -> Result<(), Error> {
        display::update(&scope, &conversation_id, seq, record)
    }

    fn list(
        scope: Scope,
        conversation_id: String,
        after: u64,
        limit: u32,
    ) -> Result<Vec<StoredDisplayRecord>, Error> {
        display::list(&scope, &conversation_id, after, limit)
    }

    fn find_by_status(statuses: Vec<String>, limit: u32) -> Result<Vec<LocatedDisplayRecord>, Error> {
        display::find_by_status(&statuses, limit)
    }
}

export!(Filesystem);
