//! The message history of one conversation.
//!
//! - `POST …/messages` append (atomic batch; `create_if_missing` creates the
//!   conversation with `meta`; idempotent by message id, and by
//!   `Idempotency-Key` for messages without one — see [`crate::idempotency`]).
//! - `PUT …/messages` replace the whole history (renumbered from 1).
//! - `GET …/messages` one page: `limit` (default 50) and at most one of
//!   `after`/`before` (a seq) or `cursor`; newest first by default; `orphans=
//!   keep|strip|synthesize` for tool calls without a result (a view: storage is
//!   not changed).
//! - `GET …/messages/all` the whole history, oldest first.
//! - `DELETE …/messages?after=SEQ` truncate after a seq (`after=0` empties it).
//! - `POST …/messages/pop` remove and return the newest message. Not idempotent:
//!   a retry pops another one.
//!
//! Bodies and answers carrying messages take `?format=`, answers also `?mode=`
//! ([`crate::format`]).

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use stowage::interchange::Mode;
use stowage::{AppendOutcome, LoadFrom, LoadRequest, NewMessage, OrphanPolicy, RepairReport, TruncateOutcome};

use super::conversations::MetaBody;
use super::{Table, Verb};
use crate::auth::Caller;
use crate::errors::{ApiError, Code};
use crate::extract::{ApiPath, ApiQuery, JsonBody};
use crate::format::{self, DroppedItem, WireFormat};
use crate::idempotency;
use crate::state::AppState;

/// Default page size of a load.
pub const DEFAULT_LOAD_LIMIT: u32 = 50;

pub fn routes(table: Table) -> Table {
    let path = "/v1/conversations/{conversation}/messages";
    table
        .add(Verb::Post, path, append)
        .add(Verb::Put, path, replace)
        .add(Verb::Get, path, load)
        .add(Verb::Delete, path, truncate)
        .add(Verb::Get, "/v1/conversations/{conversation}/messages/all", load_all)
        .add(Verb::Post, "/v1/conversations/{conversation}/messages/pop", pop)
}

/// `?format=` of routes that take messages.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormatQuery {
    pub format: Option<String>,
}

/// `?format=&mode=` of routes that answer with messages.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadQuery {
    pub format: Option<String>,
    pub mode: Option<String>,
}

impl ReadQuery {
    fn parse(&self) -> Result<(WireFormat, Mode), ApiError> {
        let format = WireFormat::parse(self.format.as_deref())?;
        Ok((format, format::parse_mode(self.mode.as_deref(), format)?))
    }
}

/// The body of an append.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppendBody {
    /// Messages in `?format=`.
    pub messages: Vec<Box<RawValue>>,
    /// Fail with 409 `conflict` unless the conversation is at this version.
    #[serde(default)]
    pub expected_version: Option<u64>,
    /// Create the conversation (with `meta`) if it does not exist.
    #[serde(default)]
    pub create_if_missing: bool,
    #[serde(default)]
    pub meta: Option<MetaBody>,
}

/// The body of a replace.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplaceBody {
    pub messages: Vec<Box<RawValue>>,
    #[serde(default)]
    pub expected_version: Option<u64>,
}

/// Decodes the request's messages and applies its `Idempotency-Key`.
pub fn incoming(
    format: WireFormat,
    items: &[Box<RawValue>],
    headers: &HeaderMap,
    scope: &stowage::Scope,
    conversation: &str,
) -> Result<Vec<NewMessage>, ApiError> {
    let mut messages = format::decode(format, items)?;
    if let Some(key) = idempotency::key(headers)? {
        idempotency::assign_ids(scope, conversation, &key, &mut messages);
    }
    Ok(messages)
}

async fn append(
    State(state): State<AppState>,
    Caller(scope): Caller,
    ApiPath(conversation): ApiPath<String>,
    ApiQuery(query): ApiQuery<FormatQuery>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<AppendBody>,
) -> Result<Json<AppendOutcome>, ApiError> {
    let format = WireFormat::parse(query.format.as_deref())?;
    let messages = incoming(format, &body.messages, &headers, &scope, &conversation)?;
    let store = state.store();
    let outcome = if body.create_if_missing {
        if body.expected_version.is_some() {
            return Err(ApiError::new(Code::InvalidInput, "create_if_missing and expected_version exclude each other"));
        }
        let call = store.append_creating(&scope, &conversation, body.meta.unwrap_or_default().into(), messages);
        state.metrics().store_call("append_creating", call).await?
    } else {
        if body.meta.is_some() {
            return Err(ApiError::new(Code::InvalidInput, "meta is only used with create_if_missing"));
        }
        let call = store.append(&scope, &conversation, messages, body.expected_version);
        state.metrics().store_call("append", call).await?
    };
    Ok(Json(outcome))
}

/// The answer of a replace.
#[derive(Debug, Serialize, Deserialize)]
pub struct Replaced {
    pub version: u64,
}

