//! Stores written by the 0.1.0 adapter open, read in the plain-legacy form,
//! and convert on their first write. `testdata/legacy-v0_1` was written by the
//! 0.1.0 adapter itself (see `testdata/README.md`); the other logs here are
//! written by hand.

use super::*;
use crate::exports::stowage::store::conversation_store::{AlreadyStored, IndexedSeq};
use crate::exports::stowage::store::display_store::{DisplayPosition, InsertOutcome};
use crate::frame;
use crate::messages::entry;
use crate::stowage::store::types::Role;

fn plain(json: &str) -> Vec<u8> {
    let mut out = vec![0x01];
    out.extend_from_slice(json.as_bytes());
    out
}

fn fixture() -> Temp {
    let temp = Temp::new();
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/legacy-v0_1/stowage-v1");
    copy_tree(&from, &temp.root());
    temp
}

fn ann() -> Scope {
    scope("acme", "Ann")
}

fn fixture_messages() -> Vec<(u64, &'static str, Role, i64, Vec<u8>)> {
    vec![
        (1, "m1", Role::User, 1001, plain(r#"{"parts":[{"type":"text","text":"héllo \"q\""}]}"#)),
        (
            2,
            "m2",
            Role::Assistant,
            1002,
            plain(concat!(
                r#"{"parts":[{"type":"thinking","text":"hmm","signature":"sig"},"#,
                r#"{"type":"thinking","text":"xx","redacted":true},"#,
                r#"{"type":"tool_call","id":"c1","name":"search","arguments":"{\"q\":1}"},"#,
                r#"{"type":"media","mime_type":"image/png","source":{"inline":[1,2,255]},"name":"a.png"},"#,
                r#"{"type":"media","mime_type":"text/html","source":{"url":"http://x"}}],"#,
                r#""usage":{"input_tokens":10,"output_tokens":20,"cached_tokens":3,"cost":0.25},"#,
                r#""stop_reason":"tool_use","metadata":{"a": true}}"#
            )),
        ),
        (
            3,
            "m3",
            Role::Tool,
            1003,
            plain(concat!(
                r#"{"parts":[{"type":"tool_result","call_id":"c1","content":"ok","is_error":true}],"#,
                r#""usage":{"input_tokens":1,"output_tokens":2,"cached_tokens":0},"stop_reason":"weird"}"#
            )),
        ),
        (4, "m4", Role::Assistant, 1004, plain(r#"{"parts":[{"type":"text","text":"bye"}],"stop_reason":"end_turn"}"#)),
    ]
}

fn check_fixture_messages(got: &[StoredMessage]) {
    let want = fixture_messages();
    assert_eq!(got.len(), want.len());
    for (m, (seq, id, role, created_at, content)) in got.iter().zip(want) {
        assert_eq!((m.seq, m.message.id.as_str(), m.message.role, m.message.created_at), (seq, id, role, created_at));
        assert_eq!(String::from_utf8_lossy(&m.message.content), String::from_utf8_lossy(&content));
        assert!(m.message.tag.is_empty());
    }
}

#[test]
fn a_store_of_the_0_1_0_adapter_reads_in_the_plain_legacy_form() {
    let temp = fixture();
    let mut store = temp.store();
    let info = store.info(&ann(), "conv/1").expect("info");
    assert_eq!((info.version, info.last_seq, info.created_at, info.updated_at), (3, 4, 1000, 1300));
    assert_eq!(info.meta.content, plain(r#"{"agent_id":"agent-1","metadata":{"k": [1, 2]}}"#));
    assert!(info.meta.tag.is_empty());
    check_fixture_messages(&load_all(&mut store, &ann(), "conv/1"));
    assert_eq!(seqs(&store.load(&ann(), "conv/1", MessageRange::Latest, 2).expect("load")), vec![3, 4]);

    let bob = scope("acme", "bob");
    let listed: Vec<_> = store
        .list(&bob, None, 10)
        .expect("list")
        .into_iter()
        .map(|i| (i.id, i.version, i.last_seq, i.updated_at))
        .collect();
    assert_eq!(listed, vec![("c2".to_string(), 2, 1, 2200), ("empty".to_string(), 0, 0, 3000)]);
    assert_eq!(store.info(&bob, "c2").map(|i| i.meta.content), Ok(plain(r#"{"title":"T"}"#)));
    assert_eq!(store.info(&bob, "empty").map(|i| i.meta.content), Ok(plain("{}")));

    let display = store.list_display(&ann(), "conv/1", 0, 10).expect("display");
    let summary: Vec<_> =
        display.iter().map(|r| (r.seq, r.record.status.clone(), r.record.updated_at, r.record.body.clone())).collect();
    assert_eq!(
        summary,
        vec![
            (1, Some("done".to_string()), 1010, plain(r#"{"content":{"name":"search"}}"#)),
            (2, None, 1005, plain(r#"{"content":"note","metadata":{"x":1}}"#)),
        ]
    );
    assert_eq!(store.by_tool_call_id(&ann(), "conv/1", "c1").map(|r| r.len()), Ok(1));
    let found = store.find_by_status(&["done".into()], None, 10).expect("find");
    assert_eq!(
        found.iter().map(|r| (r.conversation_id.as_str(), r.stored.seq)).collect::<Vec<_>>(),
        vec![("conv/1", 1)]
    );
}

#[test]
fn the_first_write_converts_a_legacy_log_and_keeps_every_record() {
    let temp = fixture();
    let mut store = temp.store();
    let retry = store.append(&ann(), "conv/1", vec![msg(9, "m2")], None, 1);
    let already = AlreadyStored { seqs: vec![IndexedSeq { index: 0, seq: 2 }], version: 3 };
    assert_eq!(retry, Ok(AppendOutcome::AlreadyStored(already)));
    assert_eq!(store.append(&ann(), "conv/1", vec![msg(5, "m5")], Some(3), 1400), Ok(AppendOutcome::Stored(4)));
    let log = temp.root().join("c-acme/c-%41nn/c-conv%2F1/messages.log");
    let bytes = std::fs::read(&log).expect("read");
    assert_eq!(bytes.get(frame::HEADER_LEN), Some(&b'H'), "rewritten in this adapter's format");
    for mut reader in [temp.store(), store] {
        let all = load_all(&mut reader, &ann(), "conv/1");
        check_fixture_messages(&all[..4]);
        assert_eq!(all[4], msg(5, "m5"));
        let info = reader.info(&ann(), "conv/1").expect("info");
        assert_eq!((info.version, info.last_seq, info.updated_at), (4, 5, 1400));
    }
    let mut store = temp.store();
    assert_eq!(store.insert(&ann(), "conv/1", vec![record(3, Some("c9"), Some("pending"))]), Ok(InsertOutcome::Stored));
    let display = temp.store().list_display(&ann(), "conv/1", 0, 10).expect("display");
    assert_eq!(
        display.iter().map(|r| r.record.status.clone()).collect::<Vec<_>>(),
        vec![Some("done".into()), None, Some("pending".into())]
    );
    assert_eq!(display[1].record.body, plain(r#"{"content":"note","metadata":{"x":1}}"#));
    let after = DisplayPosition { scope: ann(), conversation_id: "conv/1".into(), seq: 1 };
    assert_eq!(store.find_by_status(&["pending".into()], Some(&after), 5).map(|r| r.len()), Ok(1));

    // A legacy conversation without a log, and a truncated one.
    let bob = scope("acme", "bob");
    assert_eq!(store.append(&bob, "empty", batch(1, 1), Some(0), 5), Ok(AppendOutcome::Stored(1)));
    assert_eq!(store.truncate_after(&bob, "c2", 0, Some(2), 6).map(|t| (t.removed, t.version)), Ok((1, 3)));
    assert_eq!(load_all(&mut temp.store(), &bob, "empty"), batch(1, 1));
}

const LEGACY_META: &str = r#"{"id":"c","scope":{"tenant":"t","user":"u"},"meta":{"agent_id":null,"title":null,"metadata":null},"created_at":7}"#;

fn legacy_message(seq: u64, id: &str) -> String {
    format!(
        r#"{{"seq":{seq},"message":{{"id":"{id}","role":"User","parts":[{{"Text":"{id}"}}],"usage":null,"stop_reason":null,"created_at":{seq},"metadata":null}}}}"#
    )
}

fn text(seq: u64, id: &str) -> (u64, String, Vec<u8>) {
    (seq, id.to_string(), plain(&format!(r#"{{"parts":[{{"type":"text","text":"{id}"}}]}}"#)))
}

fn write_log(temp: &Temp, payloads: &[Vec<u8>]) -> PathBuf {
    let dir = temp.root().join("c-t/c-u/c-c");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("meta.json"), LEGACY_META).expect("meta");
    let mut bytes = Vec::new();
    for p in payloads {
        frame::encode_into(&mut bytes, p).expect("frame");
    }
    std::fs::write(dir.join("messages.log"), bytes).expect("log");
    dir.join("messages.log")
}

#[test]
fn legacy_truncate_and_reset_entries_and_mixed_logs_read_correctly() {
    let temp = Temp::new();
    let s = scope("t", "u");
    let append = format!(
        r#"{{"Append":{{"version":1,"at":10,"messages":[{},{},{}]}}}}"#,
        legacy_message(1, "a"),
        legacy_message(2, "b"),
        legacy_message(3, "c")
    );
    let truncate = r#"{"Truncate":{"version":2,"at":20,"after":1}}"#.to_string();
    let again = format!(r#"{{"Append":{{"version":3,"at":30,"messages":[{}]}}}}"#, legacy_message(2, "b2"));
    // A frame in this adapter's format after the legacy ones (no header).
    let Ok(new) = entry::encode_append(4, 40, &[msg(3, "n3")]) else { panic!("encodes") };
    write_log(&temp, &[append.into_bytes(), truncate.into_bytes(), again.into_bytes(), new]);
    let mut store = temp.store();
    let info = store.info(&s, "c").expect("info");
    assert_eq!((info.version, info.last_seq, info.updated_at, info.created_at), (4, 3, 40, 7));
    let all = load_all(&mut store, &s, "c");
    let got: Vec<_> = all[..2].iter().map(|m| (m.seq, m.message.id.clone(), m.message.content.clone())).collect();
    assert_eq!(got, vec![text(1, "a"), text(2, "b2")]);
    assert_eq!(all[2], msg(3, "n3"));
    // "c" was truncated away: storable again; "b2" is stored.
    let retry = store.append(&s, "c", vec![msg(4, "c"), msg(5, "b2")], None, 50);
    assert!(matches!(retry, Ok(AppendOutcome::AlreadyStored(a)) if a.seqs == vec![IndexedSeq { index: 1, seq: 2 }]));
    assert_eq!(store.append(&s, "c", vec![msg(4, "c")], Some(4), 50), Ok(AppendOutcome::Stored(5)));
    let all = load_all(&mut temp.store(), &s, "c");
    assert_eq!(seqs(&all), vec![1, 2, 3, 4]);
    assert_eq!(all[1].message.content, text(2, "b2").2);

    let reset = format!(r#"{{"Reset":{{"version":9,"at":90,"messages":[{}]}}}}"#, legacy_message(1, "r"));
    write_log(&temp, &[reset.into_bytes()]);
    let info = temp.store().info(&s, "c").expect("info");
    assert_eq!((info.version, info.last_seq, info.updated_at), (9, 1, 90));
}

#[test]
fn an_undecodable_legacy_record_is_a_storage_error_naming_it() {
    let temp = Temp::new();
    let s = scope("t", "u");
    let bad = br#"{"Append":{"version":1,"at":1,"messages":[{"seq":1,"message":{"id":"x","role":"Robot"}}]}}"#;
    let log = write_log(&temp, &[bad.to_vec()]);
    let info = temp.store().info(&s, "c");
    let name = log.display().to_string();
    assert!(matches!(&info, Err(crate::Error::Storage(e)) if e.contains(&name) && e.contains("byte 0")), "{info:?}");
}
