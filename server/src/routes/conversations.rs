//! Conversations: list, open (find or create), info, delete.
//!
//! - `GET /v1/conversations?limit=&cursor=` → `ConversationPage` (ordered by id).
//! - `PUT /v1/conversations/{conversation}` (body: `ConversationMeta`, optional)
//!   → `ConversationInfo`. Idempotent: an existing conversation is returned
//!   unchanged and the body is ignored.
//! - `GET /v1/conversations/{conversation}` → `ConversationInfo`, or 404.
//! - `DELETE /v1/conversations/{conversation}` → `{"deleted": bool}` with its
//!   messages and display records. Idempotent: `false` when nothing existed — also
//!   for another tenant's conversation, which this scope cannot see.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use stowage::{ConversationInfo, ConversationMeta, ConversationPage};

use super::{Table, Verb};
use crate::auth::Caller;
use crate::errors::ApiError;
use crate::extract::{ApiPath, ApiQuery, MaybeJson};
use crate::state::AppState;

/// Default page size of listings.
pub const DEFAULT_LIST_LIMIT: u32 = 100;

pub fn routes(table: Table) -> Table {
    table
        .add(Verb::Get, "/v1/conversations", list)
        .add(Verb::Put, "/v1/conversations/{conversation}", open)
        .add(Verb::Get, "/v1/conversations/{conversation}", info)
        .add(Verb::Delete, "/v1/conversations/{conversation}", delete)
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    pub limit: Option<u32>,
    pub cursor: Option<String>,
}

async fn list(
    State(state): State<AppState>,
    Caller(scope): Caller,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<ConversationPage>, ApiError> {
    let limit = query.limit.unwrap_or(DEFAULT_LIST_LIMIT);
    let call = state.store().list(&scope, query.cursor.as_deref(), limit);
    state.metrics().store_call("list", call).await.map(Json)
}

async fn open(
    State(state): State<AppState>,
    Caller(scope): Caller,
    ApiPath(conversation): ApiPath<String>,
    MaybeJson(meta): MaybeJson<ConversationMeta>,
) -> Result<Json<ConversationInfo>, ApiError> {
    let call = state.store().open(&scope, &conversation, meta);
    state.metrics().store_call("open", call).await.map(Json)
}

async fn info(
    State(state): State<AppState>,
    Caller(scope): Caller,
    ApiPath(conversation): ApiPath<String>,
) -> Result<Json<ConversationInfo>, ApiError> {
    let call = state.store().info(&scope, &conversation);
    state.metrics().store_call("info", call).await.map(Json)
}

/// The answer of a delete.
#[derive(Debug, Serialize, Deserialize)]
pub struct Deleted {
    pub deleted: bool,
}

async fn delete(
    State(state): State<AppState>,
    Caller(scope): Caller,
    ApiPath(conversation): ApiPath<String>,
) -> Result<Json<Deleted>, ApiError> {
    let call = state.store().delete(&scope, &conversation);
    state.metrics().store_call("delete", call).await.map(|deleted| Json(Deleted { deleted }))
}
