//! Property tests over generated conversations (proptest: strategies compose
//! for nested values, failures shrink to the smallest message and part that
//! break, and failing seeds replay from `proptest-regressions/`).
//!
//! - Keep mode is the identity: any transcript — every role and part kind,
//!   text from the whole Unicode range, arguments that are JSON or not, exotic
//!   numbers in metadata, extras and provider values, extras keyed by any
//!   format — rendered in any format and parsed back is the same transcript.
//! - Pure mode keeps what the format carries: a conversation made only of what
//!   every provider format expresses natively comes back with the same roles
//!   and parts from each of them.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use stowage::interchange::{self, Format, Mode, Transcript};
use stowage::{ConversationMeta, JsonText, MediaSource, NewMessage, Part, Role, StopReason, Usage};

const FORMATS: [&str; 6] = ["stowage", "openai", "anthropic", "openai-responses", "ai-sdk-ui", "other"];

fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "\\PC{0,24}",
        2 => any::<String>(),
        1 => Just(String::new()),
        1 => Just("NUL:\u{0} LS:\u{2028} PS:\u{2029} tab\t CRLF\r\n 😀 e\u{301} 東京 \"q\" \\".to_owned()),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z_]{1,8}", "\\$[a-z$]{1,6}", "\\PC{1,6}"]
}

fn json_leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("-0".to_owned()),
        Just("1e400".to_owned()),
        Just("-1E-7".to_owned()),
        Just("2.50".to_owned()),
        Just("123456789012345678901234567890".to_owned()),
        any::<i64>().prop_map(|n| n.to_string()),
        text().prop_map(|s| quote(&s)),
    ]
}

fn object_text(members: impl IntoIterator<Item = (String, String)>) -> String {
    let members: Vec<String> = members.into_iter().map(|(k, v)| format!("{}:{v}", quote(&k))).collect();
    format!("{{{}}}", members.join(","))
}

fn json_value() -> impl Strategy<Value = String> {
    json_leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::btree_map(key(), inner, 0..4).prop_map(object_text),
        ]
    })
}

fn json_object() -> impl Strategy<Value = String> {
    prop::collection::btree_map(key(), json_value(), 0..4).prop_map(object_text)
}

fn json_text(strategy: impl Strategy<Value = String>) -> impl Strategy<Value = JsonText> {
    strategy.prop_filter_map("valid JSON", |t| JsonText::parse(t).ok())
}

/// An `extra`: objects keyed by format names (this and other formats).
fn extra() -> impl Strategy<Value = Option<JsonText>> {
    let entries =
        prop::collection::btree_map(prop::sample::select(&FORMATS[..]).prop_map(str::to_owned), json_object(), 1..3);
    prop::option::weighted(0.3, json_text(entries.prop_map(object_text)))
}

fn media_source() -> impl Strategy<Value = MediaSource> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..16).prop_map(MediaSource::Inline),
        prop::sample::select(vec![
            "https://example.com/a.png",
            "data:image/png;base64,aGk",
            "data:application/pdf;base64,JVBERi0xLjQK\r\nJSVFT0YK",
            "not a url",
        ])
        .prop_map(|u| MediaSource::Url(u.to_owned())),
    ]
}

fn arguments() -> impl Strategy<Value = String> {
    prop_oneof![json_object(), json_value(), text(), json_object().prop_map(|o| quote(&o))]
}

fn part() -> impl Strategy<Value = Part> {
    let mime = prop::sample::select(vec![
        "image/png",
        "image/*",
        "application/pdf",
        "audio/wav",
        "audio/mpeg",
        "text/plain",
        "video/mp4",
    ]);
    let kind = prop_oneof![
        text().prop_map(Part::text),
        (text(), prop::option::of(text()), any::<bool>()).prop_map(|(t, signature, redacted)| Part::Thinking {
            text: t,
            signature,
            redacted,
            extra: None
        }),
        (text(), text(), arguments()).prop_map(|(id, name, args)| Part::tool_call(id, name, args)),
        (text(), text(), any::<bool>()).prop_map(|(id, content, error)| Part::tool_result(id, content, error)),
        (mime, media_source(), prop::option::of(text())).prop_map(|(m, s, n)| Part::media(m, s, n)),
        (prop::sample::select(&FORMATS[..5]), json_text(json_object())).prop_map(|(f, value)| Part::Provider {
            format: f.to_owned(),
            value,
            extra: None
        }),
    ];
    (kind, extra()).prop_map(|(mut part, extra)| {
        match &mut part {
            Part::Text { extra: e, .. }
            | Part::Thinking { extra: e, .. }
            | Part::ToolCall { extra: e, .. }
            | Part::ToolResult { extra: e, .. }
            | Part::Media { extra: e, .. }
            | Part::Provider { extra: e, .. } => *e = extra,
        }
        part
    })
}

fn usage() -> impl Strategy<Value = Usage> {
    // Costs with up to 12 significant digits: serde_json (without its
    // `float_roundtrip` feature) re-reads some longer doubles one ulp off, in
    // every JSON path of Stowage, not only here.
    let cost = prop::option::of((0u64..1_000_000_000_000, 0i32..12).prop_map(|(n, e)| n as f64 / 10f64.powi(e)));
    (0u64..1 << 40, 0u64..1 << 40, 0u64..1 << 20, cost).prop_map(
        |(input_tokens, output_tokens, cached_tokens, cost)| Usage { input_tokens, output_tokens, cached_tokens, cost },
    )
}

