//! The pure decisions of a write: is a host-numbered batch well formed, and what
//! does `append` answer given what is stored. No I/O, so every rule of the
//! contract's check order is unit-tested here.

use std::collections::{HashMap, HashSet};

use crate::exports::stowage::store::conversation_store::{AlreadyStored, AppendOutcome, IndexedSeq};
use crate::model::SEQ_LIMIT;
use crate::stowage::store::types::{Conflict, Error};

/// The seqs of a non-empty batch: first and last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub first: u64,
    pub last: u64,
}

/// Checks that `seqs` are contiguous in batch order and below [`SEQ_LIMIT`];
/// `None` for an empty batch. `what` names the call in the error.
pub fn numbering(what: &str, seqs: &[u64]) -> Result<Option<Span>, Error> {
    let (Some(&first), Some(&last)) = (seqs.first(), seqs.last()) else {
        return Ok(None);
    };
    for (index, pair) in seqs.windows(2).enumerate() {
        if pair[0].checked_add(1) != Some(pair[1]) {
            return Err(Error::InvalidInput(format!(
                "{what}: seqs are not contiguous: item {} has seq {} after seq {}",
                index + 1,
                pair[1],
                pair[0]
            )));
        }
    }
    if last >= SEQ_LIMIT {
        return Err(Error::InvalidInput(format!(
            "{what}: seq {last} is too large (this adapter stores seqs below 2^32)"
        )));
    }
    Ok(Some(Span { first, last }))
}

/// Checks that no id appears twice in a batch (the host promises it; a broken
/// promise must not turn into a constraint error that looks like contention).
pub fn unique_ids<'a>(what: &str, ids: impl IntoIterator<Item = &'a str>) -> Result<(), Error> {
    let mut seen = HashSet::new();
    for id in ids {
        if !seen.insert(id) {
            return Err(Error::InvalidInput(format!("{what}: message id {id:?} appears twice in the batch")));
        }
    }
    Ok(())
}

/// `conflict` unless `expected` is absent or equals `actual`.
pub fn check_version(expected: Option<u64>, actual: u64) -> Result<(), Error> {
    match expected {
        Some(expected) if expected != actual => {
            Err(Error::Conflict(Conflict { expected_version: expected, actual_version: actual }))
        }
        _ => Ok(()),
    }
}

/// What a conversation's row says before a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct History {
    pub version: u64,
    pub last_seq: u64,
}

/// What `append` does once the conversation is known to exist.
#[derive(Debug, PartialEq)]
pub enum AppendPlan {
    /// Answer without storing anything.
    Answer(AppendOutcome),
    /// Store the batch; the conversation then has this version and last seq.
    Store(History),
}

/// Applies the contract's check order after `not-found`: already-stored (every
/// id of `ids` found in `stored`, with its seq, in batch order; the version is
/// not checked), then `expected`, then the sequence. An empty batch stores
/// nothing and answers `stored` with the unchanged version.
pub fn plan_append(
    ids: &[&str],
    span: Option<Span>,
    stored: &[(String, u64)],
    current: History,
    expected: Option<u64>,
) -> Result<AppendPlan, Error> {
    let stored: HashMap<&str, u64> = stored.iter().map(|(id, seq)| (id.as_str(), *seq)).collect();
    let seqs: Vec<IndexedSeq> =
        ids.iter().zip(0u32..).filter_map(|(id, index)| stored.get(id).map(|&seq| IndexedSeq { index, seq })).collect();
    if !seqs.is_empty() {
        return Ok(AppendPlan::Answer(AppendOutcome::AlreadyStored(AlreadyStored { seqs, version: current.version })));
    }
    check_version(expected, current.version)?;
    let Some(span) = span else {
        return Ok(AppendPlan::Answer(AppendOutcome::Stored(current.version)));
    };
    if current.last_seq.checked_add(1) != Some(span.first) {
        return Ok(AppendPlan::Answer(AppendOutcome::OutOfSequence(current.last_seq)));
    }
    Ok(AppendPlan::Store(History { version: next_version(current.version)?, last_seq: span.last }))
}

/// The version after one more change to the history.
pub fn next_version(version: u64) -> Result<u64, Error> {
    version
        .checked_add(1)
        .filter(|v| i64::try_from(*v).is_ok())
        .ok_or_else(|| Error::Storage(format!("the conversation's version {version} cannot be bumped")))
}

