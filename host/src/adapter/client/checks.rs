//! Every rule an adapter's answer must keep before anything of it reaches a
//! caller, as pure functions over the boundary records. Each returns the
//! violation, worded for an error message (never with content).

use std::collections::HashSet;

use crate::adapter::raw::{AppendReply, DisplayPosition, InsertReply, Range, RawInfo, RawLocated, RawStored};
use crate::model::Scope;

pub type Violation = String;

/// An answer to a call on (scope, id) is about that conversation.
pub fn same_conversation(info: &RawInfo, scope: &Scope, id: &str) -> Result<(), Violation> {
    if &info.scope != scope || info.id != id {
        return Err("returned another conversation than the one asked for".into());
    }
    Ok(())
}

/// Seqs are contiguous from 1, so a conversation holds exactly `last-seq` messages.
pub fn counts(info: &RawInfo) -> Result<(), Violation> {
    if info.message_count != info.last_seq {
        return Err(format!(
            "reported {} messages with last seq {} (seqs are contiguous from 1)",
            info.message_count, info.last_seq
        ));
    }
    if info.last_seq > 0 && info.version == 0 {
        return Err(format!("reported version 0 for a conversation with {} messages", info.last_seq));
    }
    Ok(())
}

/// A listing: at most `limit`, all of `scope`, strictly ascending ids after `after`.
pub fn listing(found: &[RawInfo], scope: &Scope, after: Option<&str>, limit: u32) -> Result<(), Violation> {
    if found.len() > limit as usize {
        return Err(format!("list returned {} conversations for a limit of {limit}", found.len()));
    }
    if found.iter().any(|c| &c.scope != scope) {
        return Err("list returned a conversation of another scope".into());
    }
    let mut previous = after;
    for c in found {
        if previous.is_some_and(|p| c.id.as_str() <= p) {
            return Err("list returned conversations out of order or not after the cursor".into());
        }
        previous = Some(&c.id);
    }
    Ok(())
}

/// A page of messages: at most `limit`, seqs ≥ 1, ascending and contiguous, all
/// inside `range`, no message id twice.
pub fn page(found: &[RawStored], range: Range, limit: u32) -> Result<(), Violation> {
    if found.len() > limit as usize {
        return Err(format!("load returned {} messages for a limit of {limit}", found.len()));
    }
    if found.first().is_some_and(|m| m.seq == 0) {
        return Err("load returned seq 0".into());
    }
    for pair in found.windows(2) {
        if pair[0].seq.checked_add(1) != Some(pair[1].seq) {
            return Err(format!("load returned seq {} after seq {}", pair[1].seq, pair[0].seq));
        }
    }
    // Out-of-range answers would also make the host's scans loop forever.
    let in_range = |seq: u64| match range {
        Range::Latest => true,
        Range::After(after) => seq > after,
        Range::Before(before) => seq < before,
    };
    if let Some(bad) = found.iter().find(|m| !in_range(m.seq)) {
        return Err(format!("load returned seq {} outside the requested range", bad.seq));
    }
    let mut ids = HashSet::with_capacity(found.len());
    if let Some(twice) = found.iter().find(|m| !ids.insert(m.message.id.as_str())) {
        return Err(format!("load returned message seq {} with an id it already returned", twice.seq));
    }
    Ok(())
}

