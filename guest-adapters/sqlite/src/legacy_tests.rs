//! Conversion of hand-written 0.1.0 records. Each sample follows serde's derive
//! rules for the wit-bindgen 0.1.0 types (field order as declared, `None` as
//! `null`, externally tagged enums), i.e. exactly what the 0.1.0 adapter wrote.

use super::*;

/// `content` without its leading 0x01, as text.
fn plain_json(content: &[u8]) -> &str {
    assert_eq!(content.first(), Some(&PLAIN), "plain content starts with 0x01");
    std::str::from_utf8(&content[1..]).expect("plain content is UTF-8")
}

#[test]
fn a_message_with_every_kind_of_part_converts_to_the_public_form() {
    let old = r#"{"id":"m1","role":"Assistant","parts":[{"Text":"hi"},{"Thinking":{"text":"t","signature":"sig","redacted":false}},{"ToolCall":{"id":"c1","name":"f","arguments":"{\"a\":1}"}},{"ToolResult":{"call_id":"c1","content":"ok","is_error":true}},{"Media":{"mime_type":"image/png","source":{"Inline":[1,2]},"name":null}},{"Media":{"mime_type":"image/png","source":{"Url":"u"},"name":"n"}}],"usage":{"input_tokens":1,"output_tokens":2,"cached_tokens":3,"cost":0.5},"stop_reason":{"Other":"x"},"created_at":7,"metadata":"{ \"k\": 1 }"}"#;
    let plain = message(old).expect("converts");
    assert_eq!(plain.id, "m1");
    assert_eq!(plain.role, WitRole::Assistant);
    assert_eq!(plain.created_at, 7);
    assert_eq!(
        plain_json(&plain.content),
        concat!(
            r#"{"parts":[{"type":"text","text":"hi"},"#,
            r#"{"type":"thinking","text":"t","signature":"sig"},"#,
            r#"{"type":"tool_call","id":"c1","name":"f","arguments":"{\"a\":1}"},"#,
            r#"{"type":"tool_result","call_id":"c1","content":"ok","is_error":true},"#,
            r#"{"type":"media","mime_type":"image/png","source":{"inline":[1,2]}},"#,
            r#"{"type":"media","mime_type":"image/png","source":{"url":"u"},"name":"n"}],"#,
            r#""usage":{"input_tokens":1,"output_tokens":2,"cached_tokens":3,"cost":0.5},"#,
            r#""stop_reason":"x","metadata":{ "k": 1 }}"#
        )
    );
}

#[test]
fn absent_optionals_are_omitted_and_flags_only_appear_when_set() {
    let old = r#"{"id":"m2","role":"User","parts":[{"Thinking":{"text":"secret","signature":null,"redacted":true}},{"ToolResult":{"call_id":"c","content":"fine","is_error":false}}],"usage":null,"stop_reason":null,"created_at":-3,"metadata":null}"#;
    let plain = message(old).expect("converts");
    assert_eq!(plain.role, WitRole::User);
    assert_eq!(plain.created_at, -3);
    assert_eq!(
        plain_json(&plain.content),
        r#"{"parts":[{"type":"thinking","text":"secret","redacted":true},{"type":"tool_result","call_id":"c","content":"fine"}]}"#
    );
}

#[test]
fn an_empty_message_keeps_its_empty_parts() {
    let old = r#"{"id":"e","role":"Tool","parts":[],"usage":{"input_tokens":0,"output_tokens":0,"cached_tokens":0,"cost":null},"stop_reason":"ToolUse","created_at":0,"metadata":null}"#;
    let plain = message(old).expect("converts");
    assert_eq!(plain.role, WitRole::Tool);
    assert_eq!(
        plain_json(&plain.content),
        r#"{"parts":[],"usage":{"input_tokens":0,"output_tokens":0,"cached_tokens":0},"stop_reason":"tool_use"}"#
    );
}

