//! Display persistence: UI-ready records of a conversation, the tool-card
//! lifecycle, and the event stream (Sagents' `DisplayMessagePersistence`, made
//! exact).
//!
//! Every rule lives here, in the host, so it holds for every adapter: splitting a
//! message into records, validated status transitions, metadata merging, resolving
//! interrupted tools, the start-up sweep. Each change is made under the
//! conversation's lock ([`change`]) and announced before the lock is released, so
//! subscribers see every persisted change exactly once and in order per
//! conversation; a failed change emits nothing. When the store's database is
//! shared by several hosts (a PostgreSQL `sql.url`), the lock is cross-host too
//! and events travel through a journal ([`relay`]), so a subscriber on any host
//! sees the changes made through every host. Without persistence
//! ([`Display::ephemeral`]) events still flow and nothing is stored. Every
//! operation runs as a task of its own.

mod change;
mod ephemeral;
mod lifecycle;
pub mod relay;
mod split;
mod storage;
mod sweep;
mod tools;

use std::sync::Arc;

use tokio::sync::broadcast;

use self::change::Change;
use self::relay::Relay;
use self::relay::postgres::PgRelay;
pub use self::split::MessageView;
use self::storage::{Persistent, Storage};
use crate::error::Error;
use crate::model::{
    DisplayContext, DisplayEvent, DisplayPage, DisplayRecord, JsonText, Scope, SweepReport, SyntheticMessage,
};
use crate::store::Store;
use crate::util::clock::now_millis;
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

/// Display persistence over a store, or events only. Cheap to clone.
#[derive(Clone)]
pub struct Display {
    inner: Arc<Inner>,
}

struct Inner {
    storage: Box<dyn Storage>,
    events: broadcast::Sender<DisplayEvent>,
    options: DisplayOptions,
    /// Carries events between hosts sharing the store's database.
    relay: Option<Box<dyn Relay>>,
}

type RelayStart = dyn FnOnce(broadcast::Sender<DisplayEvent>) -> Option<Box<dyn Relay>>;

impl Display {
    fn new(storage: Box<dyn Storage>, options: DisplayOptions, relay: Box<RelayStart>) -> Self {
        let (events, _) = broadcast::channel(options.event_capacity.max(1));
        let relay = relay(events.clone());
        Self { inner: Arc::new(Inner { storage, events, options, relay }) }
    }

    /// Display persistence over `store`, after the start-up sweep: cards a crash
    /// left `pending` or `executing` are marked `interrupted` (the report says how
    /// many). Run it where this host is the only writer of the store.
    pub async fn open(store: Store, options: DisplayOptions) -> Result<(Self, SweepReport), Error> {
        let display = Self::persistent(store, options);
        let report = display.sweep().await?;
        Ok((display, report))
    }

    /// Display persistence over `store`, without a sweep. On a store whose
    /// database is shared (`sql.url`), changes made through other hosts are
    /// announced here too.
    pub fn persistent(store: Store, options: DisplayOptions) -> Self {
        let shared = store.shared_database();
        let (name, protector) = (store.name().to_owned(), store.client().protector_arc());
        let start = move |sink| -> Option<Box<dyn Relay>> {
            let shared = shared?;
            match PgRelay::start(&name, &shared.url, &shared.settings, protector, sink) {
                Ok(relay) => Some(Box::new(relay)),
                Err(error) => {
                    tracing::error!(store = %name, %error, "display events stay on this host");
                    None
                }
            }
        };
        Self::new(Box::new(Persistent::new(store)), options, Box::new(start))
    }

    /// Events only: nothing is stored, transitions are still validated (from what
    /// this process has seen), and rendering from the event stream works.
    pub fn ephemeral(options: DisplayOptions) -> Self {
        Self::new(Box::new(ephemeral::Ephemeral::default()), options, Box::new(|_| None))
    }

    /// Whether changes are shared with other hosts through the store's database.
    /// Then the start-up sweep ([`Display::open`]) would mark tools that other
    /// hosts are running `interrupted`: run it only when no other host runs.
    pub fn is_shared(&self) -> bool {
        self.inner.relay.is_some()
    }

    fn relay(&self) -> Option<&dyn Relay> {
        self.inner.relay.as_deref()
    }

    /// Whether records are stored.
    pub fn is_persistent(&self) -> bool {
        self.inner.storage.persistent()
    }

