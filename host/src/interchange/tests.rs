//! The interchange against the corpus (`tests/corpus/`): every line round-trips
//! in its own format (keep and pure), survives every other format in keep
//! mode, is detected, and every malformed case is refused where expected. The
//! store round trips are in `tests/tests/transcripts.rs`.

use std::path::{Path as FsPath, PathBuf};

use super::extension::{same_json, same_parts};
use super::*;
use crate::model::{ConversationMeta, Part, Role};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus")
}

/// `(format, file)` for every corpus file but the pure expectations.
fn corpus_files() -> Result<Vec<(Format, PathBuf)>, std::io::Error> {
    let mut files = Vec::new();
    for format in Format::ALL {
        let mut names: Vec<PathBuf> = std::fs::read_dir(corpus().join(format.name()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl") && !p.to_string_lossy().ends_with(".pure.jsonl"))
            .collect();
        names.sort();
        files.extend(names.into_iter().map(|p| (format, p)));
    }
    Ok(files)
}

fn lines(path: &FsPath) -> Result<Vec<(usize, String)>, std::io::Error> {
    Ok(std::fs::read_to_string(path)?
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i + 1, l.to_owned()))
        .collect())
}

fn same_meta(a: &ConversationMeta, b: &ConversationMeta) -> bool {
    a.agent_id == b.agent_id
        && a.title == b.title
        && same_json(a.metadata.as_ref(), b.metadata.as_ref())
        && same_json(a.extra.as_ref(), b.extra.as_ref())
}

fn same_message(a: &NewMessage, b: &NewMessage) -> bool {
    a.id == b.id
        && a.role == b.role
        && same_parts(&a.parts, &b.parts)
        && a.usage == b.usage
        && a.stop_reason == b.stop_reason
        && a.created_at == b.created_at
        && same_json(a.metadata.as_ref(), b.metadata.as_ref())
        && same_json(a.extra.as_ref(), b.extra.as_ref())
}

/// Transcripts equal, JSON-valued fields compared as JSON.
fn check_same(a: &Transcript, b: &Transcript, context: &str) -> TestResult {
    let show = |t: &Transcript| render_line(Format::Stowage, t, Mode::Keep).map(|r| r.text).unwrap_or_default();
    let messages_equal =
        a.messages.len() == b.messages.len() && a.messages.iter().zip(&b.messages).all(|(x, y)| same_message(x, y));
    if a.conversation_id != b.conversation_id || !same_meta(&a.meta, &b.meta) || !messages_equal {
        return Err(format!("{context}: transcripts differ\n got:  {}\n want: {}", show(a), show(b)).into());
    }
    Ok(())
}

fn check_json(got: &str, want: &str, context: &str) -> TestResult {
    if json_equivalent(got, want) {
        Ok(())
    } else {
        Err(format!("{context}: not the same JSON\n got:  {got}\n want: {want}").into())
    }
}

#[test]
fn every_corpus_line_round_trips_in_its_format_in_both_modes_and_is_detected() -> TestResult {
    let mut checked = 0;
    for (format, file) in corpus_files()? {
        let pure_file = file.with_extension("").with_extension("pure.jsonl");
        let pure_lines = if pure_file.exists() { lines(&pure_file)? } else { Vec::new() };
        for (n, line) in lines(&file)? {
            let context = format!("{}:{n}", file.display());
            let (_, transcript) = parse_line(Some(format), n, &line).map_err(|e| format!("{context}: {e}"))?;
            let keep = render_line(format, &transcript, Mode::Keep)?.text;
            if format == Format::Stowage {
                // serde writes default fields the corpus may omit (`cached_tokens: 0`):
                // Stowage's own format is compared as the transcript it holds.
                check_same(&parse_line(Some(format), n, &keep)?.1, &transcript, &format!("{context} keep"))?;
            } else {
                check_json(&keep, &line, &format!("{context} keep"))?;
            }
            if format != Format::Stowage {
                let want = pure_lines.iter().find(|(m, _)| *m == n).map_or(line.as_str(), |(_, l)| l.as_str());
                let pure = render_line(format, &transcript, Mode::Pure)?;
                check_json(&pure.text, want, &format!("{context} pure"))?;
            }
            let (detected, again) = parse_line(None, n, &line)?;
            if detected != format {
                check_same(&again, &transcript, &format!("{context}: detected as {detected}"))?;
            }
            checked += 1;
        }
    }
    assert!(checked >= 40, "the corpus has {checked} lines");
    Ok(())
}

