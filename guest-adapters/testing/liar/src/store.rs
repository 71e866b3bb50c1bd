//! The honest store: conversations and their message histories, kept in instance
//! memory, with exactly the guarantees of `conversation-store` (contract 0.2.0).
//!
//! Everything is keyed by (tenant, user, conversation id); a `BTreeMap` keeps the
//! keys in the byte-wise order `list` and `find-by-status` page in. Finding the
//! entry a call is about ([`Store::resolve`]) is the only place where the scope
//! can be ignored, which is how the `ignore-scope` lie is made. The only other
//! deviation this module offers is `append`'s `skip` flag (`skip-seq`).

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound::{Excluded, Unbounded};

use crate::display::DisplayLog;
use crate::exports::stowage::store::conversation_store::{
    AlreadyStored, AppendOutcome, IndexedSeq, MessageRange, TruncateOutcome,
};
use crate::stowage::store::types::{Conflict, ConversationMeta, Error, Scope, StoredMessage};

/// (tenant, user, conversation id).
pub type Key = (String, String, String);

/// The key of `conversation_id` in `scope`.
pub fn key(scope: &Scope, conversation_id: &str) -> Key {
    (scope.tenant.clone(), scope.user.clone(), conversation_id.to_owned())
}

/// The scope a key belongs to.
pub fn scope_of(key: &Key) -> Scope {
    Scope { tenant: key.0.clone(), user: key.1.clone() }
}

/// Everything stored under one key. Exists only while it holds a conversation
/// or display records.
#[derive(Default)]
pub struct Entry {
    pub conversation: Option<Conversation>,
    pub display: DisplayLog,
}

/// One conversation's info and history.
pub struct Conversation {
    pub meta: ConversationMeta,
    pub created_at: i64,
    pub updated_at: i64,
    pub version: u64,
    /// By seq. Contiguous from 1 unless `skip-seq` stored a batch.
    pub messages: BTreeMap<u64, StoredMessage>,
    /// Message id → seq, for `already-stored`.
    ids: HashMap<String, u64>,
}

impl Conversation {
    /// Seq of the newest message, 0 when empty.
    pub fn last_seq(&self) -> u64 {
        self.messages.keys().next_back().copied().unwrap_or(0)
    }

    fn check_version(&self, expected: Option<u64>) -> Result<(), Error> {
        match expected {
            Some(expected) if expected != self.version => {
                Err(Error::Conflict(Conflict { expected_version: expected, actual_version: self.version }))
            }
            _ => Ok(()),
        }
    }

    fn bump(&mut self, now: i64) -> u64 {
        self.version += 1;
        self.updated_at = now;
        self.version
    }
}

/// Fails with `invalid-input` unless the batch's seqs run contiguously from `first`.
fn check_contiguous(batch: &[StoredMessage], first: u64) -> Result<(), Error> {
    for (expected, message) in (first..).zip(batch) {
        if message.seq != expected {
            return Err(Error::InvalidInput(format!("seq {} where {expected} was expected", message.seq)));
        }
    }
    Ok(())
}

/// Every entry of the instance.
#[derive(Default)]
pub struct Store {
    pub entries: BTreeMap<Key, Entry>,
}

impl Store {
    pub const fn new() -> Self {
        Self { entries: BTreeMap::new() }
    }

    /// The key a call about (`scope`, `conversation_id`) works on: the caller's
    /// own, or with `any_scope`, when the caller has no such entry, the first
    /// entry of any scope with that conversation id (a query without the tenant).
    pub fn resolve(&self, scope: &Scope, conversation_id: &str, any_scope: bool) -> Key {
        let own = key(scope, conversation_id);
        if !any_scope || self.entries.contains_key(&own) {
            return own;
        }
        self.entries.keys().find(|k| k.2 == conversation_id).cloned().unwrap_or(own)
    }

    pub fn conversation(&self, key: &Key) -> Result<&Conversation, Error> {
        self.entries.get(key).and_then(|e| e.conversation.as_ref()).ok_or(Error::NotFound)
    }

