//! The exported contract functions: read the modes, find the entry the call is
//! about, run the honest store, then forge the answer as the modes say.

use std::sync::{Mutex, PoisonError};

use crate::exports::stowage::store::conversation_store::{
    AppendOutcome, ConversationInfo, ConversationMeta, Guest as ConversationStore, MessageRange, Scope, StoredMessage,
    TruncateOutcome,
};
use crate::exports::stowage::store::display_store::{
    DisplayPosition, Guest as DisplayStore, InsertOutcome, LocatedDisplayRecord, StoredDisplayRecord,
};
use crate::lies::{forge_info, forge_load};
use crate::modes::{Mode, Modes};
use crate::store::{Conversation, Key, Store, scope_of};
use crate::stowage::store::types::Error;

/// The instance's whole state: lives exactly as long as the instance.
static STORE: Mutex<Store> = Mutex::new(Store::new());

/// Runs `f` on the store with the current call's modes and the key it is about.
fn call<T>(
    scope: &Scope,
    conversation_id: &str,
    f: impl FnOnce(&mut Store, &Modes, Key) -> Result<T, Error>,
) -> Result<T, Error> {
    let modes = Modes::current()?;
    let mut store = STORE.lock().unwrap_or_else(PoisonError::into_inner);
    let key = store.resolve(scope, conversation_id, modes.any_scope());
    f(&mut store, &modes, key)
}

/// The info of `conversation` at `key`, labelled with the caller's scope, or
/// with `true-scope` with the scope that owns it; `bad-count` applied.
fn info(caller: &Scope, key: &Key, conversation: &Conversation, modes: &Modes) -> ConversationInfo {
    let scope = if modes.has(Mode::TrueScope) { scope_of(key) } else { caller.clone() };
    let last_seq = conversation.last_seq();
    let mut info = ConversationInfo {
        id: key.2.clone(),
        scope,
        meta: conversation.meta.clone(),
        created_at: conversation.created_at,
        updated_at: conversation.updated_at,
        message_count: conversation.messages.len() as u64,
        last_seq,
        version: conversation.version,
    };
    forge_info(&mut info, modes);
    info
}

pub struct Liar;

impl ConversationStore for Liar {
    fn open(
        scope: Scope,
        conversation_id: String,
        meta: ConversationMeta,
        now: i64,
    ) -> Result<ConversationInfo, Error> {
        call(&scope, &conversation_id, |store, modes, key| {
            let conversation = store.open(&key, meta, now);
            Ok(info(&scope, &key, conversation, modes))
        })
    }

    fn info(scope: Scope, conversation_id: String) -> Result<ConversationInfo, Error> {
        call(&scope, &conversation_id, |store, modes, key| {
            let conversation = store.conversation(&key)?;
            Ok(info(&scope, &key, conversation, modes))
        })
    }

    fn update_meta(scope: Scope, conversation_id: String, meta: ConversationMeta) -> Result<(), Error> {
        call(&scope, &conversation_id, |store, _, key| store.update_meta(&key, meta))
    }

    fn append(
        scope: Scope,
        conversation_id: String,
        messages: Vec<StoredMessage>,
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<AppendOutcome, Error> {
        call(&scope, &conversation_id, |store, modes, key| {
            let skip = modes.has(Mode::SkipSeq);
            store.append(&key, messages, expected_version, now, skip)
        })
    }

    fn replace(
        scope: Scope,
        conversation_id: String,
        messages: Vec<StoredMessage>,
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<u64, Error> {
        call(&scope, &conversation_id, |store, _, key| store.replace(&key, messages, expected_version, now))
    }

    fn load(
        scope: Scope,
        conversation_id: String,
        range: MessageRange,
        limit: u32,
    ) -> Result<Vec<StoredMessage>, Error> {
        call(&scope, &conversation_id, |store, modes, key| {
            store.conversation(&key)?;
            let source =
                if modes.has(Mode::OtherConversation) { store.other_conversation(&key).unwrap_or(key) } else { key };
            let mut answer = store.load(&source, range, limit)?;
            forge_load(&mut answer, modes);
            Ok(answer)
        })
    }

    fn truncate_after(
        scope: Scope,
        conversation_id: String,
        seq: u64,
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<TruncateOutcome, Error> {
        call(&scope, &conversation_id, |store, _, key| store.truncate_after(&key, seq, expected_version, now))
    }

    fn delete(scope: Scope, conversation_id: String) -> Result<bool, Error> {
        call(&scope, &conversation_id, |store, _, key| Ok(store.delete(&key)))
    }

    fn list(scope: Scope, after: Option<String>, limit: u32) -> Result<Vec<ConversationInfo>, Error> {
        let modes = Modes::current()?;
        let store = STORE.lock().unwrap_or_else(PoisonError::into_inner);
        let of_scope = (!modes.any_scope()).then_some(&scope);
        let found = store.list(of_scope, after.as_deref(), limit);
        Ok(found.into_iter().map(|(key, conversation)| info(&scope, key, conversation, &modes)).collect())
    }
}

impl DisplayStore for Liar {
    fn insert(
        scope: Scope,
        conversation_id: String,
        records: Vec<StoredDisplayRecord>,
    ) -> Result<InsertOutcome, Error> {
        call(&scope, &conversation_id, |store, _, key| store.insert(&key, records))
    }

    fn by_tool_call_id(
        scope: Scope,
        conversation_id: String,
        tool_call_id: String,
    ) -> Result<Vec<StoredDisplayRecord>, Error> {
        call(&scope, &conversation_id, |store, modes, key| {
            let replay_old = modes.has(Mode::ReplayOld);
            Ok(store.by_tool_call_id(&key, &tool_call_id, replay_old))
        })
    }

    fn update(scope: Scope, conversation_id: String, record: StoredDisplayRecord) -> Result<(), Error> {
        call(&scope, &conversation_id, |store, _, key| store.update(&key, record))
    }

    fn list(scope: Scope, conversation_id: String, after: u64, limit: u32) -> Result<Vec<StoredDisplayRecord>, Error> {
        call(&scope, &conversation_id, |store, _, key| Ok(store.display_list(&key, after, limit)))
    }

    fn find_by_status(
        statuses: Vec<String>,
        after: Option<DisplayPosition>,
        limit: u32,
    ) -> Result<Vec<LocatedDisplayRecord>, Error> {
        // No lie applies, but a broken mode file still fails the call.
        Modes::current()?;
        let store = STORE.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(store.find_by_status(&statuses, after.as_ref(), limit))
    }
}
