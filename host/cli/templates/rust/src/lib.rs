//! {{name}}: a Stowage storage adapter (contract `stowage:store@0.2.0`, world
//! `adapter`), scaffolded by `stowage new-adapter`. It passes `stowage check`
//! as it is; change it from there.
//!
//! The in-memory-plus-/data pattern: each conversation — its header, messages
//! and display records — is one file under `/data` (the store's directory,
//! granted by the `filesystem` capability). A call reads the file into a
//! [`Conversation`], works on it in memory, and if it changed anything writes
//! it back whole and durably ([`files::save`]): what a call acknowledged
//! survives a crash, and a crash mid-write leaves the previous version.
//!
//! The host numbers messages and display records (contiguous seqs from 1), so
//! both are plain vectors here, at index `seq - 1`. Content and tags are
//! opaque bytes: stored and returned exactly, never interpreted.

mod codec;
mod files;

wit_bindgen::generate!({ path: "wit", world: "adapter" });

use exports::stowage::store::conversation_store::{
    AlreadyStored, AppendOutcome, Guest as ConversationStore, IndexedSeq, MessageRange,
    TruncateOutcome,
};
use exports::stowage::store::display_store::{
    DisplayPosition, DisplayRecord, Guest as DisplayStore, InsertOutcome, LocatedDisplayRecord,
    StoredDisplayRecord,
};
use stowage::store::types::{
    Conflict, ConversationInfo, ConversationMeta, Error, Message, Scope, StoredMessage,
};

/// One conversation's state, as in its file.
pub struct Conversation {
    pub scope: Scope,
    pub id: String,
    /// `None` until `open`: display records may exist without a history.
    pub header: Option<Header>,
    /// Message `seq` is at index `seq - 1`.
    pub messages: Vec<Message>,
    /// Display record `seq` is at index `seq - 1`.
    pub display: Vec<DisplayRecord>,
}

pub struct Header {
    pub meta: ConversationMeta,
    pub created_at: i64,
    pub updated_at: i64,
    pub version: u64,
}

impl Conversation {
    fn info(&self, header: &Header) -> ConversationInfo {
        let count = self.messages.len() as u64;
        ConversationInfo {
            id: self.id.clone(),
            scope: self.scope.clone(),
            meta: header.meta.clone(),
            created_at: header.created_at,
            updated_at: header.updated_at,
            message_count: count,
            last_seq: count,
            version: header.version,
        }
    }

    /// The header, or `not-found` if the conversation was never opened.
    fn header(&mut self) -> Result<&mut Header, Error> {
        self.header.as_mut().ok_or(Error::NotFound)
    }
}

/// `invalid-input` unless `seqs` are contiguous.
fn check_contiguous(what: &str, seqs: impl Iterator<Item = u64>) -> Result<(), Error> {
    let seqs: Vec<u64> = seqs.collect();
    match seqs.windows(2).position(|w| w[1] != w[0].wrapping_add(1)) {
        Some(i) => Err(Error::InvalidInput(format!(
            "{what}: seqs are not contiguous at item {}",
            i + 1
        ))),
        None => Ok(()),
    }
}

/// `conflict` unless `expected` is absent or equals `actual`.
fn check_version(expected: Option<u64>, actual: u64) -> Result<(), Error> {
    match expected {
        Some(expected) if expected != actual => Err(Error::Conflict(Conflict {
            expected_version: expected,
            actual_version: actual,
        })),
        _ => Ok(()),
    }
}

fn stored(first_seq: u64, records: &[DisplayRecord]) -> Vec<StoredDisplayRecord> {
    (first_seq..)
        .zip(records)
        .map(|(seq, r)| StoredDisplayRecord {
            seq,
            record: r.clone(),
        })
        .collect()
}

struct Adapter;

impl ConversationStore for Adapter {
    fn open(
        scope: Scope,
        id: String,
        meta: ConversationMeta,
        now: i64,
    ) -> Result<ConversationInfo, Error> {
        let mut c = files::load(&scope, &id)?;
        if c.header.is_none() {
            c.header = Some(Header {
                meta,
                created_at: now,
                updated_at: now,
                version: 0,
            });
            files::save(&c)?;
        }
        let header = c.header.as_ref().ok_or(Error::NotFound)?;
        Ok(c.info(header))
    }

