//! `/healthz` and `/metrics`: open, and counting what the API did.

mod support;

use serde_json::json;
use support::{Result, TestServer, text};

#[tokio::test]
async fn health_and_metrics_are_open_and_count_operations() -> Result<()> {
    let mut server = TestServer::start(|_| {}).await?;
    let open = server.anonymous();
    let health = open.get("/healthz").await?;
    assert_eq!(health.status, 200);
    let health = health.json()?;
    assert_eq!((health["status"].as_str(), health["adapter"]["status"].as_str()), (Some("ok"), Some("healthy")));

    let acme = server.acme();
    let body = json!({ "messages": [text("user", "hi", Some("m1"))], "create_if_missing": true });
    assert_eq!(acme.post("/v1/conversations/m/messages", &body).await?.status, 200);
    assert_eq!(acme.get("/v1/conversations/missing").await?.status, 404);

    let metrics = open.get("/metrics").await?;
    assert_eq!(metrics.status, 200);
    assert!(metrics.header("content-type").is_some_and(|t| t.starts_with("application/openmetrics-text")));
    let text = metrics.text();
    for expected in [
        "stowage_store_calls_total{store=\"sqlite\",operation=\"append_creating\"} 1",
        "stowage_store_errors_total{store=\"sqlite\",operation=\"info\",code=\"not_found\"} 1",
        "stowage_store_call_duration_seconds_count{store=\"sqlite\",operation=\"append_creating\"} 1",
        "stowage_http_requests_total{route=\"/v1/conversations/{conversation}/messages\",method=\"POST\",status=\"200\"} 1",
        "stowage_adapter_status{store=\"sqlite\"} 0",
        "stowage_adapter_calls_total{store=\"sqlite\"}",
        "# EOF",
    ] {
        assert!(text.contains(expected), "missing `{expected}` in:\n{text}");
    }
    assert!(!text.contains("acme"), "tenants are never labels");
    server.stop().await
}
