//! Display persistence of one conversation (Sagents' `DisplayMessagePersistence`).
//!
//! - `GET …/display?after=&limit=` a page of records, ascending by seq.
//! - `POST …/display/messages` save a message as records (one per part; tool
//!   calls become `pending` cards) → `{"records": […]}`.
//! - `POST …/display/synthetic` save one record the integrator originates.
//! - `POST …/display/tools/{call_id}/status` move a tool card (validated
//!   transitions; repeating the current status is `changed: false`; an unknown
//!   call is 404 — a normal outcome for Sagents).
//! - `POST …/display/tools/{call_id}/result` resolve an interrupted card.
//! - `POST …/display/restore` store exported records verbatim (import, migration).
//!
//! Every change is announced on the event streams ([`crate::events`]).

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use stowage::{
    DisplayContext, DisplayPage, DisplayRecord, JsonText, SyntheticMessage, ToolInfo, ToolStatus, ToolUpdate,
};

use super::{Table, Verb};
use crate::auth::Caller;
use crate::errors::{ApiError, Code};
use crate::extract::{ApiPath, ApiQuery, JsonBody};
use crate::format::{self, WireFormat};
use crate::routes::messages::FormatQuery;
use crate::state::AppState;

/// Default page size of a display listing.
pub const DEFAULT_DISPLAY_LIMIT: u32 = 100;

pub fn routes(table: Table) -> Table {
    let base = "/v1/conversations/{conversation}/display";
    table
        .add(Verb::Get, base, list)
        .add(Verb::Post, "/v1/conversations/{conversation}/display/messages", save_message)
        .add(Verb::Post, "/v1/conversations/{conversation}/display/synthetic", save_synthetic)
        .add(Verb::Post, "/v1/conversations/{conversation}/display/restore", restore)
        .add(Verb::Post, "/v1/conversations/{conversation}/display/tools/{call_id}/status", update_tool_status)
        .add(Verb::Post, "/v1/conversations/{conversation}/display/tools/{call_id}/result", resolve_tool_result)
}

fn context(agent_id: Option<&str>, conversation: &str) -> DisplayContext {
    DisplayContext::new(agent_id, conversation)
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    pub after: Option<u64>,
    pub limit: Option<u32>,
}

async fn list(
    State(state): State<AppState>,
    Caller(scope): Caller,
    ApiPath(conversation): ApiPath<String>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<DisplayPage>, ApiError> {
    let limit = query.limit.unwrap_or(DEFAULT_DISPLAY_LIMIT);
    let call = state.display().list(&scope, &conversation, query.after.unwrap_or(0), limit);
    state.metrics().store_call("display_list", call).await.map(Json)
}

/// Records saved by one call.
#[derive(Debug, Serialize, Deserialize)]
pub struct Records {
    pub records: Vec<DisplayRecord>,
}

/// The body of a save-message.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaveMessageBody {
    /// One message in `?format=` (a stored message's JSON works too).
    pub message: Box<RawValue>,
    #[serde(default)]
    pub agent_id: Option<String>,
}

async fn save_message(
    State(state): State<AppState>,
    Caller(scope): Caller,
    ApiPath(conversation): ApiPath<String>,
    ApiQuery(query): ApiQuery<FormatQuery>,
    JsonBody(body): JsonBody<SaveMessageBody>,
) -> Result<Json<Records>, ApiError> {
    let format = WireFormat::parse(query.format.as_deref())?;
    let messages = format::decode(format, std::slice::from_ref(&body.message))?;
    let ctx = context(body.agent_id.as_deref(), &conversation);
    let mut records = Vec::new();
    for message in &messages {
        let call = state.display().save_message(&scope, message, &ctx);
        records.extend(state.metrics().store_call("display_save_message", call).await?);
    }
    Ok(Json(Records { records }))
}

/// The body of a save-synthetic: a [`SyntheticMessage`] and the agent.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyntheticBody {
    pub message_type: String,
    pub content_type: String,
    pub content: JsonText,
    #[serde(default)]
    pub metadata: Option<JsonText>,
    #[serde(default)]
    pub agent_id: Option<String>,
}