    fn info(scope: Scope, id: String) -> Result<ConversationInfo, Error> {
        let c = files::load(&scope, &id)?;
        let header = c.header.as_ref().ok_or(Error::NotFound)?;
        Ok(c.info(header))
    }

    fn update_meta(scope: Scope, id: String, meta: ConversationMeta) -> Result<(), Error> {
        let mut c = files::load(&scope, &id)?;
        c.header()?.meta = meta;
        files::save(&c)
    }

    fn append(
        scope: Scope,
        id: String,
        messages: Vec<StoredMessage>,
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<AppendOutcome, Error> {
        check_contiguous("append", messages.iter().map(|m| m.seq))?;
        let mut c = files::load(&scope, &id)?;
        let last_seq = c.messages.len() as u64;
        // The contract's order: not-found, already-stored, conflict, out-of-sequence.
        let version = c.header()?.version;
        let seqs: Vec<IndexedSeq> = (0u32..)
            .zip(&messages)
            .filter_map(|(index, m)| {
                let at = c
                    .messages
                    .iter()
                    .position(|stored| stored.id == m.message.id)?;
                Some(IndexedSeq {
                    index,
                    seq: at as u64 + 1,
                })
            })
            .collect();
        if !seqs.is_empty() {
            return Ok(AppendOutcome::AlreadyStored(AlreadyStored {
                seqs,
                version,
            }));
        }
        check_version(expected_version, version)?;
        let Some(first) = messages.first() else {
            return Ok(AppendOutcome::Stored(version));
        };
        if first.seq != last_seq + 1 {
            return Ok(AppendOutcome::OutOfSequence(last_seq));
        }
        c.messages.extend(messages.into_iter().map(|m| m.message));
        let header = c.header()?;
        header.version += 1;
        header.updated_at = now;
        let version = header.version;
        files::save(&c)?;
        Ok(AppendOutcome::Stored(version))
    }

    fn replace(
        scope: Scope,
        id: String,
        messages: Vec<StoredMessage>,
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<u64, Error> {
        check_contiguous("replace", messages.iter().map(|m| m.seq))?;
        if messages.first().is_some_and(|m| m.seq != 1) {
            return Err(Error::InvalidInput(
                "replace: messages must be numbered from seq 1".into(),
            ));
        }
        let mut c = files::load(&scope, &id)?;
        let header = c.header()?;
        check_version(expected_version, header.version)?;
        header.version += 1;
        header.updated_at = now;
        let version = header.version;
        c.messages = messages.into_iter().map(|m| m.message).collect();
        files::save(&c)?;
        Ok(version)
    }

    fn load(
        scope: Scope,
        id: String,
        range: MessageRange,
        limit: u32,
    ) -> Result<Vec<StoredMessage>, Error> {
        let mut c = files::load(&scope, &id)?;
        c.header()?;
        let last = c.messages.len() as u64;
        let limit = u64::from(limit);
        let (first, end) = match range {
            MessageRange::After(seq) => (
                seq.min(last) + 1,
                seq.min(last).saturating_add(limit).min(last),
            ),
            MessageRange::Latest => (last.saturating_sub(limit) + 1, last),
            MessageRange::Before(seq) => {
                let end = seq.saturating_sub(1).min(last);
                (end.saturating_sub(limit) + 1, end)
            }
        };
        Ok((first..=end)
            .map(|seq| StoredMessage {
                seq,
                message: c.messages[seq as usize - 1].clone(),
            })
            .collect())
    }

    fn truncate_after(
        scope: Scope,
        id: String,
        seq: u64,
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<TruncateOutcome, Error> {
        let mut c = files::load(&scope, &id)?;
        let last = c.messages.len() as u64;
        let header = c.header()?;
        if seq >= last {
            return Ok(TruncateOutcome {
                removed: 0,
                version: header.version,
            });
        }
        check_version(expected_version, header.version)?;
        header.version += 1;
        header.updated_at = now;
        let version = header.version;
        c.messages.truncate(seq as usize);
        files::save(&c)?;
        Ok(TruncateOutcome {
            removed: last - seq,
            version,
        })
    }

    fn delete(scope: Scope, id: String) -> Result<bool, Error> {
        files::delete(&scope, &id)
    }

    fn list(
        scope: Scope,
        after: Option<String>,
        limit: u32,
    ) -> Result<Vec<ConversationInfo>, Error> {
        let mut found: Vec<ConversationInfo> = files::all()?
            .iter()
            .filter(|c| c.scope.tenant == scope.tenant && c.scope.user == scope.user)
            .filter(|c| after.as_ref().is_none_or(|after| c.id > *after))
            .filter_map(|c| c.header.as_ref().map(|header| c.info(header)))
            .collect();
        // `String` order is byte-wise UTF-8 order, as the contract asks.
        found.sort_by(|a, b| a.id.cmp(&b.id));
        found.truncate(limit as usize);
        Ok(found)
    }
}

impl DisplayStore for Adapter {
    fn insert(
        scope: Scope,
        id: String,
        records: Vec<StoredDisplayRecord>,
    ) -> Result<InsertOutcome, Error> {
        check_contiguous("display insert", records.iter().map(|r| r.seq))?;
        let Some(first) = records.first() else {
            return Ok(InsertOutcome::Stored);
        };
        let mut c = files::load(&scope, &id)?;
        let last = c.display.len() as u64;
        if first.seq != last + 1 {
            return Ok(InsertOutcome::OutOfSequence(last));
        }
        c.display.extend(records.into_iter().map(|r| r.record));
        files::save(&c)?;
        Ok(InsertOutcome::Stored)
    }

    fn by_tool_call_id(
        scope: Scope,
        id: String,
        tool_call_id: String,
    ) -> Result<Vec<StoredDisplayRecord>, Error> {
        let c = files::load(&scope, &id)?;
        let mut records = stored(1, &c.display);
        records.retain(|r| r.record.tool_call_id.as_deref() == Some(tool_call_id.as_str()));
        Ok(records)
    }

    fn update(scope: Scope, id: String, record: StoredDisplayRecord) -> Result<(), Error> {
        let mut c = files::load(&scope, &id)?;
        let index = record.seq.checked_sub(1).ok_or(Error::NotFound)?;
        let slot = c.display.get_mut(index as usize).ok_or(Error::NotFound)?;
        *slot = record.record;
        files::save(&c)
    }

    fn list(
        scope: Scope,
        id: String,
        after: u64,
        limit: u32,
    ) -> Result<Vec<StoredDisplayRecord>, Error> {
        let c = files::load(&scope, &id)?;
        let start = after.min(c.display.len() as u64) as usize;
        let end = start.saturating_add(limit as usize).min(c.display.len());
        Ok(stored(start as u64 + 1, &c.display[start..end]))
    }

    fn find_by_status(
        statuses: Vec<String>,
        after: Option<DisplayPosition>,
        limit: u32,
    ) -> Result<Vec<LocatedDisplayRecord>, Error> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        // Every conversation of the store, in (tenant, user, id) order: simple,
        // and linear in the store's size (the host calls this at start-up).
        let mut conversations = files::all()?;
        conversations.sort_by(|a, b| {
            (&a.scope.tenant, &a.scope.user, &a.id).cmp(&(&b.scope.tenant, &b.scope.user, &b.id))
        });
        let after = after.map(|p| (p.scope.tenant, p.scope.user, p.conversation_id, p.seq));
        let mut found = Vec::new();
        for c in &conversations {
            for stored in stored(1, &c.display) {
                let wanted = stored
                    .record
                    .status
                    .as_ref()
                    .is_some_and(|s| statuses.contains(s));
                let position = (
                    c.scope.tenant.clone(),
                    c.scope.user.clone(),
                    c.id.clone(),
                    stored.seq,
                );
                if wanted && after.as_ref().is_none_or(|after| position > *after) {
                    found.push(LocatedDisplayRecord {
                        scope: c.scope.clone(),
                        conversation_id: c.id.clone(),
                        stored,
                    });
                    if found.len() >= limit as usize {
                        return Ok(found);
                    }
                }
            }
        }
        Ok(found)
    }
}

export!(Adapter);
