//! Conversations: list, open (find or create), info, change the meta, delete.
//!
//! - `GET /v1/conversations?limit=&cursor=` → `ConversationPage` (ordered by id).
//! - `PUT /v1/conversations/{conversation}` (body: [`MetaBody`], optional)
//!   → `ConversationInfo`. Idempotent: an existing conversation is returned
//!   unchanged and the body is ignored.
//! - `GET /v1/conversations/{conversation}` → `ConversationInfo`, or 404.
//! - `PATCH /v1/conversations/{conversation}` (body: [`PatchBody`]) →
//!   `ConversationInfo` with the new meta, or 404. A JSON merge patch of the
//!   meta's top level: a member given replaces that field (`metadata` and
//!   `extra` whole), `null` clears it, a member left out stays as stored.
//!   History, version and `updated_at` do not change.
//! - `DELETE /v1/conversations/{conversation}` → `{"deleted": bool}` with its
//!   messages and display records. Idempotent: `false` when nothing existed — also
//!   for another tenant's conversation, which this scope cannot see.
//!
//! Meta bodies refuse unknown members (`{"titel": …}` is a 400 naming it); the
//! store checks the values (`extra` must be a JSON object).

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Deserializer, Serialize};
use stowage::{ConversationInfo, ConversationMeta, ConversationPage, JsonText, MetaPatch};

use super::{Table, Verb};
use crate::auth::Caller;
use crate::errors::ApiError;
use crate::extract::{ApiPath, ApiQuery, JsonBody, MaybeJson};
use crate::state::AppState;

/// Default page size of listings.
pub const DEFAULT_LIST_LIMIT: u32 = 100;

pub fn routes(table: Table) -> Table {
    let one = "/v1/conversations/{conversation}";
    table
        .add(Verb::Get, "/v1/conversations", list)
        .add(Verb::Put, one, open)
        .add(Verb::Get, one, info)
        .add(Verb::Patch, one, update)
        .add(Verb::Delete, one, delete)
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

/// A conversation's meta in a request (open, append's `create_if_missing`):
/// [`ConversationMeta`], refusing unknown members.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetaBody {
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub metadata: Option<JsonText>,
    #[serde(default)]
    pub extra: Option<JsonText>,
}

impl From<MetaBody> for ConversationMeta {
    fn from(b: MetaBody) -> Self {
        ConversationMeta { agent_id: b.agent_id, title: b.title, metadata: b.metadata, extra: b.extra }
    }
}

/// The body of a meta change: per member, absent keeps the stored value,
/// `null` clears it, a value replaces it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatchBody {
    #[serde(default, deserialize_with = "present")]
    pub agent_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub title: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub metadata: Option<Option<JsonText>>,
    #[serde(default, deserialize_with = "present")]
    pub extra: Option<Option<JsonText>>,
}

/// A member that is present: `Some(None)` for `null`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

impl From<PatchBody> for MetaPatch {
    fn from(b: PatchBody) -> Self {
        MetaPatch { agent_id: b.agent_id, title: b.title, metadata: b.metadata, extra: b.extra }
    }
}

async fn open(
    State(state): State<AppState>,
    Caller(scope): Caller,
    ApiPath(conversation): ApiPath<String>,
    MaybeJson(meta): MaybeJson<MetaBody>,
) -> Result<Json<ConversationInfo>, ApiError> {
    let call = state.store().open(&scope, &conversation, meta.into());
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

async fn update(
    State(state): State<AppState>,
    Caller(scope): Caller,
    ApiPath(conversation): ApiPath<String>,
    JsonBody(patch): JsonBody<PatchBody>,
) -> Result<Json<ConversationInfo>, ApiError> {
    let call = state.store().patch_meta(&scope, &conversation, patch.into());
    state.metrics().store_call("patch_meta", call).await.map(Json)
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
