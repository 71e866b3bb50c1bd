//! `display-store` semantics.

use super::*;
use crate::exports::stowage::store::display_store::{DisplayPosition, InsertOutcome};
use crate::stowage::store::types::Error;

#[test]
fn insert_at_host_seqs_update_list_and_tool_call_lookup() {
    let temp = Temp::new();
    let mut store = temp.store();
    let s = scope("t", "u");
    // No conversation needed.
    assert_eq!(store.insert(&s, "c", vec![record(2, None, None)]), Ok(InsertOutcome::OutOfSequence(0)));
    let first = vec![record(1, Some("call-1"), Some("pending")), record(2, None, None)];
    assert_eq!(store.insert(&s, "c", first.clone()), Ok(InsertOutcome::Stored));
    assert_eq!(store.insert(&s, "c", vec![record(2, None, None)]), Ok(InsertOutcome::OutOfSequence(2)));
    let gap = vec![record(3, None, None), record(5, None, None)];
    assert!(matches!(store.insert(&s, "c", gap), Err(Error::InvalidInput(_))));
    assert_eq!(store.insert(&s, "c", vec![record(3, Some("call-1"), None)]), Ok(InsertOutcome::Stored));
    assert_eq!(store.insert(&s, "c", Vec::new()), Ok(InsertOutcome::Stored));

    let mut done = record(1, Some("call-1"), Some("done"));
    done.record.body = vec![0xff; 5];
    assert_eq!(store.update(&s, "c", done.clone()), Ok(()));
    assert_eq!(store.update(&s, "c", record(4, None, None)), Err(Error::NotFound));
    assert_eq!(store.update(&s, "c", record(0, None, None)), Err(Error::NotFound));
    assert_eq!(store.update(&s, "other", record(1, None, None)), Err(Error::NotFound));

    let expected = vec![done.clone(), first[1].clone(), record(3, Some("call-1"), None)];
    assert_eq!(store.list_display(&s, "c", 0, 10).as_ref(), Ok(&expected));
    assert_eq!(store.list_display(&s, "c", 1, 1), Ok(vec![first[1].clone()]));
    assert_eq!(store.list_display(&s, "c", 3, 1), Ok(Vec::new()));
    let by_call = store.by_tool_call_id(&s, "c", "call-1");
    assert_eq!(by_call, Ok(vec![done, record(3, Some("call-1"), None)]));
    assert_eq!(store.by_tool_call_id(&s, "c", "none"), Ok(Vec::new()));
    // Another instance reads the same from disk.
    assert_eq!(temp.store().list_display(&s, "c", 0, 10), Ok(expected));
}

fn pending(store: &mut Store, s: &Scope, id: &str, count: u64) {
    let records =
        (1..=count).map(|seq| record(seq, Some("x"), Some(if seq % 2 == 1 { "pending" } else { "done" }))).collect();
    assert_eq!(store.insert(s, id, records), Ok(InsertOutcome::Stored));
}

#[test]
fn find_by_status_pages_in_id_order_across_the_store() {
    let temp = Temp::new();
    let mut store = temp.store();
    let long = "Z".repeat(120); // a hashed directory name
    // Name order differs from id order for every level here.
    let places = [
        (scope("~t", "u"), "c"),
        (scope("a", "~u"), "c"),
        (scope("a", "B"), "~"),
        (scope("a", "B"), "a"),
        (scope("a", "B"), long.as_str()),
        (scope("B", "u"), "c"),
    ];
    for (s, id) in &places {
        pending(&mut store, s, id, 3);
    }
    let mut expected: Vec<(String, String, String, u64)> = Vec::new();
    for (s, id) in &places {
        for seq in [1, 3] {
            expected.push((s.tenant.clone(), s.user.clone(), id.to_string(), seq));
        }
    }
    expected.sort();
    let statuses = vec!["pending".to_string(), "other".to_string()];
    for page_size in [1, 2, 5, 100] {
        let mut after: Option<DisplayPosition> = None;
        let mut got = Vec::new();
        loop {
            let page = store.find_by_status(&statuses, after.as_ref(), page_size).expect("find");
            assert!(page.len() <= page_size as usize);
            let Some(last) = page.last() else { break };
            after = Some(DisplayPosition {
                scope: last.scope.clone(),
                conversation_id: last.conversation_id.clone(),
                seq: last.stored.seq,
            });
            for r in &page {
                assert_eq!(r.stored.record.status.as_deref(), Some("pending"));
                got.push((r.scope.tenant.clone(), r.scope.user.clone(), r.conversation_id.clone(), r.stored.seq));
            }
        }
        assert_eq!(got, expected, "page size {page_size}");
    }
    assert_eq!(store.find_by_status(&[], None, 10), Ok(Vec::new()));
    assert_eq!(store.find_by_status(&statuses, None, 0), Ok(Vec::new()));
    // A position between conversations, and one past everything.
    let mid = DisplayPosition { scope: scope("a", "B"), conversation_id: "b".into(), seq: 0 };
    let first = store.find_by_status(&statuses, Some(&mid), 1).expect("find");
    assert_eq!(
        first.first().map(|r| (r.scope.user.as_str(), r.conversation_id.as_str(), r.stored.seq)),
        Some(("B", "~", 1))
    );
    let end = DisplayPosition { scope: scope("~u", ""), conversation_id: String::new(), seq: 0 };
    assert_eq!(store.find_by_status(&statuses, Some(&end), 10), Ok(Vec::new()));
}

#[test]
fn find_by_status_survives_a_damaged_log() {
    let temp = Temp::new();
    let mut store = temp.store();
    let (a, b) = (scope("a", "u"), scope("b", "u"));
    for seq in 1..=3 {
        assert_eq!(store.insert(&a, "c", vec![record(seq, None, Some("pending"))]), Ok(InsertOutcome::Stored));
    }
    pending(&mut store, &b, "c", 1);
    // Damage the second insert frame of a's log (frame 0 is the header).
    let log = temp.root().join("c-a/c-u/c-c/display.log");
    let mut bytes = std::fs::read(&log).expect("read");
    let starts = frame_starts(&bytes);
    bytes[starts[2] + 20] ^= 0xff;
    std::fs::write(&log, &bytes).expect("write");
    let mut fresh = temp.store();
    let found = fresh.find_by_status(&["pending".into()], None, 10).expect("find");
    let got: Vec<(String, u64)> = found.iter().map(|r| (r.scope.tenant.clone(), r.stored.seq)).collect();
    assert_eq!(got, vec![("a".into(), 1), ("b".into(), 1)]);
    // The conversation's own calls report the damage, naming the file and offset.
    let listed = fresh.list_display(&a, "c", 0, 10);
    let offset = format!("byte {}", starts[2]);
    assert!(
        matches!(&listed, Err(Error::Storage(e)) if e.contains("display.log") && e.contains(&offset)),
        "{listed:?}"
    );
}
