//! Every conversation-store operation over HTTP, idempotent appends, and the
//! `?format=` seam.

mod support;

use serde_json::{Value, json};
use support::{Result, TestServer, text};

fn seqs(reply: &Value) -> Vec<u64> {
    reply["seqs"].as_array().map(|a| a.iter().filter_map(Value::as_u64).collect()).unwrap_or_default()
}

fn message_ids(page: &Value) -> Vec<String> {
    page["messages"]
        .as_array()
        .map(|a| a.iter().filter_map(|m| m["id"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn the_store_api_round_trips_over_http() -> Result<()> {
    let mut server = TestServer::start(|_| {}).await?;
    let acme = server.acme();
    let base = "/v1/conversations/chat%2F1";

    // open: empty body, then idempotent with a body that is ignored.
    let opened = acme.send("PUT", base, &[], None).await?;
    assert_eq!(opened.status, 200, "{}", opened.text());
    assert_eq!(opened.json()?["id"], "chat/1", "percent-encoded ids decode");
    let again = acme.put(base, &json!({ "title": "ignored" })).await?.json()?;
    assert!(again.get("title").is_none());

    // append with JSON kept byte for byte.
    let raw = r#"{"messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"hi"}],"metadata":{"k": 1.50}},{"id":"m2","role":"assistant","parts":[{"type":"tool_call","id":"call-1","name":"f","arguments":"{}"}]},{"id":"m3","role":"tool","parts":[{"type":"tool_result","call_id":"call-1","content":"ok"}]},{"id":"m4","role":"assistant","parts":[{"type":"text","text":"done"}]}]}"#;
    let appended = acme.send("POST", &format!("{base}/messages"), &[], Some(raw.as_bytes().to_vec())).await?.json()?;
    assert_eq!((seqs(&appended), appended["stored"].as_u64()), (vec![1, 2, 3, 4], Some(4)));
    let all = acme.get(&format!("{base}/messages/all")).await?;
    assert!(all.text().contains(r#""metadata":{"k": 1.50}"#), "{}", all.text());

    // pages: latest, before via cursor, after.
    let latest = acme.get(&format!("{base}/messages?limit=2")).await?.json()?;
    assert_eq!(message_ids(&latest), ["m3", "m4"]);
    let cursor = latest["next_cursor"].as_str().ok_or("a cursor to older messages")?;
    let older = acme.get(&format!("{base}/messages?limit=2&cursor={cursor}")).await?.json()?;
    assert_eq!((message_ids(&older), older["next_cursor"].is_null()), (vec!["m1".into(), "m2".into()], true));
    let after = acme.get(&format!("{base}/messages?after=1&limit=2")).await?.json()?;
    assert_eq!(message_ids(&after), ["m2", "m3"]);

    // truncate refuses to split a tool pair; pop takes the newest; orphans view.
    let split = acme.delete(&format!("{base}/messages?after=2")).await?;
    assert_eq!((split.status, split.code().as_str()), (400, "invalid_input"), "{}", split.text());
    let popped = acme.send("POST", &format!("{base}/messages/pop"), &[], None).await?.json()?;
    assert_eq!(message_ids(&popped), ["m4"]);
    let cut = acme.delete(&format!("{base}/messages?after=3")).await?.json()?;
    assert_eq!(cut["removed"], 0);
    let cut = acme.delete(&format!("{base}/messages?after=1")).await?.json()?;
    assert_eq!(cut["removed"], 2, "a call and its result go together");
    let call = json!({ "messages": [{ "id": "m5", "role": "assistant", "parts": [{ "type": "tool_call", "id": "call-2", "name": "f", "arguments": "{}" }] }] });
    assert_eq!(acme.post(&format!("{base}/messages"), &call).await?.json()?["seqs"], json!([2]));
    let repaired = acme.get(&format!("{base}/messages?orphans=synthesize")).await?.json()?;
    assert_eq!(repaired["repairs"]["orphaned_calls"][0]["call_id"], "call-2");
    assert_eq!(repaired["messages"].as_array().map(Vec::len), Some(3), "a synthesized result, storage untouched");
    assert_eq!(acme.get(&format!("{base}/messages/all")).await?.json()?["messages"].as_array().map(Vec::len), Some(2));

    // replace, with optimistic concurrency.
    let info = acme.get(base).await?.json()?;
    let version = info["version"].as_u64().ok_or("version")?;
    let stale = acme
        .put(
            &format!("{base}/messages"),
            &json!({ "messages": [text("user", "x", None)], "expected_version": version + 5 }),
        )
        .await?;
    assert_eq!(stale.code(), "conflict");
    let replaced = acme
        .put(
            &format!("{base}/messages"),
            &json!({ "messages": [text("user", "fresh", Some("n1"))], "expected_version": version }),
        )
        .await?
        .json()?;
    assert_eq!(replaced["version"].as_u64(), Some(version + 1));
    assert_eq!(message_ids(&acme.get(&format!("{base}/messages/all")).await?.json()?), ["n1"]);

    // list pages by id; delete is idempotent.
    for id in ["a", "b"] {
        acme.send("PUT", &format!("/v1/conversations/{id}"), &[], None).await?;
    }
    let page = acme.get("/v1/conversations?limit=2").await?.json()?;
    let next = page["next_cursor"].as_str().ok_or("more conversations")?;
    let rest = acme.get(&format!("/v1/conversations?limit=2&cursor={next}")).await?.json()?;
    let mut ids: Vec<String> = [page, rest]
        .iter()
        .flat_map(|p| p["conversations"].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c["id"].as_str().map(str::to_owned))
        .collect();
    ids.sort();
    assert_eq!(ids, ["a", "b", "chat/1"]);
    assert_eq!(acme.delete(base).await?.json()?, json!({ "deleted": true }));
    assert_eq!(acme.delete(base).await?.json()?, json!({ "deleted": false }));
    assert_eq!(acme.get(base).await?.status, 404);
    server.stop().await
}

#[tokio::test]
async fn a_retried_batch_is_stored_once_by_ids_or_by_idempotency_key() -> Result<()> {
    let mut server = TestServer::start(|_| {}).await?;
    let acme = server.acme();
    let path = "/v1/conversations/idem/messages";
    let batch = json!({
        "messages": [text("user", "one", None), text("assistant", "two", None), text("user", "three", None)],
        "create_if_missing": true,
    });
    let body = serde_json::to_vec(&batch)?;
    let key = [("idempotency-key", "turn-7")];
    let first = acme.send("POST", path, &key, Some(body.clone())).await?.json()?;
    // The response was "lost": the client retries the very same request.
    let retry = acme.send("POST", path, &key, Some(body.clone())).await?.json()?;
    assert_eq!((seqs(&first), first["stored"].as_u64()), (vec![1, 2, 3], Some(3)));
    assert_eq!((seqs(&retry), retry["stored"].as_u64()), (vec![1, 2, 3], Some(0)));
    assert_eq!(first["ids"], retry["ids"], "the same derived ids");
    let id = first["ids"][0].as_str().unwrap_or_default().to_owned();
    assert!(id.starts_with("idem-") && id.ends_with("-0"), "{id}");
    // Another key is another batch; another user is another scope.
    let other = acme.send("POST", path, &[("idempotency-key", "turn-8")], Some(body.clone())).await?.json()?;
    assert_eq!(seqs(&other), vec![4, 5, 6]);
    let bob = acme.clone().user("bob").send("POST", path, &key, Some(body)).await?.json()?;
    assert_ne!(bob["ids"], first["ids"]);
    // Ids given by the client make any retry safe, with or without a key.
    let own = json!({ "messages": [text("user", "mine", Some("x-1"))] });
    assert_eq!(acme.post(path, &own).await?.json()?["stored"], 1);
    assert_eq!(acme.post(path, &own).await?.json()?["stored"], 0);
    let all = acme.get("/v1/conversations/idem/messages/all").await?.json()?;
    let stored = message_ids(&all);
    let mut unique = stored.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((stored.len(), unique.len()), (7, 7), "nothing stored twice: {stored:?}");
    let seqs: Vec<u64> =
        all["messages"].as_array().ok_or("messages")?.iter().filter_map(|m| m["seq"].as_u64()).collect();
    assert_eq!(seqs, (1..=7).collect::<Vec<u64>>());
    server.stop().await
}

/// `?format=` converts through `stowage::interchange`, losslessly; an unknown
/// format is a visible 400, never a silent fallback.
#[tokio::test]
async fn formats_convert_through_interchange_and_unknown_ones_are_refused() -> Result<()> {
    let mut server = TestServer::start(|_| {}).await?;
    let acme = server.acme();
    // OpenAI Responses input items, as the Agents SDK stores them: one message each.
    let items = json!([
        { "role": "user", "content": "What's the weather in Paris?" },
        { "type": "function_call", "call_id": "call-1", "name": "weather", "arguments": "{\"city\":\"Paris\"}" },
        { "type": "function_call_output", "call_id": "call-1", "output": "18°C" },
    ]);
    let path = "/v1/conversations/session-1/messages";
    let body = serde_json::to_vec(&json!({ "messages": items, "create_if_missing": true }))?;
    let stored =
        acme.send("POST", &format!("{path}?format=openai-responses"), &[("idempotency-key", "t1")], Some(body)).await?;
    assert_eq!(stored.status, 200, "{}", stored.text());
    assert_eq!(seqs(&stored.json()?), vec![1, 2, 3]);
    let pure = acme.get(&format!("{path}/all?format=openai-responses&mode=pure")).await?.json()?;
    assert_eq!(pure["messages"], items, "pure mode gives back exactly the items");
    let kept = acme.get(&format!("{path}/all?format=openai-responses")).await?.text();
    assert!(kept.contains("x_stowage"), "keep mode carries the Stowage ids: {kept}");
    let native = acme.get(&format!("{path}/all")).await?.json()?;
    let roles: Vec<&str> =
        native["messages"].as_array().ok_or("messages")?.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool"]);
    let page = acme.get(&format!("{path}?limit=1&format=openai-responses&mode=pure")).await?.json()?;
    assert_eq!(page["messages"], json!([items[2]]));
    // Popping a tool result would orphan its call: the store refuses (400).
    let refused = acme.send("POST", &format!("{path}/pop?format=openai-responses"), &[], None).await?;
    assert_eq!((refused.status, refused.code().as_str()), (400, "invalid_input"), "{}", refused.text());
    let followup = json!({ "messages": [{ "role": "user", "content": "Thanks!" }] });
    assert_eq!(acme.post(&format!("{path}?format=openai-responses"), &followup).await?.status, 200);
    let popped =
        acme.send("POST", &format!("{path}/pop?format=openai-responses&mode=pure"), &[], None).await?.json()?;
    assert_eq!(popped["messages"], followup["messages"]);

    // A Vercel AI SDK UIMessage round-trips too.
    let ui = json!({ "id": "u1", "role": "user", "parts": [{ "type": "text", "text": "hi" }] });
    let body = json!({ "messages": [ui], "create_if_missing": true });
    assert_eq!(acme.post("/v1/conversations/chat/messages?format=ai-sdk-ui", &body).await?.status, 200);
    let back = acme.get("/v1/conversations/chat/messages/all?format=ai-sdk-ui&mode=pure").await?.json()?;
    assert_eq!(back["messages"], json!([ui]));

    for (method, path) in [
        ("POST", "/v1/conversations/chat/messages?format=xml"),
        ("PUT", "/v1/conversations/chat/messages?format=xml"),
        ("GET", "/v1/conversations/chat/messages?format=xml"),
        ("GET", "/v1/conversations/chat/messages/all?format=xml"),
        ("POST", "/v1/conversations/chat/messages/pop?format=xml"),
        ("POST", "/v1/conversations/chat/display/messages?format=xml"),
    ] {
        let payload = match method {
            "GET" => None,
            _ if path.contains("/display/") => {
                Some(serde_json::to_vec(&json!({ "message": text("user", "x", None) }))?)
            }
            _ if path.contains("/pop") => None,
            _ => Some(serde_json::to_vec(&json!({ "messages": [text("user", "x", None)] }))?),
        };
        let reply = acme.send(method, path, &[], payload).await?;
        assert_eq!((reply.status, reply.code().as_str()), (400, "unsupported_format"), "{method} {path}");
        assert!(reply.json()?["error"]["message"].as_str().is_some_and(|m| m.contains("openai-responses")));
    }
    let pure_stowage = acme.get("/v1/conversations/chat/messages?mode=pure").await?;
    assert_eq!(pure_stowage.code(), "invalid_input");
    let bad_item = json!({ "messages": [{ "neither": "type nor role" }] });
    let refused = acme.post("/v1/conversations/chat/messages?format=openai-responses", &bad_item).await?;
    assert_eq!((refused.status, refused.code().as_str()), (400, "invalid_input"), "{}", refused.text());
    assert_eq!(
        acme.get("/v1/conversations/chat").await?.json()?["message_count"],
        1,
        "nothing else was stored or popped"
    );
    server.stop().await
}

/// A list of UIMessages comes back exactly as sent: consecutive assistant
/// UIMessages stay apart (a run of assistant messages is otherwise rendered as
/// one UIMessage), through append and replace alike.
#[tokio::test]
async fn consecutive_assistant_ui_messages_keep_their_boundaries() -> Result<()> {
    let mut server = TestServer::start(|_| {}).await?;
    let acme = server.acme();
    let step = |text: &str| json!([{ "type": "step-start" }, { "type": "text", "text": text }]);
    let ui = json!([
        { "id": "u", "role": "user", "parts": [{ "type": "text", "text": "hi" }] },
        { "id": "a", "role": "assistant", "parts": step("one") },
        { "id": "b", "role": "assistant", "parts": step("two") },
        { "id": "c", "role": "assistant", "metadata": { "n": 3 }, "parts": step("three") },
    ]);
    let path = "/v1/conversations/ui/messages";
    let body = json!({ "messages": ui, "create_if_missing": true });
    let stored = acme.post(&format!("{path}?format=ai-sdk-ui"), &body).await?;
    assert_eq!(stored.status, 200, "{}", stored.text());
    assert_eq!(seqs(&stored.json()?), vec![1, 2, 3, 4]);
    let back = acme.get(&format!("{path}/all?format=ai-sdk-ui&mode=pure")).await?.json()?;
    assert_eq!(back["messages"], ui);
    // Keep mode adds only what a UIMessage has no slot for (the stored timestamps).
    let mut kept = acme.get(&format!("{path}/all?format=ai-sdk-ui")).await?.json()?;
    for message in kept["messages"].as_array_mut().ok_or("messages")? {
        message.as_object_mut().and_then(|m| m.remove("x_stowage")).ok_or("x_stowage")?;
    }
    assert_eq!(kept["messages"], ui);
    let reordered = json!([ui[0], ui[2], ui[1], { "id": "u2", "role": "user", "parts": [{ "type": "text", "text": "ok" }] }, ui[3]]);
    let replaced = acme.put(&format!("{path}?format=ai-sdk-ui"), &json!({ "messages": reordered })).await?;
    assert_eq!(replaced.status, 200, "{}", replaced.text());
    let back = acme.get(&format!("{path}/all?format=ai-sdk-ui&mode=pure")).await?.json()?;
    assert_eq!(back["messages"], reordered);
    // A bad item is named by its index.
    let bad = json!({ "messages": [ui[0], { "id": "x", "role": "robot", "parts": [] }] });
    let refused = acme.post(&format!("{path}?format=ai-sdk-ui"), &bad).await?;
    assert_eq!((refused.status, refused.code().as_str()), (400, "invalid_input"));
    let message = refused.json()?["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.starts_with("messages[1].role: "), "{message}");
    server.stop().await
}

/// Pop refuses to separate a tool call from its result in words of its own.
#[tokio::test]
async fn a_refused_pop_says_what_pop_would_separate() -> Result<()> {
    let mut server = TestServer::start(|_| {}).await?;
    let acme = server.acme();
    let path = "/v1/conversations/tools/messages";
    let messages = json!([
        text("user", "weather?", Some("m1")),
        { "id": "m2", "role": "assistant", "parts": [{ "type": "tool_call", "id": "call-9", "name": "weather", "arguments": "{}" }] },
        { "id": "m3", "role": "tool", "parts": [{ "type": "tool_result", "call_id": "call-9", "content": "sunny" }] },
    ]);
    assert_eq!(acme.post(path, &json!({ "messages": messages, "create_if_missing": true })).await?.status, 200);
    let refused = acme.send("POST", &format!("{path}/pop"), &[], None).await?;
    assert_eq!((refused.status, refused.code().as_str()), (400, "invalid_input"), "{}", refused.text());
    let message = refused.json()?["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains(r#"pop would separate tool call "call-9" (seq 2) from its result (seq 3"#), "{message}");
    assert!(message.contains("truncate after seq 1") && !message.contains("truncating"), "{message}");
    // Truncate keeps its own wording.
    let cut = acme.delete(&format!("{path}?after=2")).await?;
    let message = cut.json()?["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains(r#"truncating after seq 2 would separate tool call "call-9""#), "{message}");
    let all = acme.get(&format!("{path}/all")).await?.json()?;
    assert_eq!(message_ids(&all), ["m1", "m2", "m3"], "nothing was removed");
    server.stop().await
}