    /// A new subscriber; it receives every event emitted from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<DisplayEvent> {
        self.inner.events.subscribe()
    }

    fn storage(&self) -> &dyn Storage {
        self.inner.storage.as_ref()
    }

    /// Runs `op` as a task of its own, so a caller that stops waiting cannot
    /// separate a persisted change from its event or release the conversation's
    /// lock while the adapter still works.
    async fn detached<T, Fut>(&self, op: impl FnOnce(Display) -> Fut) -> Result<T, Error>
    where
        Fut: Future<Output = Result<T, Error>> + Send + 'static,
        T: Send + 'static,
    {
        tokio::spawn(op(self.clone())).await.map_err(|e| Error::Internal(format!("display task failed: {e}")))?
    }

    /// Hands `event` to this host's subscribers.
    fn announce(&self, event: DisplayEvent) {
        // No subscribers is fine: the change is persisted either way.
        let _ = self.inner.events.send(event);
    }

    fn check_ctx(scope: &Scope, ctx: &DisplayContext) -> Result<(), Error> {
        validate::scope(scope)?;
        validate::conversation_id(&ctx.conversation_id)
    }

    /// Stores `records` under the conversation's lock and announces each.
    async fn insert(
        &self,
        scope: Scope,
        ctx: DisplayContext,
        records: Vec<DisplayRecord>,
    ) -> Result<Vec<DisplayRecord>, Error> {
        self.detached(move |d| async move {
            let mut change = d.change(&scope, &ctx.conversation_id).await?;
            let saved = d.insert_in(&mut change, scope, &ctx, records).await;
            change.finish(&d).await;
            saved
        })
        .await
    }

    async fn insert_in(
        &self,
        change: &mut Change,
        scope: Scope,
        ctx: &DisplayContext,
        records: Vec<DisplayRecord>,
    ) -> Result<Vec<DisplayRecord>, Error> {
        let count = records.len();
        let seqs = self.storage().insert(scope, ctx.conversation_id.clone(), records.clone()).await?;
        if seqs.len() != count {
            return Err(Error::ContractViolation {
                store: self.storage().name(),
                message: format!("display insert of {count} records returned {} seqs", seqs.len()),
            });
        }
        let saved: Vec<DisplayRecord> =
            records.into_iter().zip(seqs).map(|(record, seq)| DisplayRecord { seq, ..record }).collect();
        for record in &saved {
            change.emit(DisplayEvent::DisplayMessageSaved { agent_id: ctx.agent_id.clone(), record: record.clone() });
        }
        Ok(saved)
    }

    /// Overwrites a record and queues its event on `change`.
    async fn update(
        &self,
        change: &mut Change,
        record: &DisplayRecord,
        agent_id: Option<&String>,
    ) -> Result<(), Error> {
        self.storage().update(record.clone()).await?;
        change.emit(DisplayEvent::DisplayMessageUpdated { agent_id: agent_id.cloned(), record: record.clone() });
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
        Self::check_ctx(scope, ctx)?;
        let message = message.into();
        if let Some(id) = message.id {
            validate::message_id(id)?;
        }
        let now = now_millis();
        let records: Vec<DisplayRecord> = split::drafts(&message)
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
        if records.is_empty() {
            return Ok(Vec::new());
        }
        self.insert(scope.clone(), ctx.clone(), records).await
    }

    /// Saves one record the integrator originates (an ask-user answer, a
    /// cancellation note). Emits `display_message_saved`.
    pub async fn save_synthetic_message(
        &self,
        scope: &Scope,
        message: SyntheticMessage,
        ctx: &DisplayContext,
    ) -> Result<DisplayRecord, Error> {
        Self::check_ctx(scope, ctx)?;
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
        let mut saved = self.insert(scope.clone(), ctx.clone(), vec![record]).await?;
        saved.pop().ok_or_else(|| Error::Internal("insert returned no record".into()))
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
        self.insert(scope.clone(), ctx, records).await
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
        let (scope, id) = (scope.clone(), conversation_id.to_owned());
        self.detached(move |d| async move {
            let mut records = {
                let _guard = d.storage().lock(scope.clone(), id.clone()).await;
                d.storage().list(scope, id, after, limit.saturating_add(1)).await?
            };
            let next_after = if records.len() > limit as usize {
                records.truncate(limit as usize);
                records.last().map(|r| r.seq)
            } else {
                None
            };
            Ok(DisplayPage { records, next_after })
        })
        .await
    }
}
