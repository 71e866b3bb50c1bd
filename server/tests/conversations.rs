//! A conversation's meta over HTTP: `PATCH` changes it, and every meta body
//! refuses unknown members and an `extra` that is not a JSON object.

mod support;

use serde_json::{Value, json};
use support::{Result, TestServer, text};

async fn patch(client: &support::Client, path: &str, body: &Value) -> Result<support::Reply> {
    client.send("PATCH", path, &[], Some(serde_json::to_vec(body)?)).await
}

#[tokio::test]
async fn patch_changes_only_the_members_it_names() -> Result<()> {
    let mut server = TestServer::start(|_| {}).await?;
    let acme = server.acme();
    let base = "/v1/conversations/chat%2Fmeta";

    let missing = patch(&acme, base, &json!({ "title": "x" })).await?;
    assert_eq!((missing.status, missing.code().as_str()), (404, "not_found"), "{}", missing.text());
    assert_eq!(acme.get(base).await?.status, 404, "a patch creates nothing");

    let meta = json!({ "agent_id": "planner", "title": "Trip", "metadata": { "k": 1 }, "extra": { "openai": { "model": "m" } } });
    assert_eq!(acme.put(base, &meta).await?.status, 200);
    let body = json!({ "messages": [text("user", "hi", Some("m1"))] });
    assert_eq!(acme.post(&format!("{base}/messages"), &body).await?.status, 200);
    let before = acme.get(base).await?.json()?;

    // A member given replaces that field; the others stay.
    let renamed = patch(&acme, base, &json!({ "title": "Paris in June" })).await?;
    assert_eq!(renamed.status, 200, "{}", renamed.text());
    let renamed = renamed.json()?;
    assert_eq!(renamed["title"], "Paris in June");
    for kept in ["agent_id", "metadata", "extra", "version", "updated_at", "created_at", "message_count", "last_seq"] {
        assert_eq!(renamed[kept], before[kept], "{kept} is unchanged");
    }
    assert_eq!(acme.get(base).await?.json()?, renamed, "the answer is what is stored");

    // JSON-valued members are replaced whole, byte for byte; null clears a field.
    let raw = br#"{"metadata": {"n": 1.50}, "agent_id": null}"#.to_vec();
    let changed = acme.send("PATCH", base, &[], Some(raw)).await?;
    assert_eq!(changed.status, 200, "{}", changed.text());
    assert!(changed.text().contains(r#""metadata":{"n": 1.50}"#), "{}", changed.text());
    let stored = acme.get(base).await?.json()?;
    assert!(stored.get("agent_id").is_none(), "{stored}");
    assert_eq!((stored["title"].clone(), stored["extra"].clone()), (json!("Paris in June"), meta["extra"].clone()));
    // An empty patch changes nothing.
    assert_eq!(patch(&acme, base, &json!({})).await?.json()?, stored);
    // The history is untouched.
    let all = acme.get(&format!("{base}/messages/all")).await?.json()?;
    assert_eq!(all["messages"].as_array().map(Vec::len), Some(1));

    // Refusals: an unknown member, a non-object extra, a bad id, no JSON body,
    // another tenant's conversation.
    let typo = patch(&acme, base, &json!({ "titel": "x" })).await?;
    assert_eq!((typo.status, typo.code().as_str()), (400, "invalid_json"), "{}", typo.text());
    assert!(typo.text().contains("titel"), "{}", typo.text());
    let extra = patch(&acme, base, &json!({ "extra": [1] })).await?;
    assert_eq!((extra.status, extra.code().as_str()), (400, "invalid_input"), "{}", extra.text());
    assert!(extra.text().contains("extra"), "{}", extra.text());
    let bad_id = patch(&acme, "/v1/conversations/bad%00id", &json!({})).await?;
    assert_eq!((bad_id.status, bad_id.code().as_str()), (400, "invalid_input"));
    let plain = acme.send("PATCH", base, &[("content-type", "text/plain")], None).await?;
    assert_eq!((plain.status, plain.code().as_str()), (415, "unsupported_media_type"));
    assert_eq!(patch(&server.beta(), base, &json!({ "title": "mine" })).await?.status, 404);
    assert_eq!(acme.get(base).await?.json()?, stored, "no refused patch changed anything");
    server.stop().await
}

#[tokio::test]
async fn meta_bodies_refuse_unknown_members_and_non_object_extras() -> Result<()> {
    let mut server = TestServer::start(|_| {}).await?;
    let acme = server.acme();

    let typo = acme.put("/v1/conversations/a", &json!({ "titel": "Trip" })).await?;
    assert_eq!((typo.status, typo.code().as_str()), (400, "invalid_json"), "{}", typo.text());
    assert!(typo.json()?["error"]["message"].as_str().is_some_and(|m| m.contains("titel")), "{}", typo.text());
    for extra in [json!([1]), json!("x"), json!(3)] {
        let refused = acme.put("/v1/conversations/a", &json!({ "extra": extra })).await?;
        assert_eq!((refused.status, refused.code().as_str()), (400, "invalid_input"), "{}", refused.text());
        assert!(refused.text().contains("extra: must be a JSON object"), "{}", refused.text());
    }
    assert_eq!(acme.get("/v1/conversations/a").await?.status, 404, "nothing was created");

    // The meta of an append that creates the conversation is held to the same rules.
    let path = "/v1/conversations/b/messages";
    let messages = json!([text("user", "hi", None)]);
    let typo =
        acme.post(path, &json!({ "messages": messages, "create_if_missing": true, "meta": { "titel": "x" } })).await?;
    assert_eq!((typo.status, typo.code().as_str()), (400, "invalid_json"), "{}", typo.text());
    assert!(typo.text().contains("meta.titel"), "{}", typo.text());
    let extra =
        acme.post(path, &json!({ "messages": messages, "create_if_missing": true, "meta": { "extra": [] } })).await?;
    assert_eq!((extra.status, extra.code().as_str()), (400, "invalid_input"), "{}", extra.text());
    assert_eq!(acme.get("/v1/conversations/b").await?.status, 404, "nothing was created");

    let fine = json!({ "title": "Trip", "extra": { "openai": { "model": "m" } } });
    let created = acme.put("/v1/conversations/a", &fine).await?;
    assert_eq!(created.status, 200, "{}", created.text());
    assert_eq!(created.json()?["extra"], fine["extra"]);
    server.stop().await
}