#[test]
fn every_stop_reason_and_role_has_its_public_name() {
    let reasons = [
        ("\"EndTurn\"", "end_turn"),
        ("\"MaxTokens\"", "max_tokens"),
        ("\"ToolUse\"", "tool_use"),
        ("\"StopSequence\"", "stop_sequence"),
        ("\"ContentFilter\"", "content_filter"),
        ("\"Error\"", "error"),
        (r#"{"Other":"pause_turn"}"#, "pause_turn"),
    ];
    for (old, new) in reasons {
        let json = format!(
            r#"{{"id":"m","role":"System","parts":[],"usage":null,"stop_reason":{old},"created_at":1,"metadata":null}}"#
        );
        let plain = message(&json).expect("converts");
        assert_eq!(plain_json(&plain.content), format!(r#"{{"parts":[],"stop_reason":"{new}"}}"#));
    }
    for (old, role) in [
        ("System", WitRole::System),
        ("Developer", WitRole::Developer),
        ("User", WitRole::User),
        ("Assistant", WitRole::Assistant),
        ("Tool", WitRole::Tool),
    ] {
        let json = format!(
            r#"{{"id":"m","role":"{old}","parts":[],"usage":null,"stop_reason":null,"created_at":1,"metadata":null}}"#
        );
        assert_eq!(message(&json).expect("converts").role, role);
    }
}

#[test]
fn metadata_text_survives_byte_for_byte() {
    // Escapes, odd spacing, key order and number spelling must all survive.
    let metadata = "  {\"b\" :1.50,\n\"a\":[\"\\u00e9\", null]}\t";
    let old = format!(
        r#"{{"id":"m","role":"User","parts":[{{"Text":"é \"q\""}}],"usage":null,"stop_reason":null,"created_at":1,"metadata":{}}}"#,
        serde_json::to_string(metadata).expect("a string encodes")
    );
    let plain = message(&old).expect("converts");
    let expected = format!(r#"{{"parts":[{{"type":"text","text":"é \"q\""}}],"metadata":{metadata}}}"#);
    assert_eq!(plain_json(&plain.content), expected);
    let parsed: serde_json::Value = serde_json::from_str(plain_json(&plain.content)).expect("valid JSON");
    assert_eq!(parsed["metadata"]["a"][0], "é");
}

#[test]
fn records_that_are_not_0_1_0_json_are_refused_with_a_reason() {
    assert!(message("not json").is_err());
    // 0.2.0-style lowercase tags are not what 0.1.0 wrote.
    let wrong_tag =
        r#"{"id":"m","role":"user","parts":[],"usage":null,"stop_reason":null,"created_at":1,"metadata":null}"#;
    assert!(message(wrong_tag).is_err());
    let bad_metadata =
        r#"{"id":"m","role":"User","parts":[],"usage":null,"stop_reason":null,"created_at":1,"metadata":"{oops"}"#;
    let err = message(bad_metadata).expect_err("refused");
    assert!(err.contains("metadata"), "{err}");
    let two_values =
        r#"{"id":"m","role":"User","parts":[],"usage":null,"stop_reason":null,"created_at":1,"metadata":"1 2"}"#;
    assert!(message(two_values).is_err());
}

#[test]
fn conversation_meta_converts_with_absent_fields_omitted() {
    let full = r#"{"agent_id":"agent-7","title":"Trip \"plans\"","metadata":"{\"k\": [1, 2]}"}"#;
    let content = conversation_meta(full).expect("converts");
    assert_eq!(plain_json(&content), r#"{"agent_id":"agent-7","title":"Trip \"plans\"","metadata":{"k": [1, 2]}}"#);
    let title_only = r#"{"agent_id":null,"title":"t","metadata":null}"#;
    assert_eq!(plain_json(&conversation_meta(title_only).expect("converts")), r#"{"title":"t"}"#);
    let empty = r#"{"agent_id":null,"title":null,"metadata":null}"#;
    assert_eq!(plain_json(&conversation_meta(empty).expect("converts")), "{}");
}

#[test]
fn a_display_record_keeps_its_clear_fields_and_embeds_content_and_metadata_raw() {
    let old = br#"{"message_id":"m","message_type":"assistant","content_type":"tool_call","tool_call_id":"call_1","status":"executing","content":"{\"name\":\"search\", \"arguments\":{}}","metadata":"{\"started_at\":5}","created_at":1,"updated_at":2}"#;
    let plain = display_record(old).expect("converts");
    assert_eq!(plain.message_id.as_deref(), Some("m"));
    assert_eq!(plain.message_type, "assistant");
    assert_eq!(plain.content_type, "tool_call");
    assert_eq!(plain.tool_call_id.as_deref(), Some("call_1"));
    assert_eq!(plain.status.as_deref(), Some("executing"));
    assert_eq!((plain.created_at, plain.updated_at), (1, 2));
    assert_eq!(plain_json(&plain.body), r#"{"content":{"name":"search", "arguments":{}},"metadata":{"started_at":5}}"#);
}

#[test]
fn a_synthetic_display_record_without_metadata_converts() {
    let old = br#"{"message_id":null,"message_type":"user","content_type":"text","tool_call_id":null,"status":null,"content":"\"x\"","metadata":null,"created_at":1,"updated_at":2}"#;
    let plain = display_record(old).expect("converts");
    assert_eq!(plain.message_id, None);
    assert_eq!((plain.tool_call_id, plain.status), (None, None));
    assert_eq!(plain_json(&plain.body), r#"{"content":"x"}"#);
    assert!(display_record(b"{}").is_err());
}
