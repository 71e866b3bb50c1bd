//! Authentication, tenant isolation, error codes and limits, end to end over
//! loopback.

mod support;

use std::time::Duration;

use serde_json::json;
use support::{Result, TestServer, text};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[tokio::test]
async fn missing_or_wrong_tokens_are_401_and_other_tenants_look_missing() -> Result<()> {
    let mut server = TestServer::start(|_| {}).await?;
    let acme = server.acme();
    let beta = server.beta();
    let body = json!({ "messages": [text("user", "hi", Some("m1"))], "create_if_missing": true });
    assert_eq!(acme.post("/v1/conversations/secret/messages", &body).await?.status, 200);

    for client in [server.anonymous(), support::Client::new(server.addr, Some("acme-token-WRONG-0123456789"))] {
        let reply = client.get("/v1/conversations/secret").await?;
        assert_eq!((reply.status, reply.code().as_str()), (401, "unauthorized"));
        assert_eq!(reply.header("www-authenticate").as_deref(), Some("Bearer"));
    }
    let raw = server.anonymous().send("GET", "/v1/conversations", &[("authorization", "Basic YWNtZQ==")], None).await?;
    assert_eq!(raw.status, 401);

    // Another tenant's conversation answers exactly like a missing one.
    let theirs = beta.get("/v1/conversations/secret").await?;
    let missing = beta.get("/v1/conversations/never-was").await?;
    assert_eq!((theirs.status, theirs.code().as_str()), (404, "not_found"));
    assert_eq!(theirs.body, missing.body, "the bodies do not tell the two apart");
    for path in ["/v1/conversations/secret/messages", "/v1/conversations/secret/messages/all"] {
        assert_eq!(beta.get(path).await?.status, 404, "{path}");
    }
    let append = json!({ "messages": [text("user", "intrusion", None)] });
    assert_eq!(beta.post("/v1/conversations/secret/messages", &append).await?.status, 404);
    assert_eq!(beta.delete("/v1/conversations/secret").await?.json()?, json!({ "deleted": false }));
    assert_eq!(beta.get("/v1/conversations").await?.json()?["conversations"], json!([]));
    // The same holds between users of one tenant.
    assert_eq!(acme.clone().user("bob").get("/v1/conversations/secret").await?.status, 404);
    // And the owner still has it, untouched.
    let info = acme.get("/v1/conversations/secret").await?.json()?;
    assert_eq!((info["message_count"].as_u64(), info["scope"]["tenant"].as_str()), (Some(1), Some("acme")));
    server.stop().await
}

/// Method, path, extra headers, body, expected status and code.
type Case<'a> = (&'a str, String, Vec<(&'a str, &'a str)>, Option<Vec<u8>>, u16, &'a str);

