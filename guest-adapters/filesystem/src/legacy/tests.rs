//! Hand-written 0.1.0 records, following serde's derive rules for the 0.1.0
//! wit-bindgen types exactly, and the plain-legacy bytes they must become.

use super::convert::{self, PLAIN};
use super::{display_entry, message_entry, types};
use crate::stowage::store::types::Role;

fn plain(json: &str) -> Vec<u8> {
    let mut out = vec![PLAIN];
    out.extend_from_slice(json.as_bytes());
    out
}

const APPEND: &str = r#"{"Append":{"version":2,"at":1200,"messages":[
 {"seq":2,"message":{"id":"m2","role":"Assistant","parts":[
   {"Thinking":{"text":"hmm","signature":"sig","redacted":false}},
   {"Thinking":{"text":"xx","signature":null,"redacted":true}},
   {"ToolCall":{"id":"c1","name":"search","arguments":"{\"q\":1}"}},
   {"Media":{"mime_type":"image/png","source":{"Inline":[1,2,255]},"name":"a.png"}},
   {"Media":{"mime_type":"text/html","source":{"Url":"http://x"},"name":null}}],
  "usage":{"input_tokens":10,"output_tokens":20,"cached_tokens":3,"cost":0.25},
  "stop_reason":"ToolUse","created_at":1002,"metadata":"{\"a\": true}"}},
 {"seq":3,"message":{"id":"m3","role":"Tool","parts":[
   {"ToolResult":{"call_id":"c1","content":"ok","is_error":true}}],
  "usage":{"input_tokens":1,"output_tokens":2,"cached_tokens":0,"cost":null},
  "stop_reason":{"Other":"weird"},"created_at":1003,"metadata":null}},
 {"seq":4,"message":{"id":"m4","role":"User","parts":[{"Text":"h\u00e9llo \"q\""},
   {"ToolResult":{"call_id":"c2","content":"{}","is_error":false}}],
  "usage":null,"stop_reason":null,"created_at":1004,"metadata":"[1, {\"b\" : null}]"}}]}}"#;

#[test]
fn every_part_usage_stop_reason_and_metadata_converts() {
    let entry = message_entry(APPEND.as_bytes());
    let Ok(types::Entry::Append { version: 2, at: 1200, messages }) = entry else {
        panic!("{entry:?}");
    };
    let converted: Vec<_> = messages.iter().map(convert::stored_message).collect();
    let [Ok(m2), Ok(m3), Ok(m4)] = &converted[..] else {
        panic!("{converted:?}");
    };
    assert_eq!((m2.seq, m2.message.id.as_str(), m2.message.role), (2, "m2", Role::Assistant));
    assert_eq!(m2.message.created_at, 1002);
    assert!(m2.message.tag.is_empty());
    assert_eq!(
        m2.message.content,
        plain(concat!(
            r#"{"parts":[{"type":"thinking","text":"hmm","signature":"sig"},"#,
            r#"{"type":"thinking","text":"xx","redacted":true},"#,
            r#"{"type":"tool_call","id":"c1","name":"search","arguments":"{\"q\":1}"},"#,
            r#"{"type":"media","mime_type":"image/png","source":{"inline":[1,2,255]},"name":"a.png"},"#,
            r#"{"type":"media","mime_type":"text/html","source":{"url":"http://x"}}],"#,
            r#""usage":{"input_tokens":10,"output_tokens":20,"cached_tokens":3,"cost":0.25},"#,
            r#""stop_reason":"tool_use","metadata":{"a": true}}"#
        ))
    );
    assert_eq!((m3.seq, m3.message.role), (3, Role::Tool));
    assert_eq!(
        m3.message.content,
        plain(concat!(
            r#"{"parts":[{"type":"tool_result","call_id":"c1","content":"ok","is_error":true}],"#,
            r#""usage":{"input_tokens":1,"output_tokens":2,"cached_tokens":0},"stop_reason":"weird"}"#
        ))
    );
    assert_eq!(m4.message.role, Role::User);
    assert_eq!(
        m4.message.content,
        plain(concat!(
            r#"{"parts":[{"type":"text","text":"héllo \"q\""},"#,
            r#"{"type":"tool_result","call_id":"c2","content":"{}"}],"metadata":[1, {"b" : null}]}"#
        ))
    );
}

