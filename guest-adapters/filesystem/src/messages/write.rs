//! Changing a message history: `append` (one frame per batch, so a batch is
//! stored whole or not at all), and `replace` / `truncate-after`, which write
//! the whole log anew (so a truncated log holds no dead bytes).
//!
//! Durability: an appended frame is `sync_data`ed before `append` returns; a
//! rewritten log is fsynced, renamed into place and its directory fsynced
//! before the call returns ([`crate::durable`]).

use std::collections::HashSet;

use super::entry;
use super::read::for_each_message;
use super::state::MessageState;
use super::{Live, Store};
use crate::durable;
use crate::exports::stowage::store::conversation_store::{AlreadyStored, AppendOutcome, IndexedSeq, TruncateOutcome};
use crate::frame::{self, FrameLoc};
use crate::logfile::{Damage, LogState, new_log_id};
use crate::rewrite::{CHUNK_BYTES, CHUNK_RECORDS, Rewrite};
use crate::stowage::store::types::{Conflict, Error, Scope, StoredMessage};

fn check_version(expected: Option<u64>, actual: u64) -> Result<(), Error> {
    match expected {
        Some(expected) if expected != actual => {
            Err(Error::Conflict(Conflict { expected_version: expected, actual_version: actual }))
        }
        _ => Ok(()),
    }
}

/// Seqs contiguous in batch order, starting at `first` if given; ids unique.
fn check_batch(messages: &[StoredMessage], first: Option<u64>) -> Result<(), Error> {
    if let (Some(first), Some(m)) = (first, messages.first())
        && m.seq != first
    {
        return Err(Error::InvalidInput(format!("the first message has seq {}, expected {first}", m.seq)));
    }
    for (i, pair) in messages.windows(2).enumerate() {
        if pair[0].seq.checked_add(1) != Some(pair[1].seq) {
            return Err(Error::InvalidInput(format!(
                "message {} of the batch has seq {} after seq {}: seqs must be contiguous",
                i + 1,
                pair[1].seq,
                pair[0].seq
            )));
        }
    }
    let mut ids = HashSet::with_capacity(messages.len());
    for m in messages {
        if !ids.insert(m.message.id.as_str()) {
            return Err(Error::InvalidInput(format!("message id {:?} appears twice in the batch", m.message.id)));
        }
    }
    Ok(())
}

/// Starts a rewrite of `live`'s log at `version`/`at`, copying its first
/// `keep` messages (converting 0.1.0 ones).
fn rewrite_keeping(live: &Live, keep: u64, version: u64, at: i64) -> Result<Chunked, Error> {
    let header = entry::encode_header(new_log_id(), version, at);
    let mut out =
        Chunked { rewrite: Rewrite::start(&live.log_path, &header)?, chunk: Vec::new(), bytes: 0, version, at };
    if let Some(file) = &live.file {
        for_each_message(file, &live.log_path, &live.conv.state, keep, |m| out.push(m))?;
    }
    Ok(out)
}

/// A rewrite that groups messages into frames of bounded size.
struct Chunked {
    rewrite: Rewrite<MessageState>,
    chunk: Vec<StoredMessage>,
    bytes: usize,
    version: u64,
    at: i64,
}