/// Checks a `replace` batch: numbered from 1, contiguous, ids unique.
pub fn check_replace(seqs: &[u64], ids: &[&str]) -> Result<u64, Error> {
    unique_ids("replace", ids.iter().copied())?;
    match numbering("replace", seqs)? {
        None => Ok(0),
        Some(Span { first: 1, last }) => Ok(last),
        Some(Span { first, .. }) => Err(Error::InvalidInput(format!(
            "replace: messages must be numbered from seq 1, the first has seq {first}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEW: History = History { version: 3, last_seq: 5 };

    fn found(pairs: &[(&str, u64)]) -> Vec<(String, u64)> {
        pairs.iter().map(|(id, seq)| ((*id).to_owned(), *seq)).collect()
    }

    #[test]
    fn contiguous_seqs_below_the_limit_are_accepted() {
        assert_eq!(numbering("t", &[]), Ok(None));
        assert_eq!(numbering("t", &[7]), Ok(Some(Span { first: 7, last: 7 })));
        assert_eq!(numbering("t", &[6, 7, 8]), Ok(Some(Span { first: 6, last: 8 })));
        assert_eq!(numbering("t", &[SEQ_LIMIT - 1]), Ok(Some(Span { first: SEQ_LIMIT - 1, last: SEQ_LIMIT - 1 })));
    }

    #[test]
    fn gaps_repeats_descents_and_huge_seqs_are_invalid_input() {
        for seqs in [&[1, 3][..], &[2, 2], &[3, 2], &[SEQ_LIMIT], &[SEQ_LIMIT - 1, SEQ_LIMIT], &[u64::MAX, 0]] {
            assert!(matches!(numbering("append", seqs), Err(Error::InvalidInput(m)) if m.starts_with("append: ")));
        }
    }

    #[test]
    fn a_repeated_id_is_invalid_input() {
        assert_eq!(unique_ids("t", ["a", "b"]), Ok(()));
        assert!(matches!(unique_ids("t", ["a", "b", "a"]), Err(Error::InvalidInput(m)) if m.contains("\"a\"")));
    }

    #[test]
    fn a_new_batch_at_the_next_seq_is_stored_with_a_version_bump() {
        let plan = plan_append(&["x", "y"], Some(Span { first: 6, last: 7 }), &[], NEW, Some(3));
        assert_eq!(plan, Ok(AppendPlan::Store(History { version: 4, last_seq: 7 })));
    }

    #[test]
    fn already_stored_lists_every_stored_id_in_batch_order_and_skips_the_version_check() {
        let stored = found(&[("c", 9), ("a", 2)]);
        let plan = plan_append(&["a", "b", "c"], Some(Span { first: 6, last: 8 }), &stored, NEW, Some(99));
        assert_eq!(
            plan,
            Ok(AppendPlan::Answer(AppendOutcome::AlreadyStored(AlreadyStored {
                seqs: vec![IndexedSeq { index: 0, seq: 2 }, IndexedSeq { index: 2, seq: 9 }],
                version: 3,
            })))
        );
    }

    #[test]
    fn the_version_is_checked_before_the_sequence() {
        let plan = plan_append(&["x"], Some(Span { first: 9, last: 9 }), &[], NEW, Some(2));
        assert_eq!(plan, Err(Error::Conflict(Conflict { expected_version: 2, actual_version: 3 })));
    }

    #[test]
    fn a_batch_not_following_the_last_seq_is_out_of_sequence() {
        for first in [1, 5, 7] {
            let plan = plan_append(&["x"], Some(Span { first, last: first }), &[], NEW, None);
            assert_eq!(plan, Ok(AppendPlan::Answer(AppendOutcome::OutOfSequence(5))));
        }
    }

    #[test]
    fn an_empty_batch_stores_nothing_but_still_checks_the_version() {
        assert_eq!(plan_append(&[], None, &[], NEW, None), Ok(AppendPlan::Answer(AppendOutcome::Stored(3))));
        assert!(matches!(plan_append(&[], None, &[], NEW, Some(1)), Err(Error::Conflict(_))));
    }

    #[test]
    fn replace_batches_start_at_one() {
        assert_eq!(check_replace(&[], &[]), Ok(0));
        assert_eq!(check_replace(&[1, 2], &["a", "b"]), Ok(2));
        assert!(matches!(check_replace(&[2, 3], &["a", "b"]), Err(Error::InvalidInput(_))));
        assert!(matches!(check_replace(&[1, 3], &["a", "b"]), Err(Error::InvalidInput(_))));
        assert!(matches!(check_replace(&[1, 2], &["a", "a"]), Err(Error::InvalidInput(_))));
    }

    #[test]
    fn versions_stop_before_they_leave_the_sql_integer_range() {
        assert_eq!(next_version(0), Ok(1));
        assert!(matches!(next_version(i64::MAX as u64), Err(Error::Storage(_))));
    }
}
