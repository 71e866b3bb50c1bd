//! Display persistence over HTTP and its Server-Sent Events: delivery, resume
//! from `Last-Event-ID` with exactly the missed events, explicit `events_lost`.

mod support;

use serde_json::{Value, json};
use support::{Client, Event, Result, TestServer};

const ASSISTANT: &str = r#"{"message":{"id":"m-2","role":"assistant","parts":[{"type":"thinking","text":"Use the tool."},{"type":"tool_call","id":"call-1","name":"weather","arguments":"{\"city\":\"Paris\"}"}],"stop_reason":"tool_use"},"agent_id":"agent-7"}"#;

async fn save_assistant(client: &Client, conversation: &str) -> Result<Value> {
    let path = format!("/v1/conversations/{conversation}/display/messages");
    let reply = client.send("POST", &path, &[], Some(ASSISTANT.as_bytes().to_vec())).await?;
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.json()
}

async fn status(client: &Client, conversation: &str, call: &str, body: Value) -> Result<support::Reply> {
    client.post(&format!("/v1/conversations/{conversation}/display/tools/{call}/status"), &body).await
}

async fn synthetic(client: &Client, conversation: &str, text: &str) -> Result<Value> {
    let body = json!({ "message_type": "system", "content_type": "notification", "content": { "text": text } });
    client.post(&format!("/v1/conversations/{conversation}/display/synthetic"), &body).await?.json()
}

fn record_of(event: &Event) -> Result<Value> {
    Ok(event.json()?["record"].clone())
}

#[tokio::test]
async fn display_operations_follow_the_card_lifecycle_across_a_restart() -> Result<()> {
    let mut server = TestServer::start(|_| {}).await?;
    let acme = server.acme();
    let saved = save_assistant(&acme, "d").await?;
    let records = saved["records"].as_array().ok_or("records")?;
    assert_eq!(records.len(), 2);
    assert_eq!(
        (records[1]["content_type"].as_str(), records[1]["status"].as_str()),
        (Some("tool_call"), Some("pending"))
    );

    let executing =
        status(&acme, "d", "call-1", json!({ "status": "executing", "display_text": "Checking" })).await?.json()?;
    assert_eq!(
        (executing["changed"].as_bool(), executing["card"]["metadata"]["display_text"].as_str()),
        (Some(true), Some("Checking"))
    );
    let repeat = status(&acme, "d", "call-1", json!({ "status": "executing" })).await?.json()?;
    assert_eq!(repeat["changed"], false);

    // A crash leaves the card executing; the restarted server's sweep interrupts it.
    server.restart().await?;
    let acme = server.acme();
    let page = acme.get("/v1/conversations/d/display?limit=1").await?.json()?;
    assert_eq!(page["next_after"], 1);
    let rest = acme.get("/v1/conversations/d/display?after=1").await?.json()?;
    assert_eq!(rest["records"][0]["status"], "interrupted");
    let resolved =
        acme.post("/v1/conversations/d/display/tools/call-1/result", &json!({ "content": "18°C" })).await?.json()?;
    assert_eq!((resolved["changed"].as_bool(), resolved["card"]["status"].as_str()), (Some(true), Some("completed")));
    let again =
        acme.post("/v1/conversations/d/display/tools/call-1/result", &json!({ "content": "18°C" })).await?.json()?;
    assert_eq!(again["changed"], false);
    let forbidden = status(&acme, "d", "call-1", json!({ "status": "executing" })).await?;
    assert_eq!((forbidden.status, forbidden.code().as_str()), (409, "invalid_transition"));
    assert_eq!(forbidden.json()?["error"]["details"], json!({ "from": "completed", "to": "executing" }));

    let note = synthetic(&acme, "d", "cancelled").await?;
    assert_eq!((note["seq"].as_u64(), note["message_type"].as_str()), (Some(3), Some("system")));
    // Restore an exported record as is: its scope and seq are not the caller's to choose.
    let mut exported = note.clone();
    exported["scope"] = json!({ "tenant": "beta", "user": "mallory" });
    let restored = acme.post("/v1/conversations/e/display/restore", &json!({ "records": [exported] })).await?.json()?;
    assert_eq!(restored["records"][0]["scope"], json!({ "tenant": "acme", "user": "" }));
    assert_eq!(
        (restored["records"][0]["seq"].as_u64(), restored["records"][0]["conversation_id"].as_str()),
        (Some(1), Some("e"))
    );
    assert_eq!(server.beta().get("/v1/conversations/e/display").await?.json()?["records"], json!([]));
    server.stop().await
}

