//! The honest display store: records kept verbatim by (scope, conversation id)
//! and seq, with exactly the guarantees of `display-store` (contract 0.2.0).
//!
//! Each update keeps the version it overwrote, so `replay-old` can hand back an
//! older, authentic record.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound::{Excluded, Unbounded};

use crate::exports::stowage::store::display_store::{
    DisplayPosition, DisplayRecord, InsertOutcome, LocatedDisplayRecord, StoredDisplayRecord,
};
use crate::store::{Key, Store, scope_of};
use crate::stowage::store::types::Error;

/// The display records of one (scope, conversation id).
#[derive(Default)]
pub struct DisplayLog {
    records: BTreeMap<u64, DisplayRecord>,
    /// Per seq, the version the latest `update` overwrote.
    previous: HashMap<u64, DisplayRecord>,
}

fn stored(seq: u64, record: &DisplayRecord) -> StoredDisplayRecord {
    StoredDisplayRecord { seq, record: record.clone() }
}

impl Store {
    fn display(&self, key: &Key) -> Option<&DisplayLog> {
        self.entries.get(key).map(|e| &e.display)
    }

    /// Store `batch` at its seqs, which must follow the last record contiguously.
    pub fn insert(&mut self, key: &Key, batch: Vec<StoredDisplayRecord>) -> Result<InsertOutcome, Error> {
        let last = self.display(key).and_then(|d| d.records.keys().next_back().copied()).unwrap_or(0);
        let Some(first) = batch.first() else {
            return Ok(InsertOutcome::Stored);
        };
        if first.seq != last + 1 {
            return Ok(InsertOutcome::OutOfSequence(last));
        }
        if let Some((_, r)) = (first.seq..).zip(&batch).find(|(want, r)| r.seq != *want) {
            return Err(Error::InvalidInput(format!("display seq {} breaks the batch's sequence", r.seq)));
        }
        let log = &mut self.entries.entry(key.clone()).or_default().display;
        log.records.extend(batch.into_iter().map(|r| (r.seq, r.record)));
        Ok(InsertOutcome::Stored)
    }

    /// Records with `tool_call_id`, ascending. With `replay_old`, a record that
    /// was updated comes back as the version before its latest update.
    pub fn by_tool_call_id(&self, key: &Key, tool_call_id: &str, replay_old: bool) -> Vec<StoredDisplayRecord> {
        let Some(log) = self.display(key) else {
            return Vec::new();
        };
        log.records
            .iter()
            .filter(|(_, r)| r.tool_call_id.as_deref() == Some(tool_call_id))
            .map(|(&seq, current)| match log.previous.get(&seq) {
                Some(old) if replay_old => stored(seq, old),
                _ => stored(seq, current),
            })
            .collect()
    }

    /// Overwrite the record at `update.seq`, keeping the overwritten version.
    pub fn update(&mut self, key: &Key, update: StoredDisplayRecord) -> Result<(), Error> {
        let log = &mut self.entries.get_mut(key).ok_or(Error::NotFound)?.display;
        let slot = log.records.get_mut(&update.seq).ok_or(Error::NotFound)?;
        let old = std::mem::replace(slot, update.record);
        log.previous.insert(update.seq, old);
        Ok(())
    }

    /// At most `limit` records after `after`, ascending.
    pub fn display_list(&self, key: &Key, after: u64, limit: u32) -> Vec<StoredDisplayRecord> {
        let Some(log) = self.display(key) else {
            return Vec::new();
        };
        log.records.range((Excluded(after), Unbounded)).take(limit as usize).map(|(&seq, r)| stored(seq, r)).collect()
    }