#[test]
fn every_corpus_transcript_survives_every_format_in_keep_mode() -> TestResult {
    for (format, file) in corpus_files()? {
        for (n, line) in lines(&file)? {
            let (_, mut transcript) = parse_line(Some(format), n, &line)?;
            assign_ids(&line, &mut transcript);
            for target in Format::ALL {
                let context = format!("{}:{n} → {target}", file.display());
                let text = render_line(target, &transcript, Mode::Keep)?.text;
                let (_, back) = parse_line(Some(target), 1, &text).map_err(|e| format!("{context}: {e}\n{text}"))?;
                check_same(&back, &transcript, &context)?;
                if target != Format::Stowage {
                    let pure = render_line(target, &transcript, Mode::Pure)?.text;
                    assert!(!pure.contains("x_stowage"), "{context}: pure output has x_stowage: {pure}");
                    parse_line(Some(target), 1, &pure).map_err(|e| format!("{context} pure: {e}\n{pure}"))?;
                }
            }
        }
    }
    Ok(())
}

#[test]
fn malformed_corpus_is_refused_with_line_and_field() -> TestResult {
    let dir = corpus().join("malformed");
    let expected: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json"))?)?;
    let cases = expected["cases"].as_array().ok_or("cases")?;
    assert!(cases.len() >= 30);
    for case in cases {
        let file = case["file"].as_str().ok_or("file")?;
        let format = case["format"].as_str().map(str::parse::<Format>).transpose()?;
        let text = std::fs::read_to_string(dir.join(file))?;
        let Err(error) = parse_file(format, &text) else { return Err(format!("{file} was accepted").into()) };
        let (line, field) = (case["line"].as_u64().ok_or("line")? as usize, case["field"].as_str().ok_or("field")?);
        assert!(error.line == line && error.field.starts_with(field), "{file}: {error:?}, want line {line} {field}");
    }
    Ok(())
}

