//! The per-instance index cache: always re-validated against the file, so
//! other writers (instances, hosts) are seen; extended by reading only new
//! frames; replaced and shrunk logs detected; bounded.

use super::*;
use crate::lru;
use crate::store::Stats;
use crate::stowage::store::types::Error;

fn stats_delta(store: &Store, before: Stats) -> (u64, u64, u64) {
    let now = store.stats;
    (now.replays - before.replays, now.tail_reads - before.tail_reads, now.hits - before.hits)
}

#[test]
fn a_grown_log_is_read_incrementally() {
    let temp = Temp::new();
    let s = scope("t", "u");
    let (mut writer, mut reader) = (temp.store(), temp.store());
    fill(&mut writer, &s, "c", 20, 2);
    assert_eq!(load_all(&mut reader, &s, "c"), batch(1, 20));
    let before = reader.stats;
    assert_eq!(reader.info(&s, "c").map(|i| i.last_seq), Ok(20));
    assert_eq!(stats_delta(&reader, before), (0, 0, 1), "unchanged: a cache hit");

    // Another instance appends; the reader reads only the new frames.
    writer.append(&s, "c", batch(21, 23), None, 5).expect("append");
    let before = reader.stats;
    assert_eq!(reader.load(&s, "c", MessageRange::Latest, 5), Ok(batch(19, 23)));
    assert_eq!(stats_delta(&reader, before), (0, 1, 0));
    // Its id index grew too: a retry of the other writer's batch is recognised.
    let retry = reader.append(&s, "c", batch(21, 21), None, 6);
    assert!(matches!(retry, Ok(AppendOutcome::AlreadyStored(a)) if a.seqs.len() == 1 && a.seqs[0].seq == 21));
    // And the reader appends after the writer's frames.
    assert_eq!(reader.append(&s, "c", batch(24, 24), None, 7), Ok(AppendOutcome::Stored(12)));
    assert_eq!(load_all(&mut writer, &s, "c"), batch(1, 24));
}

#[test]
fn a_replaced_log_of_the_same_length_is_detected() {
    let temp = Temp::new();
    let s = scope("t", "u");
    let (mut a, mut b) = (temp.store(), temp.store());
    fill(&mut a, &s, "c", 5, 5);
    // Rewrite to a log of exactly the same length (same sizes, other bytes).
    b.replace(&s, "c", batch(1, 5), None, 1).expect("replace");
    let log = temp.root().join("c-t/c-u/c-c/messages.log");
    let len = std::fs::metadata(&log).map(|m| m.len()).expect("len");
    assert_eq!(load_all(&mut a, &s, "c"), batch(1, 5));
    let mut other = batch(1, 5);
    for m in &mut other {
        m.message.id = m.message.id.replace('m', "x");
        m.message.content[0] = 0x03;
    }
    b.replace(&s, "c", other.clone(), None, 2).expect("replace");
    assert_eq!(std::fs::metadata(&log).map(|m| m.len()).ok(), Some(len), "same length");
    let before = a.stats;
    assert_eq!(load_all(&mut a, &s, "c"), other);
    assert_eq!(stats_delta(&a, before), (1, 0, 0), "a full replay");
    assert_eq!(a.info(&s, "c").map(|i| i.version), Ok(3));
    // The old ids are gone from a's index too.
    assert_eq!(a.append(&s, "c", vec![msg(6, "m1")], None, 3), Ok(AppendOutcome::Stored(4)));
}

