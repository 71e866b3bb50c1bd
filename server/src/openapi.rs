//! The OpenAPI 3.1 document (`server/openapi.json`, checked in, served at
//! `/v1/openapi.json`) and what the tests need to hold it to the code.
//!
//! - [`documented_routes`]: every (method, path) the document describes; the
//!   test compares it with [`crate::routes::table`] both ways.
//! - [`check_request_example`], [`check_response_example`]: run an example body
//!   through the exact decoding its handler uses (request) or the type its
//!   handler returns (response), by `operationId`. An operation the functions do
//!   not know is an error, so a new operation cannot skip the check.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::errors::Code;
use crate::extract::decode_json;
use crate::format::{self, WireFormat};
use crate::routes;

/// The document, as served.
pub const DOCUMENT: &str = include_str!("../openapi.json");

const METHODS: [&str; 5] = ["get", "put", "post", "delete", "patch"];

/// The parsed document.
pub fn document() -> Result<Value, String> {
    serde_json::from_str(DOCUMENT).map_err(|e| format!("openapi.json is not JSON: {e}"))
}

/// Every operation: (upper-case method, path, operationId).
pub fn documented_routes() -> Result<Vec<(String, String, String)>, String> {
    let doc = document()?;
    let paths = doc.get("paths").and_then(Value::as_object).ok_or("openapi.json has no paths")?;
    let mut out = Vec::new();
    for (path, item) in paths {
        let item = item.as_object().ok_or_else(|| format!("{path} is not an object"))?;
        for (key, operation) in item {
            if !METHODS.contains(&key.as_str()) {
                continue;
            }
            let id = operation
                .get("operationId")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("{key} {path} has no operationId"))?;
            out.push((key.to_ascii_uppercase(), path.clone(), id.to_owned()));
        }
    }
    Ok(out)
}

fn typed<T: DeserializeOwned>(example: &str) -> Result<(), String> {
    decode_json::<T>(example.as_bytes()).map(|_| ()).map_err(|e| e.message)
}

/// Decodes a request example as the handler of `operation` does.
pub fn check_request_example(operation: &str, example: &str) -> Result<(), String> {
    use routes::{conversations as c, display as d, messages as m};
    let messages = |items: &[Box<serde_json::value::RawValue>]| {
        format::decode(WireFormat::STOWAGE, items).map(|_| ()).map_err(|e| e.message)
    };
    match operation {
        "openConversation" => typed::<c::MetaBody>(example),
        "updateConversation" => typed::<c::PatchBody>(example),
        "appendMessages" => {
            messages(&decode_json::<m::AppendBody>(example.as_bytes()).map_err(|e| e.message)?.messages)
        }
        "replaceMessages" => {
            messages(&decode_json::<m::ReplaceBody>(example.as_bytes()).map_err(|e| e.message)?.messages)
        }
        "saveDisplayMessage" => {
            let body = decode_json::<d::SaveMessageBody>(example.as_bytes()).map_err(|e| e.message)?;
            messages(std::slice::from_ref(&body.message))
        }
        "saveSyntheticMessage" => typed::<d::SyntheticBody>(example),
        "restoreDisplay" => typed::<d::RestoreBody>(example),
        "updateToolStatus" => typed::<d::StatusBody>(example),
        "resolveToolResult" => typed::<d::ResolveBody>(example),
        other => Err(format!("no request type known for operation `{other}`")),
    }
}

/// The error envelope every non-2xx JSON answer uses.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ErrorEnvelope {
    error: ErrorBody,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ErrorBody {
    code: String,
    #[allow(dead_code)]
    message: String,
    #[serde(default)]
    #[allow(dead_code)]
    details: Option<Value>,
}

/// Checks a response example against the type `operation` answers `status` with.
pub fn check_response_example(operation: &str, status: &str, example: &str) -> Result<(), String> {
    use routes::{conversations as c, display as d, messages as m};
    if !status.starts_with('2') {
        let envelope = decode_json::<ErrorEnvelope>(example.as_bytes()).map_err(|e| e.message)?;
        return match Code::ALL.iter().find(|c| c.as_str() == envelope.error.code) {
            Some(code) if code.status().as_str() == status => Ok(()),
            Some(code) => Err(format!("code {} is sent with {}, not {status}", envelope.error.code, code.status())),
            None => Err(format!("unknown error code `{}`", envelope.error.code)),
        };
    }
    match operation {
        "listConversations" => typed::<stowage::ConversationPage>(example),
        "openConversation" | "getConversation" | "updateConversation" => typed::<stowage::ConversationInfo>(example),
        "deleteConversation" => typed::<c::Deleted>(example),
        "appendMessages" => typed::<stowage::AppendOutcome>(example),
        "replaceMessages" => typed::<m::Replaced>(example),
        // In the default format a page is exactly the store's `Page`.
        "loadMessages" => typed::<stowage::Page>(example),
        "loadAllMessages" | "popMessage" => typed::<StowageMessages>(example),
        "truncateMessages" => typed::<stowage::TruncateOutcome>(example),
        "listDisplay" => typed::<stowage::DisplayPage>(example),
        "saveDisplayMessage" | "restoreDisplay" => typed::<d::Records>(example),
        "saveSyntheticMessage" => typed::<stowage::DisplayRecord>(example),
        "updateToolStatus" | "resolveToolResult" => typed::<stowage::ToolUpdate>(example),
        "healthz" => typed::<Value>(example),
        other => Err(format!("no response type known for operation `{other}`")),
    }
}

/// `{"messages": [...]}` in the default format.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StowageMessages {
    #[allow(dead_code)]
    messages: Vec<stowage::Message>,
}
