//! The null adapter (contract `stowage:store@0.2.0`): accepts every write, keeps
//! nothing; reads come back empty.
//!
//! Useful as a sink (events without persistence), for measuring host overhead, and
//! as the smallest complete example of the adapter contract. What each function
//! answers:
//!
//! - `open`: the conversation, echoing `meta`, empty (counts 0, version 0);
//! - `info`: `not-found` (nothing is kept);
//! - `append`: `stored(1)`; `replace`: version 1;
//! - `load`, `list`, display `list`, `by-tool-call-id`, `find-by-status`: empty;
//! - `truncate-after`: nothing removed, version 0; `delete`: false;
//! - display `insert`: `stored`; display `update`: `not-found`.

wit_bindgen::generate!({
    path: "../../wit/v0.2.0",
    world: "adapter",
});

use exports::stowage::store::conversation_store::{
    AppendOutcome, ConversationInfo, ConversationMeta, Guest as ConversationStore, MessageRange, Scope, StoredMessage,
    TruncateOutcome,
};
use exports::stowage::store::display_store::{
    DisplayPosition, Guest as DisplayStore, InsertOutcome, LocatedDisplayRecord, StoredDisplayRecord,
};
use stowage::store::types::Error;

struct Null;

impl ConversationStore for Null {
    fn open(
        scope: Scope,
        conversation_id: String,
        meta: ConversationMeta,
        now: i64,
    ) -> Result<ConversationInfo, Error> {
        Ok(ConversationInfo {
            id: conversation_id,
            scope,
            meta,
            created_at: now,
            updated_at: now,
            message_count: 0,
            last_seq: 0,
            version: 0,
        })
    }

    fn info(_: Scope, _: String) -> Result<ConversationInfo, Error> {
        Err(Error::NotFound)
    }

    fn update_meta(_: Scope, _: String, _: ConversationMeta) -> Result<(), Error> {
        Err(Error::NotFound)
    }

    fn append(_: Scope, _: String, _: Vec<StoredMessage>, _: Option<u64>, _: i64) -> Result<AppendOutcome, Error> {
        // Nothing is kept, so every batch is "stored" into an empty history.
        Ok(AppendOutcome::Stored(1))
    }

    fn replace(_: Scope, _: String, _: Vec<StoredMessage>, _: Option<u64>, _: i64) -> Result<u64, Error> {
        Ok(1)
    }

    fn load(_: Scope, _: String, _: MessageRange, _: u32) -> Result<Vec<StoredMessage>, Error> {
        Ok(Vec::new())
    }

    fn truncate_after(_: Scope, _: String, _: u64, _: Option<u64>, _: i64) -> Result<TruncateOutcome, Error> {
        Ok(TruncateOutcome { removed: 0, version: 0 })
    }

    fn delete(_: Scope, _: String) -> Result<bool, Error> {
        Ok(false)
    }

    fn list(_: Scope, _: Option<String>, _: u32) -> Result<Vec<ConversationInfo>, Error> {
        Ok(Vec::new())
    }
}

impl DisplayStore for Null {
    fn insert(_: Scope, _: String, _: Vec<StoredDisplayRecord>) -> Result<InsertOutcome, Error> {
        Ok(InsertOutcome::Stored)
    }

    fn by_tool_call_id(_: Scope, _: String, _: String) -> Result<Vec<StoredDisplayRecord>, Error> {
        Ok(Vec::new())
    }

    fn update(_: Scope, _: String, _: StoredDisplayRecord) -> Result<(), Error> {
        Err(Error::NotFound)
    }

    fn list(_: Scope, _: String, _: u64, _: u32) -> Result<Vec<StoredDisplayRecord>, Error> {
        Ok(Vec::new())
    }

    fn find_by_status(_: Vec<String>, _: Option<DisplayPosition>, _: u32) -> Result<Vec<LocatedDisplayRecord>, Error> {
        Ok(Vec::new())
    }
}

export!(Null);
