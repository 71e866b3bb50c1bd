//! Torn writes and damage, through the whole adapter: a log cut at EVERY byte
//! offset reads back exactly its complete frames (a batch is all or nothing),
//! the next writer cuts the torn tail, zero-filled tails are torn tails, and
//! damage followed by data is reported with the file and byte offset.

use super::*;
use crate::exports::stowage::store::display_store::InsertOutcome;
use crate::stowage::store::types::Error;

/// A conversation whose log holds a header and `batches` (sizes), messages
/// numbered from 1; returns the log's path and bytes.
fn logged(temp: &Temp, s: &Scope, batches: &[u64]) -> (PathBuf, Vec<u8>) {
    let mut store = temp.store();
    store.open(s, "c", meta(1), 1).expect("open");
    let mut seq = 1;
    for &size in batches {
        let outcome = store.append(s, "c", batch(seq, seq + size - 1), None, seq as i64);
        assert!(matches!(outcome, Ok(AppendOutcome::Stored(_))));
        seq += size;
    }
    let log = temp.root().join("c-t/c-u/c-c/messages.log");
    let bytes = std::fs::read(&log).expect("read");
    (log, bytes)
}

#[test]
fn a_message_log_cut_at_every_offset_reads_back_its_complete_batches() {
    let temp = Temp::new();
    let s = scope("t", "u");
    let batches = [1, 3, 2, 1];
    let (log, bytes) = logged(&temp, &s, &batches);
    let starts = frame_starts(&bytes);
    assert_eq!(starts.len(), 1 + batches.len());
    for cut in 0..=bytes.len() {
        std::fs::write(&log, &bytes[..cut]).expect("write");
        // Complete append frames (frame 0 is the header).
        let complete = starts.iter().skip(1).filter(|&&start| {
            let next = starts.iter().find(|&&n| n > start).copied().unwrap_or(bytes.len());
            next <= cut
        });
        let frames = complete.count();
        let stored: u64 = batches[..frames].iter().sum();
        let mut store = temp.store();
        let info = store.info(&s, "c").expect("info");
        assert_eq!((info.last_seq, info.version), (stored, frames as u64), "cut at {cut}");
        assert_eq!(load_all(&mut store, &s, "c"), batch(1, stored), "cut at {cut}");
        // The next writer cuts the torn tail and continues after the last batch.
        let next = store.append(&s, "c", batch(stored + 1, stored + 1), None, 99);
        assert_eq!(next, Ok(AppendOutcome::Stored(frames as u64 + 1)), "cut at {cut}");
        assert_eq!(load_all(&mut temp.store(), &s, "c"), batch(1, stored + 1), "cut at {cut}");
    }
}

#[test]
fn every_cut_of_the_last_frame_then_zero_fill_is_a_torn_tail() {
    let temp = Temp::new();
    let s = scope("t", "u");
    let (log, bytes) = logged(&temp, &s, &[2, 2]);
    let last = frame_starts(&bytes)[2];
    for cut in last..bytes.len() {
        let mut torn = bytes[..cut].to_vec();
        torn.resize(bytes.len(), 0); // the size grew, the data never landed
        std::fs::write(&log, &torn).expect("write");
        let mut store = temp.store();
        assert_eq!(load_all(&mut store, &s, "c"), batch(1, 2), "cut at {cut}");
        assert_eq!(store.append(&s, "c", batch(3, 3), None, 9), Ok(AppendOutcome::Stored(2)), "cut at {cut}");
        let after = std::fs::read(&log).expect("read");
        assert_eq!(frame_starts(&after).len(), 3, "cut at {cut}: the zeros were cut");
    }
}

#[test]
fn a_display_log_cut_at_every_offset_reads_back_its_complete_inserts() {
    let temp = Temp::new();
    let s = scope("t", "u");
    let mut store = temp.store();
    assert_eq!(store.insert(&s, "c", vec![record(1, Some("a"), None)]), Ok(InsertOutcome::Stored));
    assert_eq!(store.insert(&s, "c", vec![record(2, None, None), record(3, None, None)]), Ok(InsertOutcome::Stored));
    let updated = record(1, Some("a"), Some("done"));
    assert_eq!(store.update(&s, "c", updated.clone()), Ok(()));
    let log = temp.root().join("c-t/c-u/c-c/display.log");
    let bytes = std::fs::read(&log).expect("read");
    let starts = frame_starts(&bytes);
    assert_eq!(starts.len(), 4);
    for cut in 0..=bytes.len() {
        std::fs::write(&log, &bytes[..cut]).expect("write");
        let frames = starts
            .iter()
            .skip(1)
            .filter(|&&start| {
                let next = starts.iter().find(|&&n| n > start).copied().unwrap_or(bytes.len());
                next <= cut
            })
            .count();
        let expected = match frames {
            0 => vec![],
            1 => vec![record(1, Some("a"), None)],
            2 => vec![record(1, Some("a"), None), record(2, None, None), record(3, None, None)],
            _ => vec![updated.clone(), record(2, None, None), record(3, None, None)],
        };
        let mut store = temp.store();
        assert_eq!(store.list_display(&s, "c", 0, 10), Ok(expected.clone()), "cut at {cut}");
        let next = expected.len() as u64 + 1;
        assert_eq!(store.insert(&s, "c", vec![record(next, None, None)]), Ok(InsertOutcome::Stored), "cut at {cut}");
        assert_eq!(temp.store().list_display(&s, "c", 0, 10).map(|r| r.len() as u64), Ok(next), "cut at {cut}");
    }
}

#[test]
fn damage_in_the_middle_is_reported_with_file_and_offset_and_listing_stays_lenient() {
    let temp = Temp::new();
    let s = scope("t", "u");
    let (log, mut bytes) = logged(&temp, &s, &[1, 1, 1]);
    let starts = frame_starts(&bytes);
    bytes[starts[2] + 15] ^= 0x01;
    std::fs::write(&log, &bytes).expect("write");
    let mut store = temp.store();
    let offset = format!("byte {}", starts[2]);
    for result in [store.info(&s, "c").map(|_| ()), store.load(&s, "c", MessageRange::Latest, 1).map(|_| ())] {
        assert!(
            matches!(&result, Err(Error::Storage(e)) if e.contains("messages.log") && e.contains(&offset)),
            "{result:?}"
        );
    }
    assert!(matches!(store.append(&s, "c", batch(4, 4), None, 1), Err(Error::Storage(_))));
    assert_eq!(std::fs::read(&log).ok(), Some(bytes), "a damaged log is never written");
    let listed = store.list(&s, None, 10).expect("list");
    assert_eq!(listed.iter().map(|i| (i.id.as_str(), i.last_seq)).collect::<Vec<_>>(), vec![("c", 1)]);
}
