//! Display without persistence: records get seqs and events, nothing is stored.
//!
//! To validate tool-card transitions the host still needs each open card's
//! status, so it keeps the cards that are not finished (and their results, which a
//! resolve may rewrite) in memory; finished ones are forgotten at once. Per
//! conversation it also keeps the next seq. Reads never create state, and the
//! number of conversations is bounded: beyond [`MAX_CONVERSATIONS`], conversations
//! without open cards are forgotten, least recently used first (their numbering
//! then starts again at 1).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::OwnedMutexGuard;

use super::storage::{BoxFuture, Storage};
use crate::adapter::raw::DisplayPosition;
use crate::error::Error;
use crate::locks::ConversationLocks;
use crate::model::{DisplayRecord, Scope, content_type};

pub const MAX_CONVERSATIONS: usize = 65_536;

#[derive(Default)]
struct Conversation {
    last_seq: u64,
    live: Vec<DisplayRecord>,
    used: u64,
}

#[derive(Default)]
struct State {
    conversations: HashMap<(Scope, String), Conversation>,
    clock: u64,
}

#[derive(Default)]
pub struct Ephemeral {
    state: Mutex<State>,
    locks: Arc<ConversationLocks>,
}

impl Ephemeral {
    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let mut state = match self.state.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut state)
    }

    /// Keeps what later updates need of `saved` (their seqs assigned).
    fn remember(state: &mut State, key: &(Scope, String), saved: &[DisplayRecord]) {
        if let Some(c) = state.conversations.get_mut(key) {
            c.live.extend(saved.iter().filter(|r| r.tool_call_id.is_some()).cloned());
            prune(c);
        }
    }

    #[cfg(test)]
    pub fn conversations(&self) -> usize {
        self.with(|s| s.conversations.len())
    }
}

/// Forgets idle conversations (no open cards), least recently used first, until
/// there is room for one more.
fn make_room(state: &mut State) {
    if state.conversations.len() < MAX_CONVERSATIONS {
        return;
    }
    let mut idle: Vec<((Scope, String), u64)> =
        state.conversations.iter().filter(|(_, c)| c.live.is_empty()).map(|(k, c)| (k.clone(), c.used)).collect();
    idle.sort_by_key(|(_, used)| *used);
    let excess = state.conversations.len() + 1 - MAX_CONVERSATIONS;
    for (key, _) in idle.into_iter().take(excess.max(MAX_CONVERSATIONS / 16)) {
        state.conversations.remove(&key);
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

impl Storage for Ephemeral {
    fn name(&self) -> String {
        "ephemeral".to_owned()
    }

    fn persistent(&self) -> bool {
        false
    }

    fn paged_sweep(&self) -> bool {
        true
    }

    fn lock(&self, scope: Scope, conversation: String) -> BoxFuture<'_, OwnedMutexGuard<()>> {
        let locks = Arc::clone(&self.locks);
        Box::pin(async move { locks.lock(&scope, &conversation).await })
    }

    fn insert(
        &self,
        scope: Scope,
        conversation: String,
        records: Vec<DisplayRecord>,
    ) -> BoxFuture<'_, Result<Vec<u64>, Error>> {
        let seqs = self.with(|state| {
            let key = (scope, conversation);
            if !state.conversations.contains_key(&key) {
                make_room(state);
            }
            state.clock += 1;
            let clock = state.clock;
            let c = state.conversations.entry(key.clone()).or_default();
            c.used = clock;
            let first = c.last_seq + 1;
            c.last_seq += records.len() as u64;
            let seqs: Vec<u64> = (first..=c.last_seq).collect();
            let saved: Vec<DisplayRecord> =
                records.into_iter().zip(&seqs).map(|(r, seq)| DisplayRecord { seq: *seq, ..r }).collect();
            Self::remember(state, &key, &saved);
            seqs
        });
        Box::pin(async move { Ok(seqs) })
    }

    fn by_call(
        &self,
        scope: Scope,
        conversation: String,
        call_id: String,
    ) -> BoxFuture<'_, Result<Vec<DisplayRecord>, Error>> {
        let found = self.with(|state| {
            state
                .conversations
                .get(&(scope, conversation))
                .map(|c| {
                    c.live.iter().filter(|r| r.tool_call_id.as_deref() == Some(call_id.as_str())).cloned().collect()
                })
                .unwrap_or_default()
        });
        Box::pin(async move { Ok(found) })
    }

    fn update(&self, record: DisplayRecord) -> BoxFuture<'_, Result<(), Error>> {
        self.with(|state| {
            let key = (record.scope.clone(), record.conversation_id.clone());
            if let Some(c) = state.conversations.get_mut(&key) {
                if let Some(slot) = c.live.iter_mut().find(|r| r.seq == record.seq) {
                    *slot = record;
                }
                prune(c);
            }
        });
        Box::pin(async move { Ok(()) })
    }

    fn list(&self, _: Scope, _: String, _: u64, _: u32) -> BoxFuture<'_, Result<Vec<DisplayRecord>, Error>> {
        Box::pin(async move { Ok(Vec::new()) })
    }

    fn stale(
        &self,
        _: Vec<String>,
        _: Option<DisplayPosition>,
        _: u32,
    ) -> BoxFuture<'_, Result<Vec<DisplayRecord>, Error>> {
        Box::pin(async move { Ok(Vec::new()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reads_of_unknown_conversations_create_nothing() -> Result<(), Error> {
        let ephemeral = Ephemeral::default();
        for i in 0..100 {
            ephemeral.by_call(Scope::default(), format!("c{i}"), "call".into()).await?;
        }
        assert_eq!(ephemeral.conversations(), 0);
        Ok(())
    }
}
