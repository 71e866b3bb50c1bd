//! Writing and reading the message history.
//!
//! The host numbers appends: it sends a batch numbered from the last seq it
//! knows; the adapter stores it whole at those seqs, or says which messages are
//! already stored (a retry) or that the conversation moved on (another writer).
//! The host then renumbers and sends the rest — each round stores all of what it
//! sends or nothing, so a batch is never split by a failure.

use std::collections::HashSet;

use super::Store;
use crate::adapter::client::{Loaded, Prepared};
use crate::adapter::pool::deferring;
use crate::adapter::raw::{AppendReply, Range};
use crate::cursor::{self, MessagePosition};
use crate::error::Error;
use crate::model::{
    AppendOutcome, ConversationMeta, LoadFrom, LoadRequest, Message, NewMessage, OrphanPolicy, Page, RepairReport,
    Scope,
};
use crate::repair;
use crate::util::clock::now_millis;
use crate::validate;

/// Messages per adapter call when scanning (repairs, pair checks, whole loads).
pub(super) const SCAN_BATCH: u32 = 500;
/// Rounds of renumbering before an append gives up (only a writer that keeps
/// appending to the same conversation from another host gets here).
const MAX_ROUNDS: usize = 8;

impl Store {
    /// Validates a batch, assigns ids and timestamps, encodes each message once.
    fn prepare(
        &self,
        scope: &Scope,
        id: &str,
        messages: Vec<NewMessage>,
    ) -> Result<(Vec<String>, Vec<Prepared>), Error> {
        validate::batch(&messages, self.limits())?;
        let now = now_millis();
        let mut seen = HashSet::with_capacity(messages.len());
        let mut ids = Vec::with_capacity(messages.len());
        let mut prepared = Vec::with_capacity(messages.len());
        let mut total = 0u64;
        for (index, mut m) in messages.into_iter().enumerate() {
            let message_id = m.id.take().unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
            if !seen.insert(message_id.clone()) {
                return Err(Error::InvalidInput(format!(
                    "message {index}: id \"{}\" appears more than once in the batch",
                    validate::shown(&message_id)
                )));
            }
            let created_at = m.created_at.unwrap_or(now);
            let p = self.client().prepare(scope, id, message_id.clone(), created_at, m).map_err(|e| match e {
                Error::InvalidInput(reason) => Error::InvalidInput(format!("message {index}: {reason}")),
                other => other,
            })?;
            total += p.content.len() as u64;
            ids.push(message_id);
            prepared.push(p);
        }
        if total > self.limits().max_batch_bytes {
            return Err(Error::InvalidInput(format!(
                "the batch is {total} bytes encoded; the limit is {}",
                self.limits().max_batch_bytes
            )));
        }
        Ok((ids, prepared))
    }

    pub(super) async fn append_now(
        &self,
        scope: &Scope,
        id: &str,
        messages: Vec<NewMessage>,
        expected_version: Option<u64>,
        create: Option<ConversationMeta>,
    ) -> Result<AppendOutcome, Error> {
        self.check_key(scope, id)?;
        if let Some(meta) = &create {
            validate::meta(meta)?;
        }
        let (ids, prepared) = self.prepare(scope, id, messages)?;
        let _guard = self.lock_conversation(scope, id).await;
        let Some(meta) = create else {
            let last = self.owned_last_seq(scope, id).await?;
            return self.append_at(scope, id, ids, prepared, expected_version, last).await;
        };
        // What the calls before the append commit (the first call on a fresh
        // database migrates its schema; then the new conversation) is made
        // durable by the append's flush, which covers it, instead of flushes of
        // its own; and before anything is answered in any case. A conversation
        // this host does not know is opened at once: `open` finds or creates it
        // (its info verified as `info`'s would be), one call instead of two.
        let (start, earlier) = deferring(async {
            match self.seqs().last_seq(scope, id) {
                Some(last) => Ok(last),
                None => {
                    let info = self.client().open(scope, id, &meta, now_millis()).await?;
                    self.seqs().set_last_seq(scope, id, info.last_seq);
                    Ok(info.last_seq)
                }
            }
        })
        .await;
        let appended = match start {
            Ok(last) => self.append_at(scope, id, ids, prepared, expected_version, last).await,
            Err(e) => Err(e),
        };
        let durable = earlier.durable().await;
        let appended = appended?;
        durable?;
        Ok(appended)
    }