    fn conversation_mut(&mut self, key: &Key) -> Result<&mut Conversation, Error> {
        self.entries.get_mut(key).and_then(|e| e.conversation.as_mut()).ok_or(Error::NotFound)
    }

    pub fn update_meta(&mut self, key: &Key, meta: ConversationMeta) -> Result<(), Error> {
        self.conversation_mut(key)?.meta = meta;
        Ok(())
    }

    /// Find or create; an existing conversation is returned unchanged.
    pub fn open(&mut self, key: &Key, meta: ConversationMeta, now: i64) -> &Conversation {
        let entry = self.entries.entry(key.clone()).or_default();
        entry.conversation.get_or_insert_with(|| Conversation {
            meta,
            created_at: now,
            updated_at: now,
            version: 0,
            messages: BTreeMap::new(),
            ids: HashMap::new(),
        })
    }

    /// `append` with the contract's checks in order. With `skip`, a batch that
    /// passes them is stored one seq further than it says (a gap of one before
    /// it) and still acknowledged as `stored`.
    pub fn append(
        &mut self,
        key: &Key,
        batch: Vec<StoredMessage>,
        expected: Option<u64>,
        now: i64,
        skip: bool,
    ) -> Result<AppendOutcome, Error> {
        let conversation = self.conversation_mut(key)?;
        let seqs: Vec<IndexedSeq> = (0u32..)
            .zip(&batch)
            .filter_map(|(index, m)| {
                let seq = *conversation.ids.get(&m.message.id)?;
                Some(IndexedSeq { index, seq })
            })
            .collect();
        if !seqs.is_empty() {
            return Ok(AppendOutcome::AlreadyStored(AlreadyStored { seqs, version: conversation.version }));
        }
        conversation.check_version(expected)?;
        let last_seq = conversation.last_seq();
        let Some(first) = batch.first() else {
            return Ok(AppendOutcome::Stored(conversation.version));
        };
        if first.seq != last_seq + 1 {
            return Ok(AppendOutcome::OutOfSequence(last_seq));
        }
        check_contiguous(&batch, first.seq)?;
        for mut message in batch {
            message.seq += u64::from(skip);
            conversation.ids.insert(message.message.id.clone(), message.seq);
            conversation.messages.insert(message.seq, message);
        }
        Ok(AppendOutcome::Stored(conversation.bump(now)))
    }

    /// Replace the whole history with `batch`, numbered from 1.
    pub fn replace(
        &mut self,
        key: &Key,
        batch: Vec<StoredMessage>,
        expected: Option<u64>,
        now: i64,
    ) -> Result<u64, Error> {
        let conversation = self.conversation_mut(key)?;
        conversation.check_version(expected)?;
        check_contiguous(&batch, 1)?;
        conversation.ids = batch.iter().map(|m| (m.message.id.clone(), m.seq)).collect();
        conversation.messages = batch.into_iter().map(|m| (m.seq, m)).collect();
        Ok(conversation.bump(now))
    }

    /// At most `limit` messages of `range`, ascending.
    pub fn load(&self, key: &Key, range: MessageRange, limit: u32) -> Result<Vec<StoredMessage>, Error> {
        let messages = &self.conversation(key)?.messages;
        let limit = limit as usize;
        let mut answer: Vec<StoredMessage> = match range {
            MessageRange::Latest => messages.values().rev().take(limit).cloned().collect(),
            MessageRange::Before(seq) => messages.range(..seq).rev().take(limit).map(|(_, m)| m.clone()).collect(),
            MessageRange::After(seq) => {
                return Ok(messages.range((Excluded(seq), Unbounded)).take(limit).map(|(_, m)| m.clone()).collect());
            }
        };
        answer.reverse();
        Ok(answer)
    }