/// An append answer, for a batch of `count` numbered from `first_seq` (0.2.0) or
/// numbered by the adapter (`host_seqs == false`, 0.1.0).
pub fn append(reply: &AppendReply, count: usize, first_seq: u64, host_seqs: bool) -> Result<(), Violation> {
    match reply {
        AppendReply::Stored { seqs, stored, version } => {
            if seqs.len() != count || *stored as usize > count || *stored == 0 {
                return Err(format!("append of {count} messages returned {} seqs and {stored} stored", seqs.len()));
            }
            if *version == 0 {
                return Err("append stored messages but reported version 0".into());
            }
            if host_seqs && seqs.iter().enumerate().any(|(i, s)| *s != first_seq + i as u64) {
                return Err("append stored messages at seqs other than the host's".into());
            }
            if !host_seqs {
                if seqs.contains(&0) {
                    return Err("append returned seq 0".into());
                }
                let mut unique: Vec<u64> = seqs.clone();
                unique.sort_unstable();
                unique.dedup();
                if unique.len() != seqs.len() {
                    return Err(format!("append of {count} distinct messages returned repeated seqs"));
                }
            }
            Ok(())
        }
        AppendReply::AlreadyStored { seqs, .. } => {
            if seqs.is_empty() {
                return Err("append said the batch was already stored but named no message".into());
            }
            let mut indices = HashSet::new();
            for (index, seq) in seqs {
                if *index as usize >= count || !indices.insert(*index) {
                    return Err(format!("append named batch index {index} twice or out of range"));
                }
                // A seq at or past `first_seq` means this host's numbering was
                // stale (another writer stored the retry): the client renumbers.
                if *seq == 0 {
                    return Err("append said a message is already stored at seq 0".into());
                }
            }
            Ok(())
        }
        AppendReply::OutOfSequence { last_seq } => {
            if !host_seqs || last_seq.checked_add(1) == Some(first_seq) {
                return Err(format!(
                    "append refused the host's numbering from {first_seq} while reporting last seq {last_seq}"
                ));
            }
            Ok(())
        }
    }
}

/// A display insert answer, for `count` records numbered from `first_seq`.
pub fn insert(reply: &InsertReply, count: usize, first_seq: u64, host_seqs: bool) -> Result<(), Violation> {
    match reply {
        InsertReply::Stored { seqs } => {
            if seqs.len() != count {
                return Err(format!("display insert of {count} records returned {} seqs", seqs.len()));
            }
            let contiguous = seqs
                .first()
                .is_none_or(|first| *first >= 1 && seqs.iter().enumerate().all(|(i, s)| *s == *first + i as u64));
            if !contiguous || (host_seqs && seqs.first().is_some_and(|s| *s != first_seq)) {
                return Err("display insert numbered records other than contiguously from the host's seq".into());
            }
            Ok(())
        }
        InsertReply::OutOfSequence { last_seq } => {
            if !host_seqs || last_seq.checked_add(1) == Some(first_seq) {
                return Err(format!("display insert refused seq {first_seq} while reporting last seq {last_seq}"));
            }
            Ok(())
        }
    }
}

/// A display listing: at most `limit`, strictly ascending seqs after `after`.
pub fn display_seqs(seqs: &[u64], after: u64, limit: u32) -> Result<(), Violation> {
    if seqs.len() > limit as usize {
        return Err(format!("display list returned {} records for a limit of {limit}", seqs.len()));
    }
    let mut previous = after;
    for seq in seqs {
        if *seq <= previous {
            return Err("display records returned out of order or not after the requested seq".into());
        }
        previous = *seq;
    }
    Ok(())
}

/// A `find-by-status` page: at most `limit`, every record has one of `statuses`,
/// and (for adapters that page, `ordered`) strictly ascending positions after `after`.
pub fn stale(
    found: &[RawLocated],
    statuses: &[String],
    after: Option<&DisplayPosition>,
    limit: u32,
    ordered: bool,
) -> Result<(), Violation> {
    if found.len() > limit as usize {
        return Err(format!("find-by-status returned {} records for a limit of {limit}", found.len()));
    }
    if found.iter().any(|r| r.stored.record.status.as_ref().is_none_or(|s| !statuses.contains(s))) {
        return Err("find-by-status returned a record with another status".into());
    }
    if !ordered {
        return Ok(());
    }
    let mut previous = after.cloned();
    for r in found {
        let position =
            DisplayPosition { scope: r.scope.clone(), conversation_id: r.conversation_id.clone(), seq: r.stored.seq };
        if previous.as_ref().is_some_and(|p| position <= *p) {
            return Err("find-by-status returned records out of order or not after the requested position".into());
        }
        previous = Some(position);
    }
    Ok(())
}
