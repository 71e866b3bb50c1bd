//! Display persistence: UI-ready records of a conversation, the tool-card
//! lifecycle, and the event stream (Sagents' `DisplayMessagePersistence`, made
//! exact).
//!
//! Every rule lives here, in the host, so it holds for every adapter: splitting a
//! message into records, validated status transitions, metadata merging, resolving
//! interrupted tools, the start-up sweep. Each change is made under the
//! conversation's lock and broadcast while the lock is held, so subscribers see
//! every persisted change exactly once and in order per conversation; a failed
//! change emits nothing. Without persistence ([`Display::ephemeral`]) events still
//! flow and nothing is stored.

mod ephemeral;
mod lifecycle;
pub mod model;
mod split;

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::broadcast;

use self::ephemeral::Ephemeral;
use self::model::{
    DisplayContext, DisplayEvent, DisplayPage, DisplayRecord, SweepReport, SyntheticMessage, ToolInfo, ToolStatus,
    ToolUpdate, content_type,
};
pub use self::split::MessageView;
use crate::adapter::bindings::display_store as wit;
use crate::error::Error;
use crate::locks::ConversationLocks;
use crate::model::{JsonText, Scope};
use crate::store::{Store, now_millis};
use crate::validate;

/// Options of a [`Display`].
#[derive(Clone, Debug)]
pub struct DisplayOptions {
    /// Events buffered per subscriber; a subscriber that falls further behind gets
    /// `RecvError::Lagged` and should reload from the store.
    pub event_capacity: usize,
    /// Largest page `list` returns.
    pub max_page_size: u32,
}

impl Default for DisplayOptions {
    fn default() -> Self {
        Self { event_capacity: 4096, max_page_size: 1000 }
    }
}

enum Backend {
    Persistent(Store),
    Ephemeral { state: Ephemeral, locks: ConversationLocks },
}

/// Display persistence over a store, or events only. Cheap to clone.
#[derive(Clone)]
pub struct Display {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Backend,
    events: broadcast::Sender<DisplayEvent>,
    options: DisplayOptions,
}

/// Statuses the start-up sweep looks for.
const STALE: [ToolStatus; 2] = [ToolStatus::Pending, ToolStatus::Executing];
const SWEEP_BATCH: u32 = 256;

fn from_wit(scope: &Scope, conversation_id: &str, stored: wit::StoredDisplayRecord) -> Result<DisplayRecord, Error> {
    let seq = stored.seq;
    let r = stored.record;
    let bad = |what: &str| Error::Storage(format!("display record {seq} of a conversation has {what}"));
    let status = match r.status {
        None => None,
        Some(s) => Some(ToolStatus::parse(&s).ok_or_else(|| bad("an unknown status"))?),
    };
    Ok(DisplayRecord {
        scope: scope.clone(),
        conversation_id: conversation_id.to_owned(),
        seq,
        message_id: r.message_id,
        message_type: r.message_type,
        content_type: r.content_type,
        tool_call_id: r.tool_call_id,
        status,
        content: JsonText::parse(r.content).map_err(|_| bad("content that is not JSON"))?,
        metadata: r.metadata.map(JsonText::parse).transpose().map_err(|_| bad("metadata that is not JSON"))?,
        created_at: r.created_at,
        updated_at: r.updated_at,
    })
}

fn to_wit(record: &DisplayRecord) -> wit::DisplayRecord {
    wit::DisplayRecord {
        message_id: record.message_id.clone(),
        message_type: record.message_type.clone(),
        content_type: record.content_type.clone(),
        tool_call_id: record.tool_call_id.clone(),
        status: record.status.map(|s| s.as_str().to_owned()),
        content: record.content.as_str().to_owned(),
        metadata: record.metadata.as_ref().map(|m| m.as_str().to_owned()),
        created_at: record.created_at,
        updated_at: record.updated_at,
    }
}

impl Display {
    fn new(backend: Backend, options: DisplayOptions) -> Self {
        let (events, _) = broadcast::channel(options.event_capacity.max(1));
        Self { inner: Arc::new(Inner { backend, events, options }) }
    }

    /// Display persistence over `store`, after the start-up sweep: cards a crash
    /// left `pending` or `executing` are marked `interrupted` (the report says how
    /// many). Run it where this host is the only writer of the store.
    pub async fn open(store: Store, options: DisplayOptions) -> Result<(Self, SweepReport), Error> {
        let display = Self::new(Backend::Persistent(store), options);
        let report = display.sweep().await?;
        Ok((display, report))
    }