    /// Remove every message after `seq`.
    pub fn truncate_after(
        &mut self,
        key: &Key,
        seq: u64,
        expected: Option<u64>,
        now: i64,
    ) -> Result<TruncateOutcome, Error> {
        let conversation = self.conversation_mut(key)?;
        conversation.check_version(expected)?;
        let removed = match seq.checked_add(1) {
            Some(from) => conversation.messages.split_off(&from),
            None => BTreeMap::new(),
        };
        if removed.is_empty() {
            return Ok(TruncateOutcome { removed: 0, version: conversation.version });
        }
        for message in removed.values() {
            conversation.ids.remove(&message.message.id);
        }
        Ok(TruncateOutcome { removed: removed.len() as u64, version: conversation.bump(now) })
    }

    /// Delete the conversation and its display records; true if anything existed.
    pub fn delete(&mut self, key: &Key) -> bool {
        self.entries.remove(key).is_some()
    }

    /// Conversations ordered by id (then scope), strictly after `after`, at most
    /// `limit`: those of `scope`, or with `None` those of every scope.
    pub fn list(&self, scope: Option<&Scope>, after: Option<&str>, limit: u32) -> Vec<(&Key, &Conversation)> {
        let mut found: Vec<(&Key, &Conversation)> = self
            .entries
            .iter()
            .filter(|(k, _)| scope.is_none_or(|s| k.0 == s.tenant && k.1 == s.user))
            .filter(|(k, _)| after.is_none_or(|after| k.2.as_str() > after))
            .filter_map(|(k, e)| Some((k, e.conversation.as_ref()?)))
            .collect();
        found.sort_by(|a, b| (&a.0.2, a.0).cmp(&(&b.0.2, b.0)));
        found.truncate(limit as usize);
        found
    }