    /// The rounds of an append (under the conversation's lock) whose history ends
    /// at `last` as far as this host knows.
    async fn append_at(
        &self,
        scope: &Scope,
        id: &str,
        ids: Vec<String>,
        prepared: Vec<Prepared>,
        expected_version: Option<u64>,
        last: u64,
    ) -> Result<AppendOutcome, Error> {
        if prepared.is_empty() {
            let info = self.info_locked(scope, id).await?;
            return Ok(AppendOutcome { ids, seqs: Vec::new(), stored: 0, version: info.version });
        }
        let mut seqs: Vec<Option<u64>> = vec![None; prepared.len()];
        let mut pending: Vec<usize> = (0..prepared.len()).collect();
        let (mut stored, mut version, mut last) = (0u32, 0u64, last);
        for round in 0.. {
            if round == MAX_ROUNDS {
                self.seqs().forget(scope, id);
                return Err(Error::Storage(format!(
                    "conversation `{id}` kept moving under another writer; nothing of the last attempt was stored, retry"
                )));
            }
            let first = last.saturating_add(1);
            let batch: Vec<&Prepared> = pending.iter().map(|&i| &prepared[i]).collect();
            let now = now_millis();
            let reply = match self.client().append(scope, id, first, &batch, expected_version, now).await {
                Ok(reply) => reply,
                Err(e) => {
                    // A failed call may have committed (a lost acknowledgment):
                    // read the numbering afresh next time.
                    self.seqs().forget(scope, id);
                    return Err(e);
                }
            };
            match reply {
                AppendReply::Stored { version: v, seqs: new, stored: n } => {
                    for (k, &i) in pending.iter().enumerate() {
                        seqs[i] = new.get(k).copied();
                    }
                    stored += n;
                    version = v;
                    let newest = new.iter().copied().max().unwrap_or(last).max(last);
                    self.seqs().set_last_seq(scope, id, newest);
                    break;
                }
                AppendReply::AlreadyStored { seqs: found, version: v } => {
                    version = v;
                    let resolved: HashSet<u32> = found.iter().map(|(k, _)| *k).collect();
                    for (k, seq) in found {
                        seqs[pending[k as usize]] = Some(seq);
                    }
                    pending = pending
                        .iter()
                        .enumerate()
                        .filter(|(k, _)| !resolved.contains(&(*k as u32)))
                        .map(|(_, &i)| i)
                        .collect();
                    if pending.is_empty() {
                        break;
                    }
                }
                AppendReply::OutOfSequence { last_seq } => {
                    last = last_seq;
                    self.seqs().set_last_seq(scope, id, last_seq);
                }
            }
        }
        Ok(AppendOutcome { ids, seqs: seqs.into_iter().map(|s| s.unwrap_or(0)).collect(), stored, version })
    }

    pub(super) async fn replace_now(
        &self,
        scope: &Scope,
        id: &str,
        messages: Vec<NewMessage>,
        expected_version: Option<u64>,
    ) -> Result<u64, Error> {
        self.check_key(scope, id)?;
        let (_, prepared) = self.prepare(scope, id, messages)?;
        let _guard = self.lock_conversation(scope, id).await;
        self.owned_last_seq(scope, id).await?;
        let result = self.client().replace(scope, id, &prepared, expected_version, now_millis()).await;
        match &result {
            Ok(_) => self.seqs().set_last_seq(scope, id, prepared.len() as u64),
            Err(_) => self.seqs().forget(scope, id),
        }
        result
    }

    /// One checked adapter load. The caller holds the conversation lock.
    pub(super) async fn fetch(&self, scope: &Scope, id: &str, range: Range, limit: u32) -> Result<Loaded, Error> {
        self.client().load(scope, id, range, limit).await
    }

    pub(super) async fn load_now(&self, scope: &Scope, id: &str, request: LoadRequest) -> Result<Page, Error> {
        self.check_key(scope, id)?;
        validate::limit(request.limit, self.limits())?;
        let position = match request.from {
            LoadFrom::Latest => None,
            LoadFrom::After(seq) => Some(MessagePosition::After(seq)),
            LoadFrom::Before(seq) => Some(MessagePosition::Before(seq)),
            LoadFrom::Cursor(ref c) => Some(cursor::decode_message(scope, id, c)?),
        };
        let limit = request.limit;
        let (range, fetch) = match position {
            None => (Range::Latest, limit),
            Some(MessagePosition::Before(seq)) => (Range::Before(seq), limit),
            // One extra tells whether newer messages remain.
            Some(MessagePosition::After(seq)) => (Range::After(seq), limit.saturating_add(1)),
        };
        let _guard = self.lock_conversation(scope, id).await;
        let Loaded { mut messages, unverified } = self.fetch(scope, id, range, fetch).await?;
        let next = match position {
            Some(MessagePosition::After(_)) => {
                if messages.len() > limit as usize {
                    messages.truncate(limit as usize);
                    messages.last().map(|m| MessagePosition::After(m.seq))
                } else {
                    None
                }
            }
            // Seqs are contiguous from 1: older messages exist iff the first is not 1.
            _ => messages.first().filter(|m| m.seq > 1).map(|m| MessagePosition::Before(m.seq)),
        };
        let repairs = if request.orphans == OrphanPolicy::Keep {
            None
        } else {
            // A call's result may lie beyond the page: collect every later result.
            let mut later = HashSet::new();
            if let Some(last) = messages.last() {
                let mut after = last.seq;
                loop {
                    let batch = self.fetch(scope, id, Range::After(after), SCAN_BATCH).await?.messages;
                    later.extend(repair::result_ids(&batch));
                    match batch.last() {
                        Some(m) if batch.len() == SCAN_BATCH as usize => after = m.seq,
                        _ => break,
                    }
                }
            }
            let orphans = repair::orphaned_calls(&messages, &later);
            messages = repair::apply(request.orphans, messages, &orphans);
            Some(RepairReport { policy: request.orphans, orphaned_calls: orphans })
        };
        let next_cursor = next.map(|p| cursor::encode_message(scope, id, p));
        Ok(Page { messages, next_cursor, repairs, unverified })
    }

    pub(super) async fn load_all_now(&self, scope: &Scope, id: &str) -> Result<Vec<Message>, Error> {
        self.check_key(scope, id)?;
        let page = self.limits().max_page_size;
        let _guard = self.lock_conversation(scope, id).await;
        let mut messages: Vec<Message> = Vec::new();
        loop {
            let after = messages.last().map_or(0, |m| m.seq);
            let batch = self.fetch(scope, id, Range::After(after), page).await?.messages;
            let full = batch.len() == page as usize;
            messages.extend(batch);
            if !full {
                return Ok(messages);
            }
        }
    }
}
