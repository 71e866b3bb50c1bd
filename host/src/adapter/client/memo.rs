//! A memo of checked messages: a message the host verified and decoded once is
//! recognised again by its exact stored form, so loading it again (an agent
//! reloads its history every turn) skips the MAC and the decoding.
//!
//! It never changes an answer:
//! - An entry holds the whole input of a check (the scope, the conversation,
//!   the seq, and the record exactly as the adapter returned it: id, role,
//!   time, content and tag) with the message the check produced. A record is
//!   answered from the memo only if the adapter returned exactly that record
//!   again at that place; anything else is checked in full.
//! - The check is a deterministic function of that input: a store's integrity
//!   settings are fixed, and keys are only ever added to its keyring, never
//!   changed (a reloaded ring that changes one is refused), so a tag that
//!   verified once verifies again.
//! - Only verified records are kept, never ones accepted without a tag.
//! - The adapter is still asked on every load, so what is current is its
//!   answer, as without the memo.
//!
//! Bounded by `verified_cache_bytes` (0 turns it off): when full, the
//! conversations loaded least recently are dropped, and a conversation larger
//! than the whole budget keeps its newest messages.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use crate::adapter::raw::{RawMessage, RawStored};
use crate::model::{Message, Scope};

/// Bytes counted for an entry beyond its content, id and tag (the maps' nodes,
/// the message's fields).
const ENTRY_OVERHEAD: usize = 256;

type Key = (Scope, String);

struct Entry {
    raw: RawMessage,
    message: Message,
}

impl Entry {
    /// What an entry is counted as: its stored record, and as much again for
    /// the decoded message (its text is the content's).
    fn cost(raw: &RawMessage) -> usize {
        2 * (raw.content.len() + raw.id.len()) + raw.tag.len() + ENTRY_OVERHEAD
    }
}

#[derive(Default)]
struct Conversation {
    records: BTreeMap<u64, Arc<Entry>>,
    bytes: usize,
    used: u64,
}

#[derive(Default)]
struct Inner {
    conversations: HashMap<Key, Conversation>,
    bytes: usize,
    clock: u64,
}

/// Checked messages of one store, by conversation and seq.
pub struct Memo {
    budget: usize,
    inner: Mutex<Inner>,
}

impl Memo {
    /// A memo of at most `budget` bytes; 0 keeps nothing.
    pub fn new(budget: u64) -> Self {
        Self { budget: usize::try_from(budget).unwrap_or(usize::MAX), inner: Mutex::default() }
    }

