//! The checked-in OpenAPI document against the code: every route in the router
//! is documented and every documented operation is served (both from the route
//! table and by probing a live server), every example body decodes with the
//! type its handler uses, and every error code is listed.

mod support;

use std::collections::BTreeSet;

use serde_json::Value;
use stowage_server::errors::Code;
use stowage_server::openapi::{self, check_request_example, check_response_example, documented_routes};
use stowage_server::routes;
use support::{Result, TestServer};

const METHODS: [&str; 5] = ["GET", "PUT", "POST", "DELETE", "PATCH"];

#[test]
fn the_router_and_the_document_list_the_same_routes() -> Result<()> {
    let served: BTreeSet<(String, String)> =
        routes::table().iter().map(|r| (r.method.as_str().to_owned(), r.path.to_owned())).collect();
    let documented: BTreeSet<(String, String)> =
        documented_routes()?.into_iter().map(|(method, path, _)| (method, path)).collect();
    let undocumented: Vec<_> = served.difference(&documented).collect();
    let unserved: Vec<_> = documented.difference(&served).collect();
    assert!(undocumented.is_empty(), "served but not in openapi.json: {undocumented:?}");
    assert!(unserved.is_empty(), "in openapi.json but not served: {unserved:?}");
    assert_eq!(routes::table().len(), served.len(), "no route is registered twice");

    // Authentication as documented: `security: []` exactly on the open routes.
    let doc = openapi::document()?;
    for route in routes::table() {
        let operation = &doc["paths"][route.path][route.method.as_str().to_ascii_lowercase()];
        let open = operation.get("security").is_some_and(|s| s.as_array().is_some_and(Vec::is_empty));
        assert_eq!(open, !route.authenticated, "{} {}", route.method, route.path);
    }
    Ok(())
}

fn resolve<'a>(doc: &'a Value, value: &'a Value) -> Result<&'a Value> {
    match value.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let pointer = reference.strip_prefix('#').ok_or("only local $refs")?;
            doc.pointer(pointer).ok_or_else(|| format!("dangling $ref {reference}").into())
        }
        None => Ok(value),
    }
}

