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