#[tokio::test]
async fn errors_carry_stable_codes_and_bad_input_is_never_a_500() -> Result<()> {
    let mut server = TestServer::start(|_| {}).await?;
    let acme = server.acme();
    let create = json!({ "messages": [text("user", "hi", Some("m1"))], "create_if_missing": true });
    assert_eq!(acme.post("/v1/conversations/c/messages", &create).await?.status, 200);

    let json_body = |text: &str| Some(text.as_bytes().to_vec());
    let cases: Vec<Case> = vec![
        ("POST", "/v1/conversations/c/messages".into(), vec![], json_body("{not json"), 400, "invalid_json"),
        (
            "POST",
            "/v1/conversations/c/messages".into(),
            vec![],
            json_body(r#"{"messages":[{"role":"robot"}]}"#),
            400,
            "invalid_json",
        ),
        (
            "POST",
            "/v1/conversations/c/messages".into(),
            vec![],
            json_body(r#"{"messages":[],"typo":1}"#),
            400,
            "invalid_json",
        ),
        (
            "POST",
            "/v1/conversations/c/messages".into(),
            vec![],
            json_body(
                r#"{"messages":[{"role":"assistant","parts":[{"type":"tool_call","id":"","name":"f","arguments":"{}"}]}]}"#,
            ),
            400,
            "invalid_input",
        ),
        (
            "POST",
            "/v1/conversations/c/messages".into(),
            vec![("content-type", "text/plain")],
            None,
            415,
            "unsupported_media_type",
        ),
        (
            "POST",
            "/v1/conversations/c/messages".into(),
            vec![],
            json_body(r#"{"messages":[],"expected_version":99}"#),
            200,
            "",
        ),
        (
            "POST",
            "/v1/conversations/c/messages".into(),
            vec![],
            json_body(r#"{"messages":[{"role":"user"}],"expected_version":99}"#),
            409,
            "conflict",
        ),
        (
            "POST",
            "/v1/conversations/c/messages".into(),
            vec![("idempotency-key", "has space")],
            json_body(r#"{"messages":[]}"#),
            400,
            "invalid_idempotency_key",
        ),
        ("GET", "/v1/conversations/c/messages?cursor=garbage".into(), vec![], None, 400, "invalid_cursor"),
        ("GET", "/v1/conversations/c/messages?limit=0".into(), vec![], None, 400, "invalid_input"),
        ("GET", "/v1/conversations/c/messages?limit=1000000".into(), vec![], None, 400, "invalid_input"),
        ("GET", "/v1/conversations/c/messages?limit=-1".into(), vec![], None, 400, "invalid_input"),
        ("GET", "/v1/conversations/c/messages?after=1&before=3".into(), vec![], None, 400, "invalid_input"),
        ("GET", "/v1/conversations/c/messages?orphans=maybe".into(), vec![], None, 400, "invalid_input"),
        ("GET", "/v1/conversations/c/messages?bogus=1".into(), vec![], None, 400, "invalid_input"),
        ("GET", "/v1/conversations/c/messages?format=yaml".into(), vec![], None, 400, "unsupported_format"),
        ("DELETE", "/v1/conversations/c/messages".into(), vec![], None, 400, "invalid_input"),
        ("GET", "/v1/conversations/bad%00id".into(), vec![], None, 400, "invalid_input"),
        ("GET", "/v1/conversations/bad%FFid".into(), vec![], None, 400, "invalid_input"),
        ("GET", format!("/v1/conversations/{}", "x".repeat(600)), vec![], None, 400, "invalid_input"),
        ("GET", "/v1/conversations/c".into(), vec![("stowage-user", "a\tb")], None, 400, "invalid_input"),
        (
            "GET",
            "/v1/conversations/c/events".into(),
            vec![("last-event-id", "nonsense")],
            None,
            400,
            "invalid_last_event_id",
        ),
        (
            "POST",
            "/v1/conversations/c/display/tools/nope/status".into(),
            vec![],
            json_body(r#"{"status":"executing"}"#),
            404,
            "not_found",
        ),
        (
            "POST",
            "/v1/conversations/c/display/tools/x/status".into(),
            vec![],
            json_body(r#"{"status":"done"}"#),
            400,
            "invalid_json",
        ),
        (
            "POST",
            "/v1/conversations/c/display/synthetic".into(),
            vec![],
            json_body(r#"{"message_type":"","content_type":"x","content":1}"#),
            400,
            "invalid_input",
        ),
        (
            "POST",
            "/v1/conversations/c/display/synthetic".into(),
            vec![],
            json_body(r#"{"message_type":"s","content_type":"x","content":1,"metadata":[1]}"#),
            400,
            "invalid_input",
        ),
        ("GET", "/v1/conversations/c/display?limit=0".into(), vec![], None, 400, "invalid_input"),
        ("GET", "/v1/nowhere".into(), vec![], None, 404, "no_route"),
        ("PATCH", "/v1/conversations/c/messages".into(), vec![], None, 405, "method_not_allowed"),
    ];
    for (method, path, headers, body, status, code) in cases {
        let reply = acme.send(method, &path, &headers, body).await?;
        assert_eq!((reply.status, reply.code().as_str()), (status, code), "{method} {path}: {}", reply.text());
        if status >= 400 {
            let error = &reply.json()?["error"];
            assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()), "{method} {path} has a message");
            assert_eq!(reply.header("content-type").as_deref(), Some("application/json"));
        }
    }
    let conflict = acme
        .post("/v1/conversations/c/messages", &json!({"messages":[text("user","x",None)],"expected_version":7}))
        .await?;
    assert_eq!(conflict.json()?["error"]["details"], json!({ "expected": 7, "actual": 1 }));
    server.stop().await
}

async fn raw_request(addr: std::net::SocketAddr, head: &str, body: &[u8]) -> Result<(TcpStream, String)> {
    let mut stream = TcpStream::connect(addr).await?;
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    let mut reply = vec![0u8; 4096];
    let n = tokio::time::timeout(support::http::GUARD, stream.read(&mut reply)).await??;
    Ok((stream, String::from_utf8_lossy(&reply[..n]).into_owned()))
}

#[tokio::test]
async fn bodies_over_the_cap_are_413_declared_or_chunked() -> Result<()> {
    let mut server = TestServer::start(|c| c.limits.max_body_bytes = 1024).await?;
    let acme = server.acme();
    let big = json!({ "messages": [text("user", &"x".repeat(4096), None)], "create_if_missing": true });
    let reply = acme.post("/v1/conversations/big/messages", &big).await?;
    assert_eq!((reply.status, reply.code().as_str()), (413, "payload_too_large"));
    // Chunked, so no Content-Length to refuse it by: refused while reading.
    let chunk = "x".repeat(3000);
    let head = format!(
        "POST /v1/conversations/big/messages HTTP/1.1\r\nhost: t\r\nauthorization: Bearer {}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n",
        support::TOKEN_ACME
    );
    let body = format!("{:x}\r\n{chunk}\r\n0\r\n\r\n", chunk.len());
    let (_stream, reply) = raw_request(server.addr, &head, body.as_bytes()).await?;
    assert!(reply.starts_with("HTTP/1.1 413"), "{reply}");
    assert!(reply.contains("payload_too_large"), "{reply}");
    assert_eq!(acme.get("/v1/conversations/big").await?.status, 404, "nothing was stored");
    server.stop().await
}

/// Starts a request whose body never completes: it holds a concurrency permit
/// (the handler is reading its body) until the connection closes.
async fn stalled_request(addr: std::net::SocketAddr) -> Result<TcpStream> {
    let mut stream = TcpStream::connect(addr).await?;
    let head = format!(
        "POST /v1/conversations/slow/messages HTTP/1.1\r\nhost: t\r\nauthorization: Bearer {}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{{\"messages\":",
        support::TOKEN_ACME
    );
    stream.write_all(head.as_bytes()).await?;
    Ok(stream)
}

#[tokio::test]
async fn a_tenant_over_its_concurrency_cap_gets_429_and_others_are_served() -> Result<()> {
    let mut server = TestServer::start(|c| c.limits.tenant_concurrency = 1).await?;
    // The stalled request takes the permit as soon as the server reads its head.
    let stalled = support::http::stall_holding_the_permit(&server.acme(), || stalled_request(server.addr)).await?;
    let refused = server.acme().get("/v1/conversations").await?;
    assert_eq!(refused.status, 429, "{}", refused.text());
    assert_eq!(refused.code(), "too_many_requests");
    assert_eq!(refused.header("retry-after").as_deref(), Some("1"));
    assert_eq!(server.beta().get("/v1/conversations").await?.status, 200, "beta has its own cap");
    drop(stalled);
    let mut served = false;
    for _ in 0..500 {
        if server.acme().get("/v1/conversations").await?.status == 200 {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(served, "the permit comes back when the stalled request ends");
    server.stop().await
}

#[tokio::test]
async fn a_handler_past_the_request_timeout_answers_504() -> Result<()> {
    let mut server = TestServer::start(|c| c.limits.request_timeout = Duration::from_millis(200)).await?;
    let mut stalled = stalled_request(server.addr).await?;
    let mut reply = vec![0u8; 4096];
    let n = tokio::time::timeout(support::http::GUARD, stalled.read(&mut reply)).await??;
    let reply = String::from_utf8_lossy(&reply[..n]).into_owned();
    assert!(reply.starts_with("HTTP/1.1 504") && reply.contains("\"timeout\""), "{reply}");
    drop(stalled);
    server.stop().await
}

#[tokio::test]
async fn a_tenant_over_its_stream_cap_gets_429() -> Result<()> {
    let mut server = TestServer::start(|c| c.limits.tenant_streams = 1).await?;
    let first = server.acme().events("/v1/events", None).await?;
    let second = server.acme().get("/v1/events").await?;
    assert_eq!((second.status, second.code().as_str()), (429, "too_many_requests"));
    drop(first);
    server.stop().await
}
