//! Display without persistence: records get seqs and events, nothing is stored.
//!
//! To validate tool-card transitions the host still needs each open card's
//! status, so it keeps the cards that are not finished (and their results, which
//! a resolve may rewrite) in memory; finished ones are forgotten at once. Per
//! conversation it also keeps the next seq.

use std::collections::HashMap;
use std::sync::Mutex;

use super::model::{DisplayRecord, content_type};
use crate::model::Scope;

#[derive(Default)]
struct Conversation {
    last_seq: u64,
    live: Vec<DisplayRecord>,
}

#[derive(Default)]
pub struct Ephemeral {
    conversations: Mutex<HashMap<(Scope, String), Conversation>>,
}

impl Ephemeral {
    fn with<T>(&self, scope: &Scope, conversation_id: &str, f: impl FnOnce(&mut Conversation) -> T) -> T {
        let mut map = match self.conversations.lock() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(map.entry((scope.clone(), conversation_id.to_owned())).or_default())
    }

    pub fn insert(&self, scope: &Scope, conversation_id: &str, records: &[DisplayRecord]) -> Vec<u64> {
        self.with(scope, conversation_id, |c| {
            let first = c.last_seq + 1;
            c.last_seq += records.len() as u64;
            (first..=c.last_seq).collect()
        })
    }

    /// Keeps what later updates need.
    pub fn remember(&self, saved: &[DisplayRecord]) {
        let Some(first) = saved.first() else { return };
        self.with(&first.scope, &first.conversation_id, |c| {
            c.live.extend(saved.iter().filter(|r| r.tool_call_id.is_some()).cloned());
            prune(c);
        });
    }

    pub fn by_call_id(&self, scope: &Scope, conversation_id: &str, call_id: &str) -> Vec<DisplayRecord> {
        self.with(scope, conversation_id, |c| {
            c.live.iter().filter(|r| r.tool_call_id.as_deref() == Some(call_id)).cloned().collect()
        })
    }

    pub fn update(&self, record: &DisplayRecord) {
        self.with(&record.scope, &record.conversation_id, |c| {
            if let Some(slot) = c.live.iter_mut().find(|r| r.seq == record.seq) {
                *slot = record.clone();
            }
            prune(c);
        });
    }
}

/// Forgets finished cards, and results whose card is finished or unknown.
fn prune(c: &mut Conversation) {
    let open: Vec<String> = c
        .live
        .iter()
        .filter(|r| r.content_type == content_type::TOOL_CALL && r.status.is_some_and(|s| !s.is_terminal()))
        .filter_map(|r| r.tool_call_id.clone())
        .collect();
    c.live.retain(|r| r.tool_call_id.as_ref().is_some_and(|id| open.contains(id)));
}
