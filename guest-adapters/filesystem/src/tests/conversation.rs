//! `conversation-store` semantics, as the 0.2.0 contract words them.

use super::*;
use crate::exports::stowage::store::conversation_store::{AlreadyStored, IndexedSeq, TruncateOutcome};
use crate::stowage::store::types::{Conflict, Error};

#[test]
fn open_is_idempotent_and_keeps_the_first_meta_byte_for_byte() {
    let temp = Temp::new();
    let mut store = temp.store();
    let s = scope("t", "u");
    let info = store.open(&s, "c", meta(1), 100).expect("open");
    assert_eq!((info.id.as_str(), info.created_at, info.updated_at), ("c", 100, 100));
    assert_eq!((info.version, info.last_seq, info.message_count), (0, 0, 0));
    let again = store.open(&s, "c", meta(2), 200).expect("open again");
    assert_eq!(again, info);
    // Another instance reads the same bytes from disk.
    assert_eq!(temp.store().info(&s, "c"), Ok(info));
    assert_eq!(store.info(&scope("t", "other"), "c"), Err(Error::NotFound));
}

#[test]
fn append_stores_at_the_host_seqs_and_bumps_the_version() {
    let temp = Temp::new();
    let mut store = temp.store();
    let s = scope("t", "u");
    store.open(&s, "c", meta(1), 1).expect("open");
    assert_eq!(store.append(&s, "c", batch(1, 3), Some(0), 50), Ok(AppendOutcome::Stored(1)));
    assert_eq!(store.append(&s, "c", batch(4, 4), Some(1), 60), Ok(AppendOutcome::Stored(2)));
    let info = store.info(&s, "c").expect("info");
    assert_eq!((info.version, info.last_seq, info.message_count, info.updated_at), (2, 4, 4, 60));
    let all = load_all(&mut store, &s, "c");
    assert_eq!(all, batch(1, 4), "stored and returned byte for byte");
    assert_eq!(load_all(&mut temp.store(), &s, "c"), batch(1, 4));
}

#[test]
fn append_checks_run_in_the_contract_order() {
    let temp = Temp::new();
    let mut store = temp.store();
    let s = scope("t", "u");
    assert_eq!(store.append(&s, "c", batch(1, 1), None, 1), Err(Error::NotFound));
    store.open(&s, "c", meta(1), 1).expect("open");
    store.append(&s, "c", batch(1, 2), None, 1).expect("append");
    // A retry with some stored ids: every stored one listed, nothing stored,
    // expected-version not checked.
    let retry = vec![msg(7, "new-a"), msg(8, "m2"), msg(9, "m1"), msg(10, "new-b")];
    let outcome = store.append(&s, "c", retry, Some(99), 2);
    let seqs = vec![IndexedSeq { index: 1, seq: 2 }, IndexedSeq { index: 2, seq: 1 }];
    assert_eq!(outcome, Ok(AppendOutcome::AlreadyStored(AlreadyStored { seqs, version: 1 })));
    // Then the version.
    let conflict = Conflict { expected_version: 0, actual_version: 1 };
    assert_eq!(store.append(&s, "c", batch(3, 3), Some(0), 2), Err(Error::Conflict(conflict)));
    // Then the sequence.
    assert_eq!(store.append(&s, "c", batch(5, 5), Some(1), 2), Ok(AppendOutcome::OutOfSequence(2)));
    assert_eq!(
        store.append(
            &s,
            "c",
            batch(2, 2)
                .into_iter()
                .map(|mut m| {
                    m.message.id = "x".into();
                    m
                })
                .collect(),
            None,
            2
        ),
        Ok(AppendOutcome::OutOfSequence(2))
    );
    assert_eq!(seqs_of(&mut store, &s), vec![1, 2], "nothing stored by a refused append");
    // Non-contiguous seqs and duplicate ids are invalid input.
    let gap = vec![msg(3, "a"), msg(5, "b")];
    assert!(matches!(store.append(&s, "c", gap, None, 2), Err(Error::InvalidInput(e)) if e.contains("contiguous")));
    let twice = vec![msg(3, "a"), msg(4, "a")];
    assert!(matches!(store.append(&s, "c", twice, None, 2), Err(Error::InvalidInput(e)) if e.contains("twice")));
    assert_eq!(store.append(&s, "c", Vec::new(), None, 2), Ok(AppendOutcome::Stored(1)));
    assert_eq!(store.info(&s, "c").map(|i| i.version), Ok(1));
}

fn seqs_of(store: &mut Store, s: &Scope) -> Vec<u64> {
    seqs(&load_all(store, s, "c"))
}

#[test]
fn load_ranges_return_ascending_pages() {
    let temp = Temp::new();
    let mut store = temp.store();
    let s = scope("t", "u");
    fill(&mut store, &s, "c", 10, 3);
    let page = |store: &mut Store, range, limit| seqs(&store.load(&s, "c", range, limit).expect("load"));
    assert_eq!(page(&mut store, MessageRange::Latest, 3), vec![8, 9, 10]);
    assert_eq!(page(&mut store, MessageRange::After(2), 3), vec![3, 4, 5]);
    assert_eq!(page(&mut store, MessageRange::Before(4), 5), vec![1, 2, 3]);
    assert_eq!(page(&mut store, MessageRange::After(10), 5), Vec::<u64>::new());
    assert_eq!(page(&mut store, MessageRange::Latest, 0), Vec::<u64>::new());
    assert_eq!(store.load(&s, "nope", MessageRange::Latest, 1), Err(Error::NotFound));
    let latest = store.load(&s, "c", MessageRange::Latest, 4).expect("load");
    assert_eq!(latest, batch(7, 10));
}