async fn replace(
    State(state): State<AppState>,
    Caller(scope): Caller,
    ApiPath(conversation): ApiPath<String>,
    ApiQuery(query): ApiQuery<FormatQuery>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<ReplaceBody>,
) -> Result<Json<Replaced>, ApiError> {
    let format = WireFormat::parse(query.format.as_deref())?;
    let messages = incoming(format, &body.messages, &headers, &scope, &conversation)?;
    let call = state.store().replace(&scope, &conversation, messages, body.expected_version);
    let version = state.metrics().store_call("replace", call).await?;
    Ok(Json(Replaced { version }))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadQuery {
    pub limit: Option<u32>,
    pub after: Option<u64>,
    pub before: Option<u64>,
    pub cursor: Option<String>,
    pub orphans: Option<String>,
    pub format: Option<String>,
    pub mode: Option<String>,
}

impl LoadQuery {
    fn request(self) -> Result<LoadRequest, ApiError> {
        let from = match (self.after, self.before, self.cursor) {
            (None, None, None) => LoadFrom::Latest,
            (Some(seq), None, None) => LoadFrom::After(seq),
            (None, Some(seq), None) => LoadFrom::Before(seq),
            (None, None, Some(cursor)) => LoadFrom::Cursor(cursor),
            _ => return Err(ApiError::new(Code::InvalidInput, "give at most one of after, before and cursor")),
        };
        let orphans = match self.orphans.as_deref() {
            None | Some("keep") => OrphanPolicy::Keep,
            Some("strip") => OrphanPolicy::Strip,
            Some("synthesize") => OrphanPolicy::SynthesizeInterrupted,
            Some(_) => return Err(ApiError::new(Code::InvalidInput, "orphans must be keep, strip or synthesize")),
        };
        Ok(LoadRequest::new(from, self.limit.unwrap_or(DEFAULT_LOAD_LIMIT)).with_orphans(orphans))
    }
}

/// One page, its messages in the requested format.
#[derive(Debug, Serialize)]
pub struct PageBody {
    pub messages: Vec<Box<RawValue>>,
    pub next_cursor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repairs: Option<RepairReport>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unverified: Vec<u64>,
    /// What `mode=pure` left out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<DroppedItem>,
}

async fn load(
    State(state): State<AppState>,
    Caller(scope): Caller,
    ApiPath(conversation): ApiPath<String>,
    ApiQuery(mut query): ApiQuery<LoadQuery>,
) -> Result<Json<PageBody>, ApiError> {
    let read = ReadQuery { format: query.format.take(), mode: query.mode.take() };
    let (format, mode) = read.parse()?;
    let request = query.request()?;
    let page = state.metrics().store_call("load", state.store().load(&scope, &conversation, request)).await?;
    let (messages, dropped) = format::encode(format, mode, &page.messages)?;
    Ok(Json(PageBody {
        messages,
        next_cursor: page.next_cursor,
        repairs: page.repairs,
        unverified: page.unverified,
        dropped,
    }))
}

/// Messages in the requested format.
#[derive(Debug, Serialize)]
pub struct MessagesBody {
    pub messages: Vec<Box<RawValue>>,
    /// What `mode=pure` left out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<DroppedItem>,
}

async fn load_all(
    State(state): State<AppState>,
    Caller(scope): Caller,
    ApiPath(conversation): ApiPath<String>,
    ApiQuery(query): ApiQuery<ReadQuery>,
) -> Result<Json<MessagesBody>, ApiError> {
    let (format, mode) = query.parse()?;
    let messages = state.metrics().store_call("load_all", state.store().load_all(&scope, &conversation)).await?;
    let (messages, dropped) = format::encode(format, mode, &messages)?;
    Ok(Json(MessagesBody { messages, dropped }))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TruncateQuery {
    pub after: Option<u64>,
    pub expected_version: Option<u64>,
}

async fn truncate(
    State(state): State<AppState>,
    Caller(scope): Caller,
    ApiPath(conversation): ApiPath<String>,
    ApiQuery(query): ApiQuery<TruncateQuery>,
) -> Result<Json<TruncateOutcome>, ApiError> {
    let after = query.after.ok_or_else(|| {
        ApiError::new(Code::InvalidInput, "`after` (a seq) is required; `after=0` removes every message")
    })?;
    let call = state.store().truncate_after(&scope, &conversation, after, query.expected_version);
    state.metrics().store_call("truncate_after", call).await.map(Json)
}

async fn pop(
    State(state): State<AppState>,
    Caller(scope): Caller,
    ApiPath(conversation): ApiPath<String>,
    ApiQuery(query): ApiQuery<ReadQuery>,
) -> Result<Json<MessagesBody>, ApiError> {
    let (format, mode) = query.parse()?;
    let popped = state.metrics().store_call("pop_last", state.store().pop_last(&scope, &conversation)).await?;
    let popped: Vec<stowage::Message> = popped.into_iter().collect();
    let (messages, dropped) = format::encode(format, mode, &popped)?;
    Ok(Json(MessagesBody { messages, dropped }))
}