    /// Display persistence over `store`, without a sweep.
    pub fn persistent(store: Store, options: DisplayOptions) -> Self {
        Self::new(Backend::Persistent(store), options)
    }

    /// Events only: nothing is stored, transitions are still validated (from what
    /// this process has seen), and rendering from the event stream works.
    pub fn ephemeral(options: DisplayOptions) -> Self {
        Self::new(Backend::Ephemeral { state: Ephemeral::default(), locks: ConversationLocks::default() }, options)
    }

    /// Whether records are stored.
    pub fn is_persistent(&self) -> bool {
        matches!(self.inner.backend, Backend::Persistent(_))
    }

    /// A new subscriber; it receives every event emitted from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<DisplayEvent> {
        self.inner.events.subscribe()
    }

    /// Runs `op` as a task of its own, so a caller that stops waiting cannot
    /// separate a persisted change from its event or release the conversation's
    /// lock while the adapter still works.
    async fn detached<T, Fut>(&self, op: impl FnOnce(Display) -> Fut) -> Result<T, Error>
    where
        Fut: std::future::Future<Output = Result<T, Error>> + Send + 'static,
        T: Send + 'static,
    {
        tokio::spawn(op(self.clone())).await.map_err(|e| Error::Internal(format!("display task failed: {e}")))?
    }

    fn emit(&self, event: DisplayEvent) {
        // No subscribers is fine: the change is persisted either way.
        let _ = self.inner.events.send(event);
    }

    async fn lock(&self, scope: &Scope, conversation_id: &str) -> tokio::sync::OwnedMutexGuard<()> {
        match &self.inner.backend {
            Backend::Persistent(store) => store.lock_conversation(scope, conversation_id).await,
            Backend::Ephemeral { locks, .. } => locks.lock(scope, conversation_id).await,
        }
    }

    fn check_ctx(&self, scope: &Scope, ctx: &DisplayContext) -> Result<(), Error> {
        validate::scope(scope)?;
        validate::conversation_id(&ctx.conversation_id)
    }

    async fn insert(
        &self,
        scope: &Scope,
        ctx: &DisplayContext,
        records: Vec<DisplayRecord>,
    ) -> Result<Vec<DisplayRecord>, Error> {
        let conversation_id = &ctx.conversation_id;
        let seqs = match &self.inner.backend {
            Backend::Persistent(store) => {
                let wit_records = records.iter().map(to_wit).collect();
                store.display_insert(scope, conversation_id, wit_records).await?
            }
            Backend::Ephemeral { state, .. } => state.insert(scope, conversation_id, &records),
        };
        if seqs.len() != records.len() {
            return Err(Error::ContractViolation {
                store: self.store_name(),
                message: format!("display insert of {} records returned {} seqs", records.len(), seqs.len()),
            });
        }
        let saved: Vec<DisplayRecord> =
            records.into_iter().zip(seqs).map(|(record, seq)| DisplayRecord { seq, ..record }).collect();
        if let Backend::Ephemeral { state, .. } = &self.inner.backend {
            state.remember(&saved);
        }
        for record in &saved {
            self.emit(DisplayEvent::DisplayMessageSaved { agent_id: ctx.agent_id.clone(), record: record.clone() });
        }
        Ok(saved)
    }

    fn store_name(&self) -> String {
        match &self.inner.backend {
            Backend::Persistent(store) => store.name().to_owned(),
            Backend::Ephemeral { .. } => "ephemeral".to_owned(),
        }
    }

    async fn by_call_id(
        &self,
        scope: &Scope,
        conversation_id: &str,
        call_id: &str,
    ) -> Result<Vec<DisplayRecord>, Error> {
        match &self.inner.backend {
            Backend::Persistent(store) => store
                .display_by_tool_call_id(scope, conversation_id, call_id)
                .await?
                .into_iter()
                .map(|r| from_wit(scope, conversation_id, r))
                .collect(),
            Backend::Ephemeral { state, .. } => Ok(state.by_call_id(scope, conversation_id, call_id)),
        }
    }

    async fn update(&self, record: &DisplayRecord, agent_id: Option<&String>) -> Result<(), Error> {
        match &self.inner.backend {
            Backend::Persistent(store) => {
                store.display_update(&record.scope, &record.conversation_id, record.seq, to_wit(record)).await?
            }
            Backend::Ephemeral { state, .. } => state.update(record),
        }
        self.emit(DisplayEvent::DisplayMessageUpdated { agent_id: agent_id.cloned(), record: record.clone() });
        Ok(())
    }

    /// Saves a message as display records, one per part in order (text, thinking,
    /// each tool call as a `pending` card, each tool result); the stop reason is in
    /// the last record's metadata. Emits `display_message_saved` for each.
    pub async fn save_message<'a>(
        &self,
        scope: &Scope,
        message: impl Into<MessageView<'a>>,
        ctx: &DisplayContext,
    ) -> Result<Vec<DisplayRecord>, Error> {
        self.check_ctx(scope, ctx)?;
        let message = message.into();
        if let Some(id) = message.id {
            validate::message_id(id)?;
        }
        let drafts = split::drafts(&message);
        if drafts.is_empty() {
            return Ok(Vec::new());
        }
        let now = now_millis();
        let records = drafts
            .into_iter()
            .map(|d| DisplayRecord {
                scope: scope.clone(),
                conversation_id: ctx.conversation_id.clone(),
                seq: 0,
                message_id: message.id.map(str::to_owned),
                message_type: message.role.as_str().to_owned(),
                content_type: d.content_type.to_owned(),
                tool_call_id: d.tool_call_id,
                status: d.status,
                content: JsonText::from_value(&d.content),
                metadata: lifecycle::to_json(d.metadata),
                created_at: now,
                updated_at: now,
            })
            .collect();
        self.insert_locked(scope, ctx, records).await
    }

    async fn insert_locked(
        &self,
        scope: &Scope,
        ctx: &DisplayContext,
        records: Vec<DisplayRecord>,
    ) -> Result<Vec<DisplayRecord>, Error> {
        let (scope, ctx) = (scope.clone(), ctx.clone());
        self.detached(move |d| async move {
            let _guard = d.lock(&scope, &ctx.conversation_id).await;
            d.insert(&scope, &ctx, records).await
        })
        .await
    }

    /// Saves one record the integrator originates (an ask-user answer, a
    /// cancellation note). Emits `display_message_saved`.
    pub async fn save_synthetic_message(
        &self,
        scope: &Scope,
        message: SyntheticMessage,
        ctx: &DisplayContext,
    ) -> Result<DisplayRecord, Error> {
        self.check_ctx(scope, ctx)?;
        for (what, value) in [("message_type", &message.message_type), ("content_type", &message.content_type)] {
            if value.is_empty() || value.len() > 128 {
                return Err(Error::InvalidInput(format!("synthetic {what} must be 1 to 128 bytes")));
            }
        }
        let metadata = lifecycle::require_object(message.metadata.as_ref(), "synthetic message metadata")?;
        let now = now_millis();
        let record = DisplayRecord {
            scope: scope.clone(),
            conversation_id: ctx.conversation_id.clone(),
            seq: 0,
            message_id: None,
            message_type: message.message_type,
            content_type: message.content_type,
            tool_call_id: None,
            status: None,
            content: message.content,
            metadata: lifecycle::to_json(metadata),
            created_at: now,
            updated_at: now,
        };
        let mut saved = self.insert_locked(scope, ctx, vec![record]).await?;
        saved.pop().ok_or_else(|| Error::Internal("insert returned no record".into()))
    }

    fn card_of(records: &[DisplayRecord]) -> Result<(DisplayRecord, ToolStatus), Error> {
        let card =
            records.iter().rev().find(|r| r.content_type == content_type::TOOL_CALL).cloned().ok_or(Error::NotFound)?;
        let status = card.status.ok_or_else(|| Error::Storage(format!("tool card {} has no status", card.seq)))?;
        Ok((card, status))
    }

    /// Moves a tool-call card to `status`, merging `info` into its metadata.
    /// Repeating the current status changes nothing (`changed: false`, no event);
    /// a move the lifecycle forbids is `InvalidTransition`; an unknown call id is
    /// `NotFound` (normal: the card may belong to a turn that was not persisted).
    pub async fn update_tool_status(
        &self,
        scope: &Scope,
        status: ToolStatus,
        info: ToolInfo,
        ctx: &DisplayContext,
    ) -> Result<ToolUpdate, Error> {
        self.check_ctx(scope, ctx)?;
        validate::message_id(&info.call_id).map_err(|_| Error::InvalidInput("tool call id is not valid".into()))?;
        let (scope, ctx) = (scope.clone(), ctx.clone());
        self.detached(move |d| async move { d.update_tool_status_locked(&scope, status, info, &ctx).await }).await
    }

    async fn update_tool_status_locked(
        &self,
        scope: &Scope,
        status: ToolStatus,
        info: ToolInfo,
        ctx: &DisplayContext,
    ) -> Result<ToolUpdate, Error> {
        let _guard = self.lock(scope, &ctx.conversation_id).await;
        let records = self.by_call_id(scope, &ctx.conversation_id, &info.call_id).await?;
        let (mut card, current) = Self::card_of(&records)?;
        if !lifecycle::check_transition(current, status)? {
            return Ok(ToolUpdate { card, changed: false });
        }
        let mut metadata = lifecycle::object(card.metadata.as_ref());
        lifecycle::merge_tool_info(&mut metadata, &info)?;
        card.status = Some(status);
        card.metadata = lifecycle::to_json(metadata);
        card.updated_at = now_millis();
        self.update(&card, ctx.agent_id.as_ref()).await?;
        Ok(ToolUpdate { card, changed: true })
    }

    /// Completes an `interrupted` card with its real result: the interrupt is
    /// cleared, the result goes into the card's metadata, and any tool-result
    /// record of the call gets `content` instead of its placeholder. Emits
    /// `display_message_updated` for each changed record. Resolving a completed
    /// card is a no-op; any other status is `InvalidTransition`.
    pub async fn resolve_tool_result(
        &self,
        scope: &Scope,
        tool_call_id: &str,
        content: &str,
        ctx: &DisplayContext,
    ) -> Result<ToolUpdate, Error> {
        self.check_ctx(scope, ctx)?;
        let (scope, ctx, call, content) = (scope.clone(), ctx.clone(), tool_call_id.to_owned(), content.to_owned());
        self.detached(move |d| async move { d.resolve_locked(&scope, &call, &content, &ctx).await }).await
    }

    async fn resolve_locked(
        &self,
        scope: &Scope,
        tool_call_id: &str,
        content: &str,
        ctx: &DisplayContext,
    ) -> Result<ToolUpdate, Error> {
        let _guard = self.lock(scope, &ctx.conversation_id).await;
        let records = self.by_call_id(scope, &ctx.conversation_id, tool_call_id).await?;
        let (mut card, current) = Self::card_of(&records)?;
        if !lifecycle::check_resolve(current)? {
            return Ok(ToolUpdate { card, changed: false });
        }
        let now = now_millis();
        // Results first: if the process dies in between, the card is still
        // interrupted and resolving again finishes the job.
        for mut result in records.into_iter().filter(|r| r.content_type == content_type::TOOL_RESULT) {
            let mut metadata = lifecycle::object(result.metadata.as_ref());
            metadata.remove("placeholder");
            result.content = JsonText::from_value(&json!({ "content": content, "is_error": false }));
            result.metadata = lifecycle::to_json(metadata);
            result.updated_at = now;
            self.update(&result, ctx.agent_id.as_ref()).await?;
        }
        let mut metadata = lifecycle::object(card.metadata.as_ref());
        metadata.remove("interrupted_by");
        metadata.insert("result".into(), Value::String(content.to_owned()));
        card.status = Some(ToolStatus::Completed);
        card.metadata = lifecycle::to_json(metadata);
        card.updated_at = now;
        self.update(&card, ctx.agent_id.as_ref()).await?;
        Ok(ToolUpdate { card, changed: true })
    }

    /// Stores records verbatim (status, content, metadata, timestamps kept),
    /// numbered after the conversation's last record; for import and migration.
    /// Emits `display_message_saved` for each.
    pub async fn restore(
        &self,
        scope: &Scope,
        conversation_id: &str,
        records: Vec<DisplayRecord>,
    ) -> Result<Vec<DisplayRecord>, Error> {
        validate::scope(scope)?;
        validate::conversation_id(conversation_id)?;
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let ctx = DisplayContext::new(None, conversation_id);
        let records = records
            .into_iter()
            .map(|r| DisplayRecord { scope: scope.clone(), conversation_id: conversation_id.to_owned(), seq: 0, ..r })
            .collect();
        self.insert_locked(scope, &ctx, records).await
    }

    /// A page of a conversation's records, ascending, after seq `after` (0 = start).
    /// Without persistence the page is always empty.
    pub async fn list(
        &self,
        scope: &Scope,
        conversation_id: &str,
        after: u64,
        limit: u32,
    ) -> Result<DisplayPage, Error> {
        validate::scope(scope)?;
        validate::conversation_id(conversation_id)?;
        if limit == 0 || limit > self.inner.options.max_page_size {
            return Err(Error::InvalidInput(format!(
                "limit must be between 1 and {}, got {limit}",
                self.inner.options.max_page_size
            )));
        }
        let Backend::Persistent(store) = &self.inner.backend else {
            return Ok(DisplayPage { records: Vec::new(), next_after: None });
        };
        let fetch = limit.saturating_add(1);
        let stored = {
            let _guard = store.lock_conversation(scope, conversation_id).await;
            store.display_list(scope, conversation_id, after, fetch).await?
        };
        let mut records =
            stored.into_iter().map(|r| from_wit(scope, conversation_id, r)).collect::<Result<Vec<_>, _>>()?;
        let mut previous = after;
        for record in &records {
            if record.seq <= previous {
                return Err(Error::ContractViolation {
                    store: store.name().to_owned(),
                    message: "display list returned records out of order".into(),
                });
            }
            previous = record.seq;
        }
        let next_after = if records.len() > limit as usize {
            records.truncate(limit as usize);
            records.last().map(|r| r.seq)
        } else {
            None
        };
        Ok(DisplayPage { records, next_after })
    }

    /// Marks every card left `pending` or `executing` (by a crash: nothing runs
    /// those tools any more) as `interrupted`, emitting an update for each.
    pub async fn sweep(&self) -> Result<SweepReport, Error> {
        let Backend::Persistent(store) = &self.inner.backend else {
            return Ok(SweepReport::default());
        };
        let statuses: Vec<String> = STALE.iter().map(|s| s.as_str().to_owned()).collect();
        let mut report = SweepReport::default();
        // Every card is looked at once: the loop ends when a round finds none unseen.
        let mut seen: std::collections::HashSet<(Scope, String, u64)> = std::collections::HashSet::new();
        loop {
            let found = store.display_find_by_status(&statuses, SWEEP_BATCH).await?;
            let mut progressed = false;
            for located in found {
                let scope = Scope { tenant: located.scope.tenant, user: located.scope.user };
                let conversation_id = located.conversation_id;
                let key = (scope.clone(), conversation_id.clone(), located.stored.seq);
                if !seen.insert(key.clone()) {
                    continue;
                }
                progressed = true;
                match self.sweep_one(store, &scope, &conversation_id, located.stored).await {
                    Ok(true) => report.interrupted += 1,
                    Ok(false) => {} // it moved on its own meanwhile
                    Err(error) => {
                        // One damaged record must not stop start-up for everyone.
                        tracing::warn!(%error, seq = key.2, "start-up sweep skipped a tool card it could not update");
                        report.skipped += 1;
                    }
                }
            }
            if !progressed {
                return Ok(report);
            }
        }
    }

    /// Marks one stale card interrupted; `Ok(false)` if it is no longer stale.
    async fn sweep_one(
        &self,
        store: &Store,
        scope: &Scope,
        conversation_id: &str,
        stored: wit::StoredDisplayRecord,
    ) -> Result<bool, Error> {
        let _guard = store.lock_conversation(scope, conversation_id).await;
        let mut card = from_wit(scope, conversation_id, stored)?;
        // Re-read under the lock: the card may have moved since it was found.
        if let Some(call_id) = card.tool_call_id.clone() {
            let current = self.by_call_id(scope, conversation_id, &call_id).await?;
            match current.into_iter().find(|r| r.seq == card.seq) {
                Some(fresh) => card = fresh,
                None => return Ok(false),
            }
        }
        if !card.status.is_some_and(|s| STALE.contains(&s)) {
            return Ok(false);
        }
        let mut metadata = lifecycle::object(card.metadata.as_ref());
        metadata.insert("interrupted_by".into(), Value::String("startup_sweep".into()));
        card.status = Some(ToolStatus::Interrupted);
        card.metadata = lifecycle::to_json(metadata);
        card.updated_at = now_millis();
        self.update(&card, None).await?;
        Ok(true)
    }
}