#[tokio::test]
async fn streams_deliver_in_order_and_resume_with_exactly_the_missed_events() -> Result<()> {
    let mut server = TestServer::start(|_| {}).await?;
    let acme = server.acme();
    let mut scope_stream = acme.events("/v1/events", None).await?;
    let mut beta_stream = server.beta().events("/v1/events", None).await?;
    let mut stream = acme.events("/v1/conversations/c1/events", None).await?;

    save_assistant(&acme, "c1").await?;
    status(&acme, "c1", "call-1", json!({ "status": "executing" })).await?;
    let first = stream.take(3).await?;
    let names: Vec<&str> = first.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(names, ["display_message_saved", "display_message_saved", "display_message_updated"]);
    assert_eq!(record_of(&first[2])?["status"], "executing");
    let last_seen = first[2].id.clone();
    drop(stream);

    // While disconnected: two changes in c1, one in c2.
    synthetic(&acme, "c1", "missed 1").await?;
    synthetic(&acme, "c2", "elsewhere").await?;
    status(&acme, "c1", "call-1", json!({ "status": "completed", "result": "18°C" })).await?;

    let mut resumed = acme.events("/v1/conversations/c1/events", Some(&last_seen)).await?;
    let missed = resumed.take(2).await?;
    assert_eq!(record_of(&missed[0])?["content"]["text"], "missed 1");
    assert_eq!(record_of(&missed[1])?["status"], "completed");
    // Exactly those: the next event is the next change, nothing replayed twice.
    synthetic(&acme, "c1", "live").await?;
    let live = resumed.take(1).await?;
    assert_eq!(record_of(&live[0])?["content"]["text"], "live");

    // The scope stream saw all 7, ids contiguous.
    let all = scope_stream.take(7).await?;
    let counters: Vec<u64> =
        all.iter().filter_map(|e| e.id.rsplit_once('-').and_then(|(_, n)| n.parse().ok())).collect();
    assert_eq!(counters, (counters[0]..counters[0] + 7).collect::<Vec<u64>>(), "{all:?}");
    let conversations: Vec<String> =
        all.iter().filter_map(|e| record_of(e).ok()?["conversation_id"].as_str().map(str::to_owned)).collect();
    assert_eq!(conversations, ["c1", "c1", "c1", "c1", "c2", "c1", "c1"]);

    // Another tenant saw none of it: its first event is its own.
    synthetic(&server.beta(), "b1", "beta's").await?;
    let theirs = beta_stream.take(1).await?;
    assert_eq!(record_of(&theirs[0])?["scope"]["tenant"], "beta");
    drop((scope_stream, beta_stream, resumed));
    server.stop().await
}

#[tokio::test]
async fn a_resume_the_buffer_cannot_serve_is_told_events_lost() -> Result<()> {
    let mut server = TestServer::start(|c| c.events.replay_events = 2).await?;
    let acme = server.acme();
    let mut stream = acme.events("/v1/events", None).await?;
    synthetic(&acme, "c", "seen").await?;
    let seen = stream.take(1).await?.remove(0).id;
    drop(stream);
    for n in 0..4 {
        synthetic(&acme, "c", &format!("overrun {n}")).await?;
    }
    let mut resumed = acme.events("/v1/events", Some(&seen)).await?;
    let notice = resumed.take(1).await?.remove(0);
    assert_eq!(notice.event, "events_lost");
    assert_eq!(
        (notice.json()?["code"].as_str(), notice.json()?["last_event_id"].as_str()),
        (Some("events_lost"), Some(seen.as_str()))
    );
    synthetic(&acme, "c", "after the notice").await?;
    assert_eq!(record_of(&resumed.take(1).await?[0])?["content"]["text"], "after the notice");
    drop(resumed);

    // An id of another epoch (another server run) is a loss too, never a silent skip.
    let mut foreign = acme.events("/v1/events?last_event_id=00000000deadbeef-3", None).await?;
    assert_eq!(foreign.take(1).await?[0].event, "events_lost");
    drop(foreign);
    let before_restart = notice.id;
    server.restart().await?;
    let mut after_restart = server.acme().events("/v1/events", Some(&before_restart)).await?;
    assert_eq!(after_restart.take(1).await?[0].event, "events_lost");
    drop(after_restart);
    server.stop().await
}

#[tokio::test]
async fn shutdown_ends_open_streams() -> Result<()> {
    let mut server = TestServer::start(|_| {}).await?;
    let mut stream = server.acme().events("/v1/events", None).await?;
    server.stop().await?;
    assert!(stream.next().await?.is_none(), "the stream ended instead of holding shutdown up");
    Ok(())
}