#[test]
fn replace_numbers_from_one_and_truncate_compacts() {
    let temp = Temp::new();
    let mut store = temp.store();
    let s = scope("t", "u");
    fill(&mut store, &s, "c", 6, 2);
    let log = temp.root().join("c-t/c-u/c-c/messages.log");
    assert!(matches!(store.replace(&s, "c", batch(2, 3), None, 9), Err(Error::InvalidInput(_))));
    let conflict = Conflict { expected_version: 1, actual_version: 3 };
    assert_eq!(store.replace(&s, "c", batch(1, 2), Some(1), 9), Err(Error::Conflict(conflict)));
    assert_eq!(store.replace(&s, "c", batch(1, 2), Some(3), 9), Ok(4));
    assert_eq!(load_all(&mut store, &s, "c"), batch(1, 2));
    // Ids removed by the replace are free again.
    assert_eq!(store.append(&s, "c", batch(3, 5), None, 10), Ok(AppendOutcome::Stored(5)));
    let before = std::fs::metadata(&log).map(|m| m.len()).expect("len");
    assert_eq!(store.truncate_after(&s, "c", 9, Some(0), 11), Ok(TruncateOutcome { removed: 0, version: 5 }));
    assert_eq!(store.truncate_after(&s, "c", 1, Some(5), 11), Ok(TruncateOutcome { removed: 4, version: 6 }));
    assert!(std::fs::metadata(&log).map(|m| m.len()).expect("len") < before, "the log was compacted");
    assert_eq!(load_all(&mut temp.store(), &s, "c"), batch(1, 1));
    let info = store.info(&s, "c").expect("info");
    assert_eq!((info.version, info.last_seq, info.updated_at), (6, 1, 11));
    assert_eq!(store.append(&s, "c", batch(2, 2), Some(6), 12), Ok(AppendOutcome::Stored(7)));
    assert_eq!(store.truncate_after(&s, "c", 0, None, 13), Ok(TruncateOutcome { removed: 2, version: 8 }));
    assert_eq!(store.replace(&s, "c", Vec::new(), None, 14), Ok(9));
    assert_eq!(store.info(&s, "c").map(|i| (i.last_seq, i.version)), Ok((0, 9)));
}

#[test]
fn delete_removes_one_conversation_and_is_idempotent() {
    let temp = Temp::new();
    let mut store = temp.store();
    let (a, b) = (scope("t", "a"), scope("t", "b"));
    fill(&mut store, &a, "c", 3, 1);
    fill(&mut store, &b, "c", 2, 1);
    store.insert(&a, "c", vec![record(1, None, None)]).expect("insert");
    assert_eq!(store.delete(&a, "c"), Ok(true));
    assert_eq!(store.delete(&a, "c"), Ok(false));
    assert_eq!(store.info(&a, "c"), Err(Error::NotFound));
    assert_eq!(store.list_display(&a, "c", 0, 10), Ok(Vec::new()));
    assert_eq!(load_all(&mut store, &b, "c"), batch(1, 2));
    // Created again: a new, empty conversation (the cache must not resurrect the old one).
    store.open(&a, "c", meta(5), 7).expect("open");
    assert_eq!(store.info(&a, "c").map(|i| (i.last_seq, i.meta)), Ok((0, meta(5))));
    let trash = temp.root().join(".trash");
    assert_eq!(std::fs::read_dir(trash).map(|d| d.count()).ok(), Some(0));
}

#[test]
fn list_orders_by_id_bytes_not_by_file_names() {
    let temp = Temp::new();
    let mut store = temp.store();
    let s = scope("t", "u");
    let long = "L".repeat(150); // hashed name
    // File-name order differs: "c-%7E" < "c-a" but "a" < "~"; "c-%42" vs "c-_".
    let ids = ["~", "a", "B", "_", "é", long.as_str(), "a/b"];
    for id in ids {
        store.open(&s, id, meta(1), 1).expect("open");
    }
    store.open(&scope("t", "other"), "0", meta(1), 1).expect("open");
    std::fs::create_dir_all(temp.root().join("c-t/c-u/c-display-only")).expect("mkdir");
    let mut expected: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
    expected.sort();
    let listed: Vec<String> = store.list(&s, None, 100).expect("list").into_iter().map(|i| i.id).collect();
    assert_eq!(listed, expected);
    let page: Vec<String> = store.list(&s, Some("a"), 2).expect("list").into_iter().map(|i| i.id).collect();
    assert_eq!(page, expected[4..6].to_vec());
    assert_eq!(store.list(&s, None, 0), Ok(Vec::new()));
}

#[test]
fn names_never_escape_the_root() {
    let temp = Temp::new();
    let mut store = temp.store();
    for (tenant, user, id) in [("..", ".", "../x"), ("a/b", "\0", "."), ("", "", "")] {
        let s = scope(tenant, user);
        store.open(&s, id, meta(1), 1).expect("open");
        store.append(&s, id, batch(1, 1), None, 1).expect("append");
        assert_eq!(load_all(&mut store, &s, id), batch(1, 1));
    }
    let outside: Vec<_> = std::fs::read_dir(temp.root().parent().expect("parent"))
        .expect("read")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(outside, vec![std::ffi::OsString::from("stowage-v1")]);
}