impl Chunked {
    fn push(&mut self, message: StoredMessage) -> Result<(), Error> {
        self.bytes += message.message.content.len() + message.message.tag.len() + message.message.id.len();
        self.chunk.push(message);
        if self.chunk.len() >= CHUNK_RECORDS || self.bytes >= CHUNK_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Error> {
        if !self.chunk.is_empty() {
            let payload = entry::encode_append(self.version, self.at, &self.chunk)?;
            self.rewrite.frame(&payload)?;
            self.chunk.clear();
            self.bytes = 0;
        }
        Ok(())
    }

    /// Flushes, adds `last` (a frame of its own) if given, and commits.
    fn finish(mut self, last: Option<&[u8]>) -> Result<MessageState, Error> {
        self.flush()?;
        if let Some(payload) = last {
            self.rewrite.frame(payload)?;
        }
        self.rewrite.commit()
    }
}

fn append_to(
    live: &mut Live,
    messages: Vec<StoredMessage>,
    expected: Option<u64>,
    now: i64,
) -> Result<AppendOutcome, Error> {
    check_batch(&messages, None)?;
    let state = &live.conv.state;
    let seqs: Vec<IndexedSeq> = messages
        .iter()
        .zip(0u32..)
        .filter_map(|(m, index)| state.ids.get(m.message.id.as_str()).map(|&seq| IndexedSeq { index, seq }))
        .collect();
    if !seqs.is_empty() {
        return Ok(AppendOutcome::AlreadyStored(AlreadyStored { seqs, version: state.version }));
    }
    check_version(expected, state.version)?;
    let Some(first) = messages.first() else {
        return Ok(AppendOutcome::Stored(state.version));
    };
    if first.seq != state.last_seq() + 1 {
        return Ok(AppendOutcome::OutOfSequence(state.last_seq()));
    }
    let version = state.version + 1;
    let payload = entry::encode_append(version, now, &messages)?;
    live.cacheable = false;
    match (&live.file, state.tail.log_id) {
        (Some(file), Some(_)) => {
            let bytes = frame::encode(&payload)?;
            let tail = &state.tail;
            durable::append_frame(file, &live.log_path, tail.valid_len, tail.file_len, &bytes)?;
            let loc = FrameLoc { offset: tail.valid_len, len: bytes.len() as u32 };
            let state = &mut live.conv.state;
            state.apply(&live.log_path, loc, &payload)?;
            state.tail.valid_len = loc.end();
            state.tail.file_len = loc.end();
        }
        // No log yet, or one of the 0.1.0 adapter: write it anew, this batch last.
        _ => {
            let at = state.updated_at.unwrap_or(live.conv.meta.created_at);
            let rewrite = rewrite_keeping(live, state.last_seq(), state.version, at)?;
            live.conv.state = rewrite.finish(Some(&payload))?;
        }
    }
    live.cacheable = true;
    Ok(AppendOutcome::Stored(version))
}

fn replace_in(live: &mut Live, messages: Vec<StoredMessage>, expected: Option<u64>, now: i64) -> Result<u64, Error> {
    check_batch(&messages, Some(1))?;
    check_version(expected, live.conv.state.version)?;
    let version = live.conv.state.version + 1;
    live.cacheable = false;
    let mut rewrite = rewrite_keeping(live, 0, version, now)?;
    for message in messages {
        rewrite.push(message)?;
    }
    live.conv.state = rewrite.finish(None)?;
    live.cacheable = true;
    Ok(version)
}

fn truncate_in(live: &mut Live, seq: u64, expected: Option<u64>, now: i64) -> Result<TruncateOutcome, Error> {
    let state = &live.conv.state;
    let last = state.last_seq();
    if seq >= last {
        return Ok(TruncateOutcome { removed: 0, version: state.version });
    }
    check_version(expected, state.version)?;
    let version = state.version + 1;
    live.cacheable = false;
    let rewrite = rewrite_keeping(live, seq, version, now)?;
    live.conv.state = rewrite.finish(None)?;
    live.cacheable = true;
    Ok(TruncateOutcome { removed: last - seq, version })
}

impl Store {
    pub fn append(
        &mut self,
        scope: &Scope,
        id: &str,
        messages: Vec<StoredMessage>,
        expected: Option<u64>,
        now: i64,
    ) -> Result<AppendOutcome, Error> {
        let mut live = self.live_conversation(scope, id, true, Damage::Fail)?.ok_or(Error::NotFound)?;
        let outcome = append_to(&mut live, messages, expected, now);
        self.keep(live);
        outcome
    }

    pub fn replace(
        &mut self,
        scope: &Scope,
        id: &str,
        messages: Vec<StoredMessage>,
        expected: Option<u64>,
        now: i64,
    ) -> Result<u64, Error> {
        let mut live = self.live_conversation(scope, id, false, Damage::Fail)?.ok_or(Error::NotFound)?;
        let outcome = replace_in(&mut live, messages, expected, now);
        self.keep(live);
        outcome
    }

    pub fn truncate_after(
        &mut self,
        scope: &Scope,
        id: &str,
        seq: u64,
        expected: Option<u64>,
        now: i64,
    ) -> Result<TruncateOutcome, Error> {
        let mut live = self.live_conversation(scope, id, false, Damage::Fail)?.ok_or(Error::NotFound)?;
        let outcome = truncate_in(&mut live, seq, expected, now);
        self.keep(live);
        outcome
    }
}
