//! Display events as Server-Sent Events.
//!
//! - `GET /v1/events`: every display change in the caller's scope (tenant from
//!   the token, user from `Stowage-User`).
//! - `GET /v1/conversations/{conversation}/events`: one conversation's.
//!
//! Resume with the `Last-Event-ID` header (or `?last_event_id=` for clients that
//! cannot set headers); see [`crate::events`] for ids and `events_lost`.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use stowage::Scope;

use super::{Table, Verb};
use crate::auth::Caller;
use crate::errors::{ApiError, Code};
use crate::events::sse::{self, Start, StreamSpec};
use crate::extract::{ApiPath, ApiQuery};
use crate::limits::stream_permit;
use crate::state::AppState;

pub fn routes(table: Table) -> Table {
    table.add(Verb::Get, "/v1/events", scope_events).add(
        Verb::Get,
        "/v1/conversations/{conversation}/events",
        conversation_events,
    )
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    pub last_event_id: Option<String>,
}

fn open_stream(
    state: &AppState,
    scope: &Scope,
    conversation: Option<String>,
    headers: &HeaderMap,
    query: &EventsQuery,
) -> Result<Response, ApiError> {
    if state.is_shutting_down() {
        return Err(ApiError::new(Code::ShuttingDown, "the server is shutting down"));
    }
    if scope.user.len() > stowage::MAX_SCOPE_BYTES || scope.user.chars().any(char::is_control) {
        return Err(ApiError::new(Code::InvalidInput, "the Stowage-User header is not a valid scope user"));
    }
    let header = match headers.get("last-event-id") {
        Some(value) => {
            Some(value.to_str().map_err(|_| ApiError::new(Code::InvalidLastEventId, "Last-Event-ID must be ASCII"))?)
        }
        None => None,
    };
    let start = Start::parse(header.or(query.last_event_id.as_deref()))?;
    let permit = stream_permit(state, &scope.tenant)?;
    let spec = StreamSpec {
        log: state.hub().log(scope),
        start,
        conversation,
        shutdown: state.shutdown(),
        metrics: state.metrics_handle(),
        permit,
        keep_alive: state.keep_alive(),
    };
    Ok(sse::stream(spec).into_response())
}

async fn scope_events(
    State(state): State<AppState>,
    Caller(scope): Caller,
    ApiQuery(query): ApiQuery<EventsQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    open_stream(&state, &scope, None, &headers, &query)
}

async fn conversation_events(
    State(state): State<AppState>,
    Caller(scope): Caller,
    ApiPath(conversation): ApiPath<String>,
    ApiQuery(query): ApiQuery<EventsQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if conversation.is_empty()
        || conversation.len() > stowage::MAX_ID_BYTES
        || conversation.chars().any(char::is_control)
    {
        return Err(ApiError::new(Code::InvalidInput, "the conversation id is not valid"));
    }
    open_stream(&state, &scope, Some(conversation), &headers, &query)
}
