//! Reading messages back: only the frames that hold the requested seqs are
//! read (adjacent ones in one call), each checked against its checksum, so a
//! page costs the same at seq 10 as at seq 100,000.

use std::fs::File;
use std::path::Path;

use super::Store;
use super::entry::{self, APPEND_KIND};
use super::state::MessageState;
use crate::durable;
use crate::exports::stowage::store::conversation_store::MessageRange;
use crate::frame::FrameLoc;
use crate::legacy::{self, JSON_START, convert, types::Entry as LegacyEntry};
use crate::logfile::{Damage, undecodable};
use crate::stowage::store::types::{Error, Scope, StoredMessage};

/// Every message stored in one frame, in frame order.
fn decode_frame(path: &Path, loc: FrameLoc, payload: &[u8]) -> Result<Vec<StoredMessage>, Error> {
    match payload.first() {
        Some(&APPEND_KIND) => entry::decode_append(payload).map_err(|e| undecodable(path, loc, e)),
        Some(&JSON_START) => match legacy::message_entry(payload).map_err(|e| undecodable(path, loc, e))? {
            LegacyEntry::Append { messages, .. } | LegacyEntry::Reset { messages, .. } => messages
                .iter()
                .map(|m| {
                    convert::stored_message(m).map_err(|e| undecodable(path, loc, format!("message {}: {e}", m.seq)))
                })
                .collect(),
            LegacyEntry::Truncate { .. } => Ok(Vec::new()),
        },
        _ => Ok(Vec::new()),
    }
}

/// The messages with seqs `first..=last` (all stored), in seq order.
pub(super) fn read_messages(
    file: &File,
    path: &Path,
    state: &MessageState,
    first: u64,
    last: u64,
) -> Result<Vec<StoredMessage>, Error> {
    if first == 0 || first > last || last > state.last_seq() {
        return Ok(Vec::new());
    }
    let locs = &state.locs[(first - 1) as usize..last as usize];
    let mut frames: Vec<FrameLoc> = locs.iter().map(|l| l.frame).collect();
    frames.sort_unstable();
    frames.dedup();
    let mut decoded: Vec<Vec<Option<StoredMessage>>> = Vec::with_capacity(frames.len());
    durable::for_each_payload(file, path, &frames, |_, loc, payload| {
        decoded.push(decode_frame(path, loc, payload)?.into_iter().map(Some).collect());
        Ok(())
    })?;
    let mut out = Vec::with_capacity(locs.len());
    for (seq, loc) in (first..).zip(locs) {
        let slot = frames
            .binary_search(&loc.frame)
            .ok()
            .and_then(|f| decoded[f].get_mut(loc.index as usize))
            .and_then(Option::take);
        match slot {
            Some(message) if message.seq == seq => out.push(message),
            _ => {
                return Err(Error::Storage(format!(
                    "{}: the record at byte {} does not hold message {seq} where the log's \
                     index says it is",
                    path.display(),
                    loc.frame.offset
                )));
            }
        }
    }
    Ok(out)
}

/// Calls `each` with the messages `1..=last`, in order, reading a bounded
/// number of frames at a time (for rewriting a log).
pub(super) fn for_each_message(
    file: &File,
    path: &Path,
    state: &MessageState,
    last: u64,
    mut each: impl FnMut(StoredMessage) -> Result<(), Error>,
) -> Result<(), Error> {
    const BATCH: u64 = 1024;
    let mut first = 1;
    while first <= last {
        let end = last.min(first + BATCH - 1);
        for message in read_messages(file, path, state, first, end)? {
            each(message)?;
        }
        first = end + 1;
    }
    Ok(())
}

/// The seqs `range` and `limit` select among `1..=last` (empty when `first > last`).
fn bounds(range: MessageRange, limit: u32, last: u64) -> (u64, u64) {
    let limit = u64::from(limit);
    if limit == 0 {
        return (1, 0);
    }
    match range {
        MessageRange::Latest => (last.saturating_sub(limit - 1).max(1), last),
        MessageRange::After(seq) => (seq.saturating_add(1), last.min(seq.saturating_add(limit))),
        MessageRange::Before(seq) => {
            let end = last.min(seq.saturating_sub(1));
            (end.saturating_sub(limit - 1).max(1), end)
        }
    }
}

impl Store {
    pub fn load(
        &mut self,
        scope: &Scope,
        id: &str,
        range: MessageRange,
        limit: u32,
    ) -> Result<Vec<StoredMessage>, Error> {
        let live = self.live_conversation(scope, id, false, Damage::Fail)?.ok_or(Error::NotFound)?;
        let (first, last) = bounds(range, limit, live.conv.state.last_seq());
        let page = match &live.file {
            Some(file) => read_messages(file, &live.log_path, &live.conv.state, first, last),
            None => Ok(Vec::new()),
        };
        self.keep(live);
        page
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_select_the_documented_seqs() {
        let cases = [
            (MessageRange::Latest, 3, 10, (8, 10)),
            (MessageRange::Latest, 30, 10, (1, 10)),
            (MessageRange::Latest, 3, 0, (1, 0)),
            (MessageRange::After(0), 3, 10, (1, 3)),
            (MessageRange::After(8), 5, 10, (9, 10)),
            (MessageRange::After(10), 5, 10, (11, 10)),
            (MessageRange::After(u64::MAX), 5, 10, (u64::MAX, 10)),
            (MessageRange::Before(5), 2, 10, (3, 4)),
            (MessageRange::Before(1), 2, 10, (1, 0)),
            (MessageRange::Before(0), 2, 10, (1, 0)),
            (MessageRange::Before(100), 3, 10, (8, 10)),
        ];
        for (range, limit, last, expected) in cases {
            let (a, b) = bounds(range, limit, last);
            // Empty ranges may be expressed differently; compare what they select.
            let selected: Vec<u64> = (a..=b).collect();
            let wanted: Vec<u64> = (expected.0..=expected.1).collect();
            assert_eq!(selected, wanted, "{range:?} limit {limit} last {last}");
        }
    }
}