#[test]
fn single_values_convert_one_at_a_time() -> TestResult {
    let item = r#"{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"n\":1e400}","id":"fc_1"}"#;
    let messages = parse_message(Format::OpenAiResponses, item)?;
    assert_eq!(messages.len(), 1);
    assert!(
        matches!(&messages[0].parts[..], [Part::ToolCall { id, arguments, .. }] if id == "c1" && arguments == "{\"n\":1e400}")
    );
    let back = render_messages(Format::OpenAiResponses, &messages, Mode::Pure)?;
    assert_eq!(back.values.len(), 1);
    check_json(&back.values[0], item, "responses item")?;
    let ui = r#"{"id":"a1","role":"assistant","parts":[{"type":"step-start"},{"type":"tool-f","toolCallId":"c1","state":"output-available","input":{"q":1},"output":{"r":2.50}},{"type":"step-start"},{"type":"text","text":"done"}]}"#;
    let messages = parse_message(Format::AiSdkUi, ui)?;
    let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::Assistant, Role::Tool, Role::Assistant]);
    let ids: Vec<&str> = messages.iter().filter_map(|m| m.id.as_deref()).collect();
    assert_eq!(ids, ["a1", "a1~1", "a1~2"]);
    let back = render_messages(Format::AiSdkUi, &messages, Mode::Keep)?;
    assert_eq!(back.values.len(), 1);
    check_json(&back.values[0], ui, "UIMessage")?;
    // The same tool call, converted: a Chat assistant message and a tool message.
    let chat = render_messages(Format::OpenAi, &messages, Mode::Pure)?;
    assert_eq!(chat.values.len(), 3, "{:?}", chat.values);
    check_json(&chat.values[1], r#"{"role":"tool","tool_call_id":"c1","content":"{\"r\":2.50}"}"#, "tool message")?;
    assert!(parse_message(Format::OpenAi, r#"{"role":"robot"}"#).is_err_and(|e| e.field == "role"));
    Ok(())
}

#[test]
fn pure_export_reports_what_it_leaves_out() -> TestResult {
    let transcript = Transcript {
        messages: vec![
            NewMessage::text(Role::System, "be brief"),
            NewMessage::new(Role::Assistant, vec![Part::thinking("hmm", None), Part::text("hi")]),
            NewMessage::text(Role::System, "late note"),
        ],
        ..Transcript::default()
    };
    let pure = render_line(Format::Anthropic, &transcript, Mode::Pure)?;
    check_json(&pure.text, r#"{"system":"be brief","messages":[{"role":"assistant","content":"hi"}]}"#, "pure")?;
    let dropped: Vec<(String, u64)> = pure.dropped.entries().map(|(w, c)| (w.to_owned(), c)).collect();
    assert!(dropped.iter().any(|(w, _)| w.contains("system message")), "{dropped:?}");
    assert!(dropped.iter().any(|(w, _)| w.contains("thinking")), "{dropped:?}");
    // Keep mode keeps both, and reads back the same.
    let keep = render_line(Format::Anthropic, &transcript, Mode::Keep)?;
    assert!(keep.dropped.is_empty());
    check_same(&parse_line(Some(Format::Anthropic), 1, &keep.text)?.1, &transcript, "keep")?;
    assert!(render_line(Format::Stowage, &transcript, Mode::Pure).is_err());
    Ok(())
}

#[test]
fn a_list_of_ui_messages_keeps_its_boundaries() -> TestResult {
    let values = [
        r#"{"id":"u","role":"user","parts":[{"type":"text","text":"hi"}]}"#,
        r#"{"id":"a","role":"assistant","parts":[{"type":"step-start"},{"type":"text","text":"one"}]}"#,
        r#"{"id":"b","role":"assistant","parts":[{"type":"step-start"},{"type":"text","text":"two"}]}"#,
        r#"{"id":"c","role":"assistant","parts":[{"type":"step-start"},{"type":"tool-f","toolCallId":"c1","state":"output-available","input":{},"output":"ok"},{"type":"step-start"},{"type":"text","text":"three"}]}"#,
        r#"{"id":"u2","role":"user","parts":[{"type":"text","text":"and?"}]}"#,
        r#"{"id":"d","role":"assistant","parts":[{"type":"text","text":"done"}]}"#,
    ];
    let messages = parse_values(Format::AiSdkUi, &values)?;
    assert_eq!(messages.len(), 8, "c is a step, its result and a second step");
    for mode in [Mode::Pure, Mode::Keep] {
        let back = render_messages(Format::AiSdkUi, &messages, mode)?;
        assert_eq!(back.values.len(), values.len(), "{mode:?}: {:?}", back.values);
        for (got, want) in back.values.iter().zip(values) {
            check_json(got, want, &format!("{mode:?}"))?;
        }
        let again = parse_values(Format::AiSdkUi, &back.values)?;
        let same = again.len() == messages.len() && again.iter().zip(&messages).all(|(x, y)| same_message(x, y));
        assert!(same, "{mode:?}: the rendered list reads back as the same messages");
    }
    // Converted one at a time, no value knows the one before it: a, b and c merge.
    let mut one_by_one = Vec::new();
    for value in values {
        one_by_one.extend(parse_message(Format::AiSdkUi, value)?);
    }
    assert_eq!(render_messages(Format::AiSdkUi, &one_by_one, Mode::Pure)?.values.len(), 4);
    // Other formats convert a list value by value.
    let chat = [r#"{"role":"assistant","content":"x"}"#, r#"{"role":"assistant","content":"y"}"#];
    assert_eq!(parse_values(Format::OpenAi, &chat)?.len(), 2);
    // The first bad value is named by its index and field.
    let bad = [values[0], r#"{"id":"x","role":"robot","parts":[]}"#];
    let error = parse_values(Format::AiSdkUi, &bad).err();
    assert!(error.as_ref().is_some_and(|e| e.index == 1 && e.field == "role"), "{error:?}");
    let error = parse_values(Format::AiSdkUi, &["{"]).err();
    assert!(error.is_some_and(|e| e.index == 0 && e.reason.starts_with("not valid JSON")));
    Ok(())
}
