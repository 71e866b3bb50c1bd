//! Bindings of each kind of record: what the tag (and, for sealing, the
//! associated data) commits to.

use super::Binding;
use crate::model::{Role, Scope};

fn scoped(domain: &str, scope: &Scope, conversation_id: &str) -> Binding {
    Binding::new(domain).text(&scope.tenant).text(&scope.user).text(conversation_id)
}

/// A message's tag: every clear field, its position, its content.
pub fn message(scope: &Scope, conversation_id: &str, seq: u64, id: &str, role: Role, created_at: i64) -> Binding {
    scoped("stowage/message/v1", scope, conversation_id).number(seq).text(id).text(role.as_str()).signed(created_at)
}

/// A message's sealed content (stable across renumbering: no seq).
pub fn message_seal(scope: &Scope, conversation_id: &str, id: &str) -> Binding {
    scoped("stowage/message-content/v1", scope, conversation_id).text(id)
}

/// A conversation's meta (tag and seal).
pub fn meta(scope: &Scope, conversation_id: &str, created_at: i64) -> Binding {
    scoped("stowage/meta/v1", scope, conversation_id).signed(created_at)
}

/// The clear fields of a display record.
pub struct DisplayFields<'a> {
    pub seq: u64,
    pub message_id: Option<&'a str>,
    pub message_type: &'a str,
    pub content_type: &'a str,
    pub tool_call_id: Option<&'a str>,
    pub status: Option<&'a str>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A display record's tag.
pub fn display(scope: &Scope, conversation_id: &str, f: &DisplayFields<'_>) -> Binding {
    scoped("stowage/display/v1", scope, conversation_id)
        .number(f.seq)
        .optional(f.message_id)
        .text(f.message_type)
        .text(f.content_type)
        .optional(f.tool_call_id)
        .optional(f.status)
        .signed(f.created_at)
        .signed(f.updated_at)
}

/// A display record's sealed body.
pub fn display_seal(scope: &Scope, conversation_id: &str) -> Binding {
    scoped("stowage/display-body/v1", scope, conversation_id)
}

/// A display event in the cross-host journal: who published it (a host's random
/// origin id) and its number among that host's events (tag and seal).
pub fn display_event(scope: &Scope, conversation_id: &str, origin: &str, counter: u64) -> Binding {
    scoped("stowage/display-event/v1", scope, conversation_id).text(origin).number(counter)
}