fn stop_reason() -> impl Strategy<Value = StopReason> {
    prop_oneof![
        Just(StopReason::EndTurn),
        Just(StopReason::ToolUse),
        Just(StopReason::MaxTokens),
        text().prop_map(StopReason::from),
    ]
}

fn message() -> impl Strategy<Value = NewMessage> {
    let role = prop::sample::select(Role::ALL.to_vec());
    let parts = prop::collection::vec(part(), 0..5);
    (role, parts, prop::option::of(usage()), prop::option::of(stop_reason()), prop::option::of(any::<i64>()))
        .prop_flat_map(|(role, parts, usage, stop_reason, created_at)| {
            (prop::option::weighted(0.3, json_text(json_object())), extra()).prop_map(move |(metadata, extra)| {
                NewMessage {
                    id: None,
                    role,
                    parts: parts.clone(),
                    usage: usage.clone(),
                    stop_reason: stop_reason.clone(),
                    created_at,
                    metadata,
                    extra,
                }
            })
        })
}

fn transcript() -> impl Strategy<Value = Transcript> {
    let meta =
        (prop::option::of(text()), prop::option::of(text()), prop::option::of(json_text(json_object())), extra())
            .prop_map(|(agent_id, title, metadata, extra)| ConversationMeta { agent_id, title, metadata, extra });
    (prop::option::of("[a-z0-9-]{1,12}"), meta, prop::collection::vec(message(), 0..7)).prop_map(
        |(id, meta, mut messages)| {
            for (i, m) in messages.iter_mut().enumerate() {
                m.id = Some(format!("m{i}"));
            }
            Transcript { conversation_id: id, meta, messages, display: Vec::new() }
        },
    )
}

fn stowage_json(t: &Transcript) -> Result<String, TestCaseError> {
    interchange::render_line(Format::Stowage, t, Mode::Keep)
        .map(|r| r.text)
        .map_err(|e| TestCaseError::fail(e.to_string()))
}

proptest! {
    // 256 cases unless PROPTEST_CASES says otherwise; failing seeds are kept next
    // to this file and replayed first.
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct("tests/transcripts/props.proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn keep_mode_is_the_identity_in_every_format(t in transcript()) {
        let want = stowage_json(&t)?;
        for format in Format::ALL {
            let text = interchange::render_line(format, &t, Mode::Keep).map_err(|e| TestCaseError::fail(e.to_string()))?.text;
            let back = interchange::parse_line(Some(format), 1, &text).map_err(|e| TestCaseError::fail(format!("{format}: {e}\n{text}")))?.1;
            let got = stowage_json(&back)?;
            prop_assert!(interchange::json_equivalent(&got, &want), "{}: {}\n got:  {}\n want: {}", format, text, got, want);
        }
    }

    #[test]
    fn pure_mode_keeps_what_every_format_carries(turns in prop::collection::vec(turn(), 1..4), system in prop::option::of(text())) {
        let mut messages: Vec<NewMessage> = system.into_iter().map(|s| NewMessage::text(Role::System, s)).collect();
        messages.extend(turns.into_iter().flatten());
        for (i, m) in messages.iter_mut().enumerate() {
            m.id = Some(format!("m{i}"));
        }
        let t = Transcript { conversation_id: Some("c".into()), messages, ..Transcript::default() };
        for format in [Format::OpenAi, Format::Anthropic, Format::OpenAiResponses, Format::AiSdkUi] {
            let rendered = interchange::render_line(format, &t, Mode::Pure).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(rendered.dropped.is_empty(), "{}: dropped {}", format, rendered.dropped);
            let back = interchange::parse_line(Some(format), 1, &rendered.text).map_err(|e| TestCaseError::fail(format!("{format}: {e}")))?.1;
            let shape = |t: &Transcript| t.messages.iter().map(|m| (m.role, m.parts.iter().map(bare).collect::<Vec<_>>())).collect::<Vec<_>>();
            prop_assert_eq!(shape(&back), shape(&t), "{}: {}", format, rendered.text);
        }
    }
}

/// A part without its extras.
fn bare(part: &Part) -> Part {
    let mut part = part.clone();
    match &mut part {
        Part::Text { extra, .. }
        | Part::Thinking { extra, .. }
        | Part::ToolCall { extra, .. }
        | Part::ToolResult { extra, .. }
        | Part::Media { extra, .. }
        | Part::Provider { extra, .. } => *extra = None,
    }
    part
}

/// A user message, an assistant reply (text, then tool calls with JSON-object
/// arguments) and the results of its calls, in call order.
fn turn() -> impl Strategy<Value = Vec<NewMessage>> {
    let call = ("[a-zA-Z0-9_]{1,12}", "[a-zA-Z_]{1,12}", json_object());
    (text(), "\\PC{1,24}", prop::collection::vec(call, 0..3), prop::collection::vec(text(), 3)).prop_map(
        |(question, answer, calls, results)| {
            let mut assistant = vec![Part::text(answer)];
            let mut tool = Vec::new();
            for (i, (id, name, args)) in calls.into_iter().enumerate() {
                let id = format!("{id}_{i}");
                tool.push(Part::tool_result(id.clone(), results[i].clone(), false));
                assistant.push(Part::tool_call(id, name, args));
            }
            let mut turn = vec![NewMessage::text(Role::User, question), NewMessage::new(Role::Assistant, assistant)];
            if !tool.is_empty() {
                turn.push(NewMessage::new(Role::Tool, tool));
            }
            turn
        },
    )
}