#[test]
fn every_stop_reason_and_role_converts() {
    let cases = [
        ("EndTurn", "System", "end_turn", Role::System),
        ("MaxTokens", "Developer", "max_tokens", Role::Developer),
        ("StopSequence", "User", "stop_sequence", Role::User),
        ("ContentFilter", "Assistant", "content_filter", Role::Assistant),
        ("Error", "Tool", "error", Role::Tool),
    ];
    for (reason, role, json, expected_role) in cases {
        let entry = format!(
            r#"{{"Reset":{{"version":9,"at":5,"messages":[{{"seq":1,"message":{{"id":"x","role":"{role}","parts":[],"usage":null,"stop_reason":"{reason}","created_at":-1,"metadata":null}}}}]}}}}"#
        );
        let Ok(types::Entry::Reset { messages, .. }) = message_entry(entry.as_bytes()) else {
            panic!("{entry}");
        };
        let Some(Ok(m)) = messages.first().map(convert::stored_message) else {
            panic!("{entry}");
        };
        assert_eq!(m.message.role, expected_role);
        assert_eq!(m.message.created_at, -1);
        assert_eq!(m.message.content, plain(&format!(r#"{{"parts":[],"stop_reason":"{json}"}}"#)));
    }
}

#[test]
fn truncate_entries_decode() {
    let entry = message_entry(br#"{"Truncate":{"version":4,"at":1400,"after":1}}"#);
    assert_eq!(entry, Ok(types::Entry::Truncate { version: 4, at: 1400, after: 1 }));
}

#[test]
fn metadata_that_is_not_json_is_an_error_not_a_guess() {
    let entry = br#"{"Append":{"version":1,"at":1,"messages":[{"seq":1,"message":{"id":"x","role":"User","parts":[],"usage":null,"stop_reason":null,"created_at":1,"metadata":"{not json"}}]}}"#;
    let Ok(types::Entry::Append { messages, .. }) = message_entry(entry) else {
        panic!("decodes");
    };
    let converted = convert::stored_message(&messages[0]);
    assert!(matches!(converted, Err(e) if e.contains("metadata")));
}

#[test]
fn conversation_meta_converts() {
    let meta = types::ConversationMeta {
        agent_id: Some("agent-1".into()),
        title: None,
        metadata: Some("{\"k\": [1, 2]}".into()),
    };
    let converted = convert::conversation_meta(&meta);
    assert!(
        matches!(&converted, Ok(m) if m.content == plain(r#"{"agent_id":"agent-1","metadata":{"k": [1, 2]}}"#) && m.tag.is_empty()),
        "{converted:?}"
    );
    let empty = types::ConversationMeta { agent_id: None, title: Some("T \u{1F600}".into()), metadata: None };
    let converted = convert::conversation_meta(&empty);
    assert!(matches!(&converted, Ok(m) if m.content == plain("{\"title\":\"T \u{1F600}\"}")));
}

#[test]
fn display_entries_convert() {
    let insert = br#"{"Insert":{"scope":{"tenant":"acme","user":"Ann"},"conversation_id":"conv/1","records":[
        {"seq":1,"record":{"message_id":"m2","message_type":"assistant","content_type":"tool_call","tool_call_id":"c1","status":"pending","content":"{\"name\":\"search\"}","metadata":null,"created_at":1002,"updated_at":1002}},
        {"seq":2,"record":{"message_id":null,"message_type":"system","content_type":"notification","tool_call_id":null,"status":null,"content":"\"note\"","metadata":"{\"x\":1}","created_at":1005,"updated_at":1006}}]}}"#;
    let Ok(types::DisplayEntry::Insert { scope, conversation_id, records }) = display_entry(insert) else {
        panic!("decodes");
    };
    assert_eq!((scope.tenant.as_str(), scope.user.as_str(), conversation_id.as_str()), ("acme", "Ann", "conv/1"));
    let [Ok(d1), Ok(d2)] = &records.iter().map(convert::display_record).collect::<Vec<_>>()[..] else {
        panic!("converts");
    };
    assert_eq!(d1.seq, 1);
    assert_eq!(d1.record.message_id.as_deref(), Some("m2"));
    assert_eq!((d1.record.message_type.as_str(), d1.record.content_type.as_str()), ("assistant", "tool_call"));
    assert_eq!((d1.record.tool_call_id.as_deref(), d1.record.status.as_deref()), (Some("c1"), Some("pending")));
    assert_eq!(d1.record.body, plain(r#"{"content":{"name":"search"}}"#));
    assert!(d1.record.tag.is_empty());
    assert_eq!((d2.seq, d2.record.message_id.as_deref(), d2.record.status.as_deref()), (2, None, None));
    assert_eq!((d2.record.created_at, d2.record.updated_at), (1005, 1006));
    assert_eq!(d2.record.body, plain(r#"{"content":"note","metadata":{"x":1}}"#));

    let update = br#"{"Update":{"seq":1,"record":{"message_id":"m2","message_type":"assistant","content_type":"tool_call","tool_call_id":"c1","status":"done","content":"{}","metadata":null,"created_at":1002,"updated_at":1010}}}"#;
    let Ok(types::DisplayEntry::Update(stored)) = display_entry(update) else {
        panic!("decodes");
    };
    assert!(
        matches!(convert::display_record(&stored), Ok(d) if d.record.status.as_deref() == Some("done") && d.record.updated_at == 1010)
    );
}