    /// Records of every scope whose status is one of `statuses`, in (tenant,
    /// user, conversation id, seq) order, strictly after `after`.
    pub fn find_by_status(
        &self,
        statuses: &[String],
        after: Option<&DisplayPosition>,
        limit: u32,
    ) -> Vec<LocatedDisplayRecord> {
        let after = after.map(|p| {
            let s = &p.scope;
            (s.tenant.as_str(), s.user.as_str(), p.conversation_id.as_str(), p.seq)
        });
        self.entries
            .iter()
            .flat_map(|(key, e)| e.display.records.iter().map(move |(&seq, r)| (key, seq, r)))
            .filter(|(key, seq, _)| after.is_none_or(|a| (key.0.as_str(), key.1.as_str(), key.2.as_str(), *seq) > a))
            .filter(|(_, _, r)| r.status.as_ref().is_some_and(|s| statuses.contains(s)))
            .take(limit as usize)
            .map(|(key, seq, r)| LocatedDisplayRecord {
                scope: scope_of(key),
                conversation_id: key.2.clone(),
                stored: stored(seq, r),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::key;
    use crate::store::tests::scope;

    fn record(seq: u64, tool_call_id: &str, status: &str) -> StoredDisplayRecord {
        StoredDisplayRecord {
            seq,
            record: DisplayRecord {
                message_id: None,
                message_type: "assistant".to_owned(),
                content_type: "tool_call".to_owned(),
                tool_call_id: Some(tool_call_id.to_owned()),
                status: Some(status.to_owned()),
                body: status.as_bytes().to_vec(),
                created_at: 1,
                updated_at: 1,
                tag: vec![seq as u8],
            },
        }
    }

    #[test]
    fn insert_needs_the_next_seq_and_works_without_a_conversation() {
        let mut store = Store::new();
        let k = key(&scope("a"), "c");
        let late = store.insert(&k, vec![record(2, "t", "pending")]);
        assert_eq!(late, Ok(InsertOutcome::OutOfSequence(0)));
        assert!(store.entries.is_empty(), "a refused insert creates nothing");
        let batch = vec![record(1, "t", "pending"), record(2, "u", "done")];
        assert_eq!(store.insert(&k, batch), Ok(InsertOutcome::Stored));
        let again = store.insert(&k, vec![record(2, "t", "x")]);
        assert_eq!(again, Ok(InsertOutcome::OutOfSequence(2)));
        assert_eq!(store.display_list(&k, 1, 10), vec![record(2, "u", "done")]);
        assert!(store.conversation(&k).is_err());
    }

    #[test]
    fn update_overwrites_and_replay_old_returns_the_previous_version() {
        let mut store = Store::new();
        let k = key(&scope("a"), "c");
        let _ = store.insert(&k, vec![record(1, "t", "pending")]);
        assert_eq!(store.update(&k, record(1, "t", "done")), Ok(()));
        assert_eq!(store.update(&k, record(2, "t", "done")), Err(Error::NotFound));
        assert_eq!(store.by_tool_call_id(&k, "t", false), vec![record(1, "t", "done")]);
        assert_eq!(store.by_tool_call_id(&k, "t", true), vec![record(1, "t", "pending")]);
        assert_eq!(store.by_tool_call_id(&k, "other", false), vec![]);
    }

    #[test]
    fn find_by_status_pages_across_scopes_in_key_order() {
        let mut store = Store::new();
        let (a, b) = (key(&scope("a"), "c"), key(&scope("b"), "c"));
        let _ = store.insert(&b, vec![record(1, "t", "pending")]);
        let _ = store.insert(&a, vec![record(1, "t", "pending"), record(2, "u", "done")]);
        let _ = store.insert(&a, vec![record(3, "v", "pending")]);
        let wanted = ["pending".to_owned()];
        let page = |after: Option<&DisplayPosition>| {
            store
                .find_by_status(&wanted, after, 2)
                .into_iter()
                .map(|r| (r.scope.tenant, r.stored.seq))
                .collect::<Vec<_>>()
        };
        assert_eq!(page(None), [("a".to_owned(), 1), ("a".to_owned(), 3)]);
        let position = DisplayPosition { scope: scope("a"), conversation_id: "c".to_owned(), seq: 3 };
        assert_eq!(page(Some(&position)), [("b".to_owned(), 1)]);
    }
}