    /// Another conversation with messages in the same scope as `key`, if any.
    pub fn other_conversation(&self, key: &Key) -> Option<Key> {
        self.entries
            .iter()
            .filter(|(k, _)| k.0 == key.0 && k.1 == key.1 && k.2 != key.2)
            .find(|(_, e)| e.conversation.as_ref().is_some_and(|c| !c.messages.is_empty()))
            .map(|(k, _)| k.clone())
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::stowage::store::types::{Message, Role};

    pub fn scope(tenant: &str) -> Scope {
        Scope { tenant: tenant.to_owned(), user: "u".to_owned() }
    }

    pub fn message(seq: u64, id: &str) -> StoredMessage {
        StoredMessage {
            seq,
            message: Message {
                id: id.to_owned(),
                role: Role::User,
                created_at: 7,
                content: format!("\u{1}{{\"parts\":[\"{id}\"]}}").into_bytes(),
                tag: vec![0xAA, seq as u8],
            },
        }
    }

    fn meta() -> ConversationMeta {
        ConversationMeta { content: b"\x01{}".to_vec(), tag: vec![1] }
    }

    /// A store with conversation `c` in scope `a` holding messages 1..=n.
    pub fn store_with(n: u64) -> (Store, Key) {
        let mut store = Store::new();
        let k = key(&scope("a"), "c");
        store.open(&k, meta(), 1);
        let batch = (1..=n).map(|s| message(s, &format!("m{s}"))).collect();
        assert_eq!(store.append(&k, batch, Some(0), 2, false), Ok(AppendOutcome::Stored(1)));
        (store, k)
    }

    fn seqs(messages: &[StoredMessage]) -> Vec<u64> {
        messages.iter().map(|m| m.seq).collect()
    }

    #[test]
    fn append_checks_run_in_contract_order() {
        let (mut store, k) = store_with(3);
        // A retry (m2 known) wins over a stale version and a wrong seq.
        let retry = vec![message(9, "m2"), message(10, "new")];
        let expected =
            AppendOutcome::AlreadyStored(AlreadyStored { seqs: vec![IndexedSeq { index: 0, seq: 2 }], version: 1 });
        assert_eq!(store.append(&k, retry, Some(0), 3, false), Ok(expected));
        let stale = store.append(&k, vec![message(9, "x")], Some(0), 3, false);
        assert!(matches!(stale, Err(Error::Conflict(_))));
        let gap = store.append(&k, vec![message(9, "x")], Some(1), 3, false);
        assert_eq!(gap, Ok(AppendOutcome::OutOfSequence(3)));
        let holey = store.append(&k, vec![message(4, "x"), message(6, "y")], None, 3, false);
        assert!(matches!(holey, Err(Error::InvalidInput(_))));
        assert_eq!(store.conversation(&k).map(|c| c.version), Ok(1));
        let missing = store.append(&key(&scope("b"), "c"), vec![], None, 3, false);
        assert_eq!(missing, Err(Error::NotFound));
    }

    #[test]
    fn ranges_are_ascending_and_bounded() {
        let (store, k) = store_with(5);
        let load = |range, limit| seqs(&store.load(&k, range, limit).unwrap_or_default());
        assert_eq!(load(MessageRange::Latest, 2), [4, 5]);
        assert_eq!(load(MessageRange::After(1), 2), [2, 3]);
        assert_eq!(load(MessageRange::After(u64::MAX), 2), [0u64; 0]);
        assert_eq!(load(MessageRange::Before(4), 2), [2, 3]);
        assert_eq!(load(MessageRange::Before(1), 9), [0u64; 0]);
    }

    #[test]
    fn truncate_and_replace_keep_ids_and_versions_right() {
        let (mut store, k) = store_with(4);
        let noop = store.truncate_after(&k, 4, Some(1), 5);
        assert_eq!(noop, Ok(TruncateOutcome { removed: 0, version: 1 }));
        let cut = store.truncate_after(&k, 2, Some(1), 5);
        assert_eq!(cut, Ok(TruncateOutcome { removed: 2, version: 2 }));
        // m3 is gone, so it may be appended again, at seq 3.
        let again = store.append(&k, vec![message(3, "m3")], None, 6, false);
        assert_eq!(again, Ok(AppendOutcome::Stored(3)));
        assert_eq!(store.replace(&k, vec![message(1, "r")], Some(3), 7), Ok(4));
        let info = store.conversation(&k).map(|c| (c.last_seq(), c.messages.len(), c.updated_at));
        assert_eq!(info, Ok((1, 1, 7)));
    }

    #[test]
    fn skip_stores_past_a_gap_and_still_says_stored() {
        let (mut store, k) = store_with(3);
        let outcome = store.append(&k, vec![message(4, "m4")], None, 3, true);
        assert_eq!(outcome, Ok(AppendOutcome::Stored(2)));
        let all = store.load(&k, MessageRange::After(0), 10).unwrap_or_default();
        assert_eq!(seqs(&all), [1, 2, 3, 5]);
    }

    #[test]
    fn scopes_are_separate_unless_resolution_ignores_them() {
        let (mut store, a) = store_with(1);
        let b = scope("b");
        assert_eq!(store.resolve(&b, "c", false), key(&b, "c"));
        assert_eq!(store.resolve(&b, "c", true), a);
        store.open(&key(&b, "c"), meta(), 9);
        assert_eq!(store.resolve(&b, "c", true), key(&b, "c"), "own entry first");
        assert_eq!(store.list(Some(&b), None, 10).len(), 1);
        assert_eq!(store.list(None, None, 10).len(), 2);
        assert_eq!(store.list(None, Some("c"), 10).len(), 0);
        assert!(store.delete(&key(&b, "c")));
        assert!(!store.delete(&key(&b, "c")));
        assert_eq!(store.conversation(&a).map(|c| c.messages.len()), Ok(1));
    }

    #[test]
    fn another_conversation_must_have_messages_and_share_the_scope() {
        let (mut store, k) = store_with(2);
        assert_eq!(store.other_conversation(&k), None);
        let empty = key(&scope("a"), "b-empty");
        store.open(&empty, meta(), 1);
        let other_scope = key(&scope("z"), "d");
        store.open(&other_scope, meta(), 1);
        let _ = store.append(&other_scope, vec![message(1, "x")], None, 1, false);
        assert_eq!(store.other_conversation(&k), None);
        let sibling = key(&scope("a"), "d");
        store.open(&sibling, meta(), 1);
        let _ = store.append(&sibling, vec![message(1, "x")], None, 1, false);
        assert_eq!(store.other_conversation(&k), Some(sibling));
    }
}