#[test]
fn every_example_decodes_with_its_handlers_types() -> Result<()> {
    let doc = openapi::document()?;
    let (mut requests, mut responses) = (0, 0);
    for (method, path, id) in documented_routes()? {
        let operation = &doc["paths"][path.as_str()][method.to_ascii_lowercase()];
        if let Some(body) = operation.get("requestBody") {
            let example =
                body["content"]["application/json"].get("example").ok_or(format!("{id}: no request example"))?;
            check_request_example(&id, &example.to_string()).map_err(|e| format!("{id} request example: {e}"))?;
            requests += 1;
        }
        let answers = operation["responses"].as_object().ok_or(format!("{id}: no responses"))?;
        for (status, answer) in answers {
            let answer = resolve(&doc, answer)?;
            if let Some(example) = answer["content"]["application/json"].get("example") {
                check_response_example(&id, status, &example.to_string())
                    .map_err(|e| format!("{id} {status} example: {e}"))?;
                responses += 1;
            }
        }
    }
    assert!(requests >= 8 && responses >= 40, "checked {requests} request and {responses} response examples");
    // A request the handler would refuse is refused by the check too.
    assert!(check_request_example("appendMessages", r#"{"messages":[{"role":"robot"}]}"#).is_err());
    assert!(check_request_example("appendMessages", r#"{"messages":[],"typo":true}"#).is_err());
    assert!(check_request_example("noSuchOperation", "{}").is_err());
    Ok(())
}

#[test]
fn every_error_code_is_documented() -> Result<()> {
    let doc = openapi::document()?;
    let listed: BTreeSet<&str> =
        doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"]
            .as_array()
            .ok_or("the Error schema lists its codes")?
            .iter()
            .filter_map(Value::as_str)
            .collect();
    let known: BTreeSet<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(listed, known);
    Ok(())
}

#[tokio::test]
async fn a_live_server_serves_exactly_the_documented_methods() -> Result<()> {
    let mut server = TestServer::start(|_| {}).await?;
    let acme = server.acme();
    let served = acme.get("/v1/openapi.json").await?;
    assert_eq!(served.text(), openapi::DOCUMENT);
    for (_, path, _) in documented_routes()? {
        let documented: BTreeSet<String> =
            documented_routes()?.into_iter().filter(|(_, p, _)| *p == path).map(|(m, _, _)| m).collect();
        let concrete = path.replace("{conversation}", "probe").replace("{call_id}", "call");
        for method in METHODS {
            if path.ends_with("/events") && method == "GET" {
                drop(acme.events(&concrete, None).await?);
                continue;
            }
            let body = matches!(method, "POST" | "PUT" | "PATCH").then(|| b"{}".to_vec());
            let reply = acme.send(method, &concrete, &[], body).await?;
            if documented.contains(method) {
                assert!(reply.status != 405 && reply.code() != "no_route", "{method} {path}: {}", reply.text());
            } else {
                assert_eq!((reply.status, reply.code().as_str()), (405, "method_not_allowed"), "{method} {path}");
            }
        }
    }
    server.stop().await
}

/// Every `limit` parameter states the bounds the store enforces.
#[test]
fn every_limit_parameter_has_its_bounds() -> Result<()> {
    let doc = openapi::document()?;
    let mut limits = 0;
    for (method, path, id) in documented_routes()? {
        let operation = &doc["paths"][path.as_str()][method.to_ascii_lowercase()];
        for parameter in operation["parameters"].as_array().into_iter().flatten() {
            let parameter = resolve(&doc, parameter)?;
            if parameter["name"] == "limit" {
                let schema = &parameter["schema"];
                assert_eq!((schema["minimum"].as_u64(), schema["maximum"].as_u64()), (Some(1), Some(1000)), "{id}");
                limits += 1;
            }
        }
    }
    assert_eq!(limits, 3, "listConversations, loadMessages and listDisplay page");
    Ok(())
}

/// One request of [`every_status_a_route_answers_is_documented`]: what it
/// probes, the query, headers and body.
struct Probe {
    what: &'static str,
    query: &'static str,
    headers: Vec<(&'static str, &'static str)>,
    body: Option<Vec<u8>>,
}

impl Probe {
    fn new(what: &'static str, query: &'static str, body: Option<Vec<u8>>) -> Self {
        Self { what, query, headers: Vec::new(), body }
    }

    fn header(mut self, name: &'static str, value: &'static str) -> Self {
        self.headers.push((name, value));
        self
    }
}

/// The probes of one operation: its documented example as is, and the
/// mistakes a client can make with it.
fn probes(operation: &Value) -> Vec<Probe> {
    let example = operation["requestBody"]["content"]["application/json"].get("example");
    let body = example.map(|e| e.to_string().into_bytes());
    let mut probes = vec![
        Probe::new("as documented", "", body.clone()),
        Probe::new("bad user", "", body.clone()).header("stowage-user", "a\tb"),
        Probe::new("unknown query parameter", "?bogus=1", body.clone()),
    ];
    let parameters = operation["parameters"].as_array().into_iter().flatten();
    if parameters.clone().any(|p| p["name"] == "limit") {
        probes.push(Probe::new("limit 0", "?limit=0", body.clone()));
        probes.push(Probe::new("limit over the maximum", "?limit=1001", body.clone()));
    }
    if parameters.clone().any(|p| p["$ref"] == "#/components/parameters/Format") {
        probes.push(Probe::new("unknown format", "?format=xml", body.clone()));
    }
    if parameters.clone().any(|p| p["$ref"] == "#/components/parameters/Mode") {
        probes.push(Probe::new("pure stowage", "?mode=pure", body.clone()));
    }
    if body.is_some() {
        probes.push(Probe::new("not JSON", "", Some(b"{not json".to_vec())));
        probes.push(Probe::new("unknown member", "", Some(br#"{"bogus":1}"#.to_vec())));
        probes.push(Probe::new("no body", "", None));
        probes.push(Probe::new("text/plain", "", Some(b"x".to_vec())).header("content-type", "text/plain"));
        probes.push(Probe::new("too large", "", Some(vec![b' '; 8192])));
    }
    probes
}

/// Probes every operation (but the event streams) the ways a client can get it
/// wrong — on a conversation with a tool pair, a missing one and an invalid id
/// — and requires every status it answers with to be documented.
#[tokio::test]
async fn every_status_a_route_answers_is_documented() -> Result<()> {
    let mut server = TestServer::start(|c| c.limits.max_body_bytes = 4096).await?;
    let acme = server.acme();
    let doc = openapi::document()?;
    let fixture = serde_json::json!({
        "create_if_missing": true,
        "messages": [
            { "role": "user", "parts": [{ "type": "text", "text": "weather?" }] },
            { "role": "assistant", "parts": [{ "type": "tool_call", "id": "call-1", "name": "weather", "arguments": "{}" }] },
            { "role": "tool", "parts": [{ "type": "tool_result", "call_id": "call-1", "content": "sunny" }] },
        ],
    });
    let (mut undocumented, mut sent) = (Vec::new(), 0);
    for (n, (method, path, id)) in documented_routes()?.into_iter().enumerate() {
        if path.ends_with("/events") {
            continue;
        }
        let operation = &doc["paths"][path.as_str()][method.to_ascii_lowercase()];
        let documented: BTreeSet<String> =
            operation["responses"].as_object().ok_or(format!("{id}: no responses"))?.keys().cloned().collect();
        // A fresh conversation per operation: earlier probes (delete, pop) do not interfere.
        let existing = format!("probe-{n}");
        let reply = acme.post(&format!("/v1/conversations/{existing}/messages"), &fixture).await?;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let display = serde_json::json!({ "message": fixture["messages"][1] });
        let reply = acme.post(&format!("/v1/conversations/{existing}/display/messages"), &display).await?;
        assert_eq!(reply.status, 200, "{}", reply.text());
        for conversation in [existing.as_str(), "missing", "bad%00id"] {
            let concrete = path.replace("{conversation}", conversation).replace("{call_id}", "call-1");
            for probe in probes(operation) {
                let reply =
                    acme.send(&method, &format!("{concrete}{}", probe.query), &probe.headers, probe.body).await?;
                sent += 1;
                let status = reply.status.to_string();
                if !documented.contains(&status) {
                    undocumented.push(format!("{id} ({conversation}, {}): {status} {}", probe.what, reply.text()));
                }
            }
            if !path.contains("{conversation}") {
                break;
            }
        }
    }
    assert!(undocumented.is_empty(), "statuses answered but not documented:\n{}", undocumented.join("\n"));
    assert!(sent > 300, "{sent} probes");
    server.stop().await
}