    pub fn enabled(&self) -> bool {
        self.budget > 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// For each record of a page of `conversation`, the message an earlier
    /// check produced from exactly that record at that seq, if the memo has it.
    /// The lock is held only to look the entries up: comparing the records and
    /// copying the messages out run beside other loads.
    pub fn recall(&self, scope: &Scope, conversation: &str, page: &[RawStored]) -> Vec<Option<Message>> {
        if !self.enabled() || page.is_empty() {
            return Vec::new();
        }
        let entries: Vec<Option<Arc<Entry>>> = {
            let mut inner = self.lock();
            inner.clock += 1;
            let clock = inner.clock;
            let Some(known) = inner.conversations.get_mut(&(scope.clone(), conversation.to_owned())) else {
                return Vec::new();
            };
            known.used = clock;
            page.iter().map(|stored| known.records.get(&stored.seq).cloned()).collect()
        };
        page.iter()
            .zip(entries)
            .map(|(stored, entry)| match entry {
                Some(entry) if entry.raw == stored.message => Some(entry.message.clone()),
                _ => None,
            })
            .collect()
    }

    /// Keeps records of `conversation` that were just verified (not those
    /// accepted untagged), each with the message its check produced.
    pub fn keep(&self, scope: &Scope, conversation: &str, checked: Vec<(RawStored, Message)>) {
        if !self.enabled() || checked.is_empty() {
            return;
        }
        let mut inner = self.lock();
        inner.clock += 1;
        let clock = inner.clock;
        let key = (scope.clone(), conversation.to_owned());
        let known = inner.conversations.entry(key.clone()).or_default();
        known.used = clock;
        let mut added: isize = 0;
        for (stored, message) in checked {
            let cost = Entry::cost(&stored.message);
            if cost > self.budget / 4 {
                continue;
            }
            if let Some(old) = known.records.insert(stored.seq, Arc::new(Entry { raw: stored.message, message })) {
                added -= Entry::cost(&old.raw) as isize;
            }
            added += cost as isize;
        }
        known.bytes = known.bytes.saturating_add_signed(added);
        inner.bytes = inner.bytes.saturating_add_signed(added);
        if inner.bytes > self.budget {
            Self::evict(&mut inner, &key, self.budget - self.budget / 4);
        }
    }

    /// Drops the least recently loaded conversations, then `current`'s oldest
    /// messages, until the memo holds at most `target` bytes (one sort per
    /// eviction, which frees a quarter of the budget at once).
    fn evict(inner: &mut Inner, current: &Key, target: usize) {
        if inner.bytes > target {
            let mut by_age: Vec<(u64, Key)> = inner
                .conversations
                .iter()
                .filter(|(key, _)| *key != current)
                .map(|(key, c)| (c.used, key.clone()))
                .collect();
            by_age.sort_unstable_by_key(|(used, _)| *used);
            for (_, key) in by_age {
                if inner.bytes <= target {
                    break;
                }
                if let Some(dropped) = inner.conversations.remove(&key) {
                    inner.bytes = inner.bytes.saturating_sub(dropped.bytes);
                }
            }
        }
        let Some(known) = inner.conversations.get_mut(current) else { return };
        while inner.bytes > target {
            let Some((_, entry)) = known.records.pop_first() else { break };
            let cost = Entry::cost(&entry.raw);
            known.bytes = known.bytes.saturating_sub(cost);
            inner.bytes = inner.bytes.saturating_sub(cost);
        }
    }

    /// Bytes held.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Role;

    fn stored(seq: u64, content: &str) -> RawStored {
        RawStored {
            seq,
            message: RawMessage {
                id: format!("m{seq}"),
                role: Role::User,
                created_at: 7,
                content: content.as_bytes().to_vec(),
                tag: vec![1; 21],
            },
        }
    }

    fn message(seq: u64) -> Message {
        Message {
            id: format!("m{seq}"),
            seq,
            role: Role::User,
            parts: Vec::new(),
            usage: None,
            stop_reason: None,
            created_at: 7,
            metadata: None,
            extra: None,
        }
    }

    fn hits(found: &[Option<Message>]) -> Vec<u64> {
        found.iter().flatten().map(|m| m.seq).collect()
    }

    #[test]
    fn only_the_exact_record_at_its_place_is_recalled() {
        let memo = Memo::new(1 << 20);
        let scope = Scope::new("t", "u");
        memo.keep(&scope, "c", vec![(stored(1, "a"), message(1)), (stored(2, "b"), message(2))]);
        assert_eq!(hits(&memo.recall(&scope, "c", &[stored(1, "a"), stored(2, "b")])), vec![1, 2]);
        assert!(hits(&memo.recall(&scope, "c", &[stored(1, "A")])).is_empty(), "other content");
        let mut retagged = stored(1, "a");
        retagged.message.tag[20] ^= 1;
        assert!(hits(&memo.recall(&scope, "c", &[retagged])).is_empty(), "another tag");
        let mut renamed = stored(1, "a");
        renamed.message.id = "other".into();
        assert!(hits(&memo.recall(&scope, "c", &[renamed])).is_empty(), "another id");
        let mut moved = stored(2, "a");
        moved.message.id = "m1".into();
        assert!(hits(&memo.recall(&scope, "c", &[moved])).is_empty(), "another seq");
        assert!(hits(&memo.recall(&scope, "d", &[stored(1, "a")])).is_empty(), "another conversation");
        assert!(hits(&memo.recall(&Scope::new("t", "v"), "c", &[stored(1, "a")])).is_empty(), "another scope");
        assert!(Memo::new(0).recall(&scope, "c", &[stored(1, "a")]).is_empty(), "off");
    }

    #[test]
    fn it_stays_within_its_budget_dropping_the_least_recently_loaded_first() {
        let body = "x".repeat(1000);
        let one = Entry::cost(&stored(1, &body).message);
        let memo = Memo::new((one * 11) as u64);
        let scope = Scope::new("t", "u");
        let page = |from: u64| (from..from + 4).map(|s| (stored(s, &body), message(s))).collect::<Vec<_>>();
        memo.keep(&scope, "a", page(1));
        memo.keep(&scope, "b", page(1));
        memo.recall(&scope, "a", &[stored(1, &body)]);
        memo.keep(&scope, "c", page(1));
        assert!(memo.bytes() <= one * 11);
        assert_eq!(hits(&memo.recall(&scope, "a", &[stored(1, &body)])), vec![1], "loaded last, kept");
        assert!(hits(&memo.recall(&scope, "b", &[stored(1, &body)])).is_empty(), "least recently loaded, dropped");
        // One conversation over the budget keeps its newest messages.
        memo.keep(&scope, "c", page(5).into_iter().chain(page(9)).collect());
        assert!(memo.bytes() <= one * 11);
        let newest: Vec<RawStored> = (9..13).map(|s| stored(s, &body)).collect();
        assert_eq!(hits(&memo.recall(&scope, "c", &newest)), vec![9, 10, 11, 12]);
        assert!(hits(&memo.recall(&scope, "c", &[stored(1, &body)])).is_empty());
    }
}