#[test]
fn a_shrunk_log_is_detected() {
    let temp = Temp::new();
    let s = scope("t", "u");
    let (mut a, mut b) = (temp.store(), temp.store());
    fill(&mut a, &s, "c", 30, 3);
    assert_eq!(b.truncate_after(&s, "c", 4, None, 9).map(|t| t.removed), Ok(26));
    let before = a.stats;
    assert_eq!(load_all(&mut a, &s, "c"), batch(1, 4));
    assert_eq!(stats_delta(&a, before), (1, 0, 0));
    assert_eq!(a.append(&s, "c", batch(5, 5), Some(11), 10), Ok(AppendOutcome::Stored(12)));
    // The log is also shrunk by hand (e.g. restored from an older copy).
    let log = temp.root().join("c-t/c-u/c-c/messages.log");
    let bytes = std::fs::read(&log).expect("read");
    let starts = frame_starts(&bytes);
    std::fs::write(&log, &bytes[..starts[starts.len() - 1]]).expect("write");
    assert_eq!(seqs(&load_all(&mut a, &s, "c")), vec![1, 2, 3, 4]);
}

#[test]
fn a_conversation_deleted_and_created_again_elsewhere_is_detected() {
    let temp = Temp::new();
    let s = scope("t", "u");
    let (mut a, mut b) = (temp.store(), temp.store());
    fill(&mut a, &s, "c", 3, 1);
    assert_eq!(b.delete(&s, "c"), Ok(true));
    assert_eq!(a.info(&s, "c"), Err(Error::NotFound));
    fill(&mut a, &s, "c", 3, 1);
    assert_eq!(b.delete(&s, "c"), Ok(true));
    b.open(&s, "c", meta(9), 50).expect("open");
    let info = a.info(&s, "c").expect("info");
    assert_eq!((info.meta, info.created_at, info.last_seq), (meta(9), 50, 0));
    b.append(&s, "c", batch(1, 1), None, 51).expect("append");
    assert_eq!(a.info(&s, "c").map(|i| (i.meta, i.last_seq)), Ok((meta(9), 1)));
}

#[test]
fn loads_read_only_the_frames_they_return() {
    let temp = Temp::new();
    let s = scope("t", "u");
    let mut store = temp.store();
    fill(&mut store, &s, "c", 50, 1);
    // Damage an early frame in place: a warm cache does not read it again, so
    // the newest page still loads, while a load that needs it reports it.
    let log = temp.root().join("c-t/c-u/c-c/messages.log");
    let mut bytes = std::fs::read(&log).expect("read");
    let starts = frame_starts(&bytes);
    bytes[starts[1] + 20] ^= 0xff;
    std::fs::write(&log, &bytes).expect("write");
    assert_eq!(store.load(&s, "c", MessageRange::Latest, 10), Ok(batch(41, 50)));
    let early = store.load(&s, "c", MessageRange::After(0), 2);
    let offset = format!("byte {}", starts[1]);
    assert!(matches!(&early, Err(Error::Storage(e)) if e.contains("messages.log") && e.contains(&offset)), "{early:?}");
}

#[test]
fn the_cache_is_bounded() {
    let temp = Temp::new();
    let s = scope("t", "u");
    let limits = crate::store::Limits {
        conversations: lru::Limits { max_entries: 4, max_bytes: 1 << 20 },
        displays: lru::Limits { max_entries: 2, max_bytes: 1 << 20 },
    };
    let mut store = Store::new(temp.root(), limits);
    for i in 0..10 {
        fill(&mut store, &s, &format!("c{i}"), 3, 1);
        store.insert(&s, &format!("c{i}"), vec![record(1, None, None)]).expect("insert");
    }
    assert_eq!((store.conversations.len(), store.displays.len()), (4, 2));
    // Evicted conversations still read correctly (replayed).
    assert_eq!(load_all(&mut store, &s, "c0"), batch(1, 3));
    let tiny = crate::store::Limits {
        conversations: lru::Limits { max_entries: 4, max_bytes: 100 },
        displays: lru::Limits { max_entries: 4, max_bytes: 100 },
    };
    let mut store = Store::new(temp.root(), tiny);
    assert_eq!(load_all(&mut store, &s, "c1"), batch(1, 3));
    assert_eq!(store.conversations.bytes(), 0, "an index over budget is not kept");
}