async fn save_synthetic(
    State(state): State<AppState>,
    Caller(scope): Caller,
    ApiPath(conversation): ApiPath<String>,
    JsonBody(body): JsonBody<SyntheticBody>,
) -> Result<Json<DisplayRecord>, ApiError> {
    let ctx = context(body.agent_id.as_deref(), &conversation);
    let message = SyntheticMessage {
        message_type: body.message_type,
        content_type: body.content_type,
        content: body.content,
        metadata: body.metadata,
    };
    let call = state.display().save_synthetic_message(&scope, message, &ctx);
    state.metrics().store_call("display_save_synthetic", call).await.map(Json)
}

/// One record to restore: a [`DisplayRecord`] without its place. An exported
/// record may be sent as is: its `scope`, `conversation_id` and `seq` are
/// ignored (the request's scope and conversation apply; seqs continue after the
/// conversation's last record).
#[derive(Debug, Deserialize)]
pub struct RestoreRecord {
    #[serde(default)]
    pub message_id: Option<String>,
    pub message_type: String,
    pub content_type: String,
    #[serde(default)]
    pub tool_call_id: Option<String>,
    #[serde(default)]
    pub status: Option<ToolStatus>,
    pub content: JsonText,
    #[serde(default)]
    pub metadata: Option<JsonText>,
    pub created_at: stowage::Timestamp,
    pub updated_at: stowage::Timestamp,
}

/// The body of a restore.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestoreBody {
    pub records: Vec<RestoreRecord>,
}

async fn restore(
    State(state): State<AppState>,
    Caller(scope): Caller,
    ApiPath(conversation): ApiPath<String>,
    JsonBody(body): JsonBody<RestoreBody>,
) -> Result<Json<Records>, ApiError> {
    let records = body
        .records
        .into_iter()
        .map(|r| DisplayRecord {
            scope: scope.clone(),
            conversation_id: conversation.clone(),
            seq: 0,
            message_id: r.message_id,
            message_type: r.message_type,
            content_type: r.content_type,
            tool_call_id: r.tool_call_id,
            status: r.status,
            content: r.content,
            metadata: r.metadata,
            created_at: r.created_at,
            updated_at: r.updated_at,
        })
        .collect();
    let call = state.display().restore(&scope, &conversation, records);
    state.metrics().store_call("display_restore", call).await.map(|records| Json(Records { records }))
}

/// The body of a status update: the new status and Sagents' `tool_info` fields.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusBody {
    pub status: ToolStatus,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub display_text: Option<String>,
    #[serde(default)]
    pub result: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
    /// Extra keys merged into the card's metadata (a JSON object).
    #[serde(default)]
    pub metadata: Option<JsonText>,
    #[serde(default)]
    pub agent_id: Option<String>,
}

async fn update_tool_status(
    State(state): State<AppState>,
    Caller(scope): Caller,
    ApiPath((conversation, call_id)): ApiPath<(String, String)>,
    JsonBody(body): JsonBody<StatusBody>,
) -> Result<Json<ToolUpdate>, ApiError> {
    let ctx = context(body.agent_id.as_deref(), &conversation);
    let info = ToolInfo {
        call_id,
        name: body.name,
        display_text: body.display_text,
        result: body.result,
        error: body.error,
        metadata: body.metadata,
    };
    let call = state.display().update_tool_status(&scope, body.status, info, &ctx);
    state.metrics().store_call("display_update_tool_status", call).await.map(Json)
}

/// The body of a resolve: the tool's real result.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResolveBody {
    pub content: String,
    #[serde(default)]
    pub agent_id: Option<String>,
}

async fn resolve_tool_result(
    State(state): State<AppState>,
    Caller(scope): Caller,
    ApiPath((conversation, call_id)): ApiPath<(String, String)>,
    JsonBody(body): JsonBody<ResolveBody>,
) -> Result<Json<ToolUpdate>, ApiError> {
    if call_id.is_empty() {
        return Err(ApiError::new(Code::InvalidInput, "the tool call id is empty"));
    }
    let ctx = context(body.agent_id.as_deref(), &conversation);
    let call = state.display().resolve_tool_result(&scope, &call_id, &body.content, &ctx);
    state.metrics().store_call("display_resolve_tool_result", call).await.map(Json)
}
