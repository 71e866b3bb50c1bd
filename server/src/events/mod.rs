//! Display events for Server-Sent Events: one bounded replay buffer per scope.
//!
//! One task ([`EventHub::run`]) receives every event the [`stowage::Display`]
//! emits (each persisted change, exactly once, in order per conversation) and
//! appends it to its scope's buffer with the next id of that buffer. Ids are
//! `EPOCH-N`: `EPOCH` is random per buffer (a new one after a restart or after an
//! idle buffer was dropped), `N` counts from 1 without gaps. Per-scope counters
//! keep one tenant from learning anything about another's traffic.
//!
//! A stream resumes after a `Last-Event-ID`: it gets every buffered event after
//! that id, in order, then live ones. If the buffer cannot prove that nothing in
//! between was lost — another epoch (restart, dropped buffer), an id older than
//! the oldest kept event, the fan-out task lagging behind the display — the stream
//! says so with an `events_lost` event (see [`sse`]) instead of skipping silently;
//! the client reloads the display list and carries on from there.

pub mod sse;

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use stowage::{Display, DisplayEvent, Scope};
use tokio::sync::{broadcast, watch};

use crate::config::EventOptions;
use crate::metrics::Metrics;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section here leaves the data consistent; a panic elsewhere
    // must not take event delivery down with it.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A random 64-bit value (std's per-process randomly seeded hasher).
fn random_u64() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher
        .write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
    hasher.finish()
}

/// What a buffer holds.
#[derive(Clone, Debug)]
pub enum EntryKind {
    /// A display event: its SSE event name and its JSON.
    Event { name: &'static str, conversation: String, data: Arc<str> },
    /// Events may have been lost here (the fan-out lagged behind the display).
    Gap,
}

#[derive(Clone, Debug)]
pub struct Entry {
    pub id: u64,
    pub kind: EntryKind,
}

/// What a reader gets.
#[derive(Debug)]
pub enum Read {
    /// Entries after the cursor (possibly none), and the new cursor.
    Entries(Vec<Entry>, u64),
    /// The cursor is not in this buffer's history; continue from `latest`.
    Lost { latest: u64 },
}

struct Buffer {
    entries: VecDeque<Entry>,
    /// Every entry with an id above `floor` is still held.
    floor: u64,
    last_id: u64,
    last_used: u64,
}

/// The replay buffer of one scope.
pub struct ScopeLog {
    epoch: String,
    capacity: usize,
    buffer: Mutex<Buffer>,
    /// The newest id, for waking readers.
    notify: watch::Sender<u64>,
}

impl ScopeLog {
    fn new(capacity: usize, tick: u64) -> Self {
        let buffer = Buffer { entries: VecDeque::new(), floor: 0, last_id: 0, last_used: tick };
        let (notify, _) = watch::channel(0);
        Self { epoch: format!("{:016x}", random_u64()), capacity, buffer: Mutex::new(buffer), notify }
    }

    pub fn epoch(&self) -> &str {
        &self.epoch
    }

    /// The newest id (0 when nothing was published yet).
    pub fn latest(&self) -> u64 {
        lock(&self.buffer).last_id
    }

    pub fn watch(&self) -> watch::Receiver<u64> {
        self.notify.subscribe()
    }

    fn push(&self, kind: EntryKind, tick: u64) {
        let id = {
            let mut buffer = lock(&self.buffer);
            buffer.last_id += 1;
            let id = buffer.last_id;
            buffer.entries.push_back(Entry { id, kind });
            while buffer.entries.len() > self.capacity {
                if let Some(old) = buffer.entries.pop_front() {
                    buffer.floor = old.id;
                }
            }
            buffer.last_used = tick;
            id
        };
        self.notify.send_replace(id);
    }

    /// At most `max` entries after `cursor`, those of `conversation` (and gaps)
    /// when given. The cursor moves past entries the filter skips.
    pub fn read_after(&self, cursor: u64, conversation: Option<&str>, max: usize) -> Read {
        let buffer = lock(&self.buffer);
        if cursor < buffer.floor || cursor > buffer.last_id {
            return Read::Lost { latest: buffer.last_id };
        }
        let start = buffer.entries.partition_point(|e| e.id <= cursor);
        let mut out = Vec::new();
        let mut moved_to = cursor;
        for entry in buffer.entries.range(start..).take(max) {
            moved_to = entry.id;
            let wanted = match (&entry.kind, conversation) {
                (EntryKind::Event { conversation: c, .. }, Some(wanted)) => c == wanted,
                _ => true,
            };
            if wanted {
                out.push(entry.clone());
            }
        }
        Read::Entries(out, moved_to)
    }
}

struct HubState {
    logs: HashMap<Scope, Arc<ScopeLog>>,
    tick: u64,
}

/// Every scope's replay buffer.
#[derive(Clone)]
pub struct EventHub {
    options: EventOptions,
    state: Arc<Mutex<HubState>>,
}

impl EventHub {
    pub fn new(options: EventOptions) -> Self {
        Self { options, state: Arc::new(Mutex::new(HubState { logs: HashMap::new(), tick: 0 })) }
    }

    /// The buffer of `scope`, created if needed. Beyond `max_scopes`, the least
    /// recently written buffer nobody reads is dropped first (a stream that later
    /// resumes from it gets `events_lost`: its epoch is gone).
    pub fn log(&self, scope: &Scope) -> Arc<ScopeLog> {
        let mut state = lock(&self.state);
        state.tick += 1;
        let tick = state.tick;
        if let Some(log) = state.logs.get(scope) {
            return Arc::clone(log);
        }
        if state.logs.len() >= self.options.max_scopes {
            let idle = state
                .logs
                .iter()
                .filter(|(_, log)| Arc::strong_count(log) == 1)
                .min_by_key(|(_, log)| lock(&log.buffer).last_used)
                .map(|(scope, _)| scope.clone());
            if let Some(idle) = idle {
                state.logs.remove(&idle);
            }
        }
        let log = Arc::new(ScopeLog::new(self.options.replay_events, tick));
        state.logs.insert(scope.clone(), Arc::clone(&log));
        log
    }

    fn publish(&self, event: &DisplayEvent, metrics: &Metrics) {
        let record = event.record();
        let name = match event {
            DisplayEvent::DisplayMessageSaved { .. } => "display_message_saved",
            DisplayEvent::DisplayMessageUpdated { .. } => "display_message_updated",
        };
        let data: Arc<str> = match serde_json::to_string(event) {
            Ok(text) => text.into(),
            Err(e) => {
                tracing::error!("display event of {} is not serialisable: {e}", record.conversation_id);
                self.gap_in(&record.scope);
                return;
            }
        };
        let log = self.log(&record.scope);
        let tick = lock(&self.state).tick;
        log.push(EntryKind::Event { name, conversation: record.conversation_id.clone(), data }, tick);
        metrics.event_published();
    }

    fn gap_in(&self, scope: &Scope) {
        let log = self.log(scope);
        let tick = lock(&self.state).tick;
        log.push(EntryKind::Gap, tick);
    }

    /// Marks a possible loss in every buffer.
    fn gap_everywhere(&self) {
        let (logs, tick): (Vec<Arc<ScopeLog>>, u64) = {
            let state = lock(&self.state);
            (state.logs.values().cloned().collect(), state.tick)
        };
        for log in logs {
            log.push(EntryKind::Gap, tick);
        }
    }

    /// Subscribes to `display` now (call before serving) and returns the fan-out
    /// task: it runs until the display is dropped.
    pub fn run(&self, display: &Display, metrics: Arc<Metrics>) -> impl Future<Output = ()> + Send + 'static {
        let mut events = display.subscribe();
        let hub = self.clone();
        async move {
            loop {
                match events.recv().await {
                    Ok(event) => hub.publish(&event, &metrics),
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!("display events: the fan-out missed {missed}; streams are told (events_lost)");
                        hub.gap_everywhere();
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(log: &ScopeLog, conversation: &str) {
        log.push(EntryKind::Event { name: "e", conversation: conversation.into(), data: Arc::from("{}") }, 0);
    }

    fn ids(read: Read) -> Vec<u64> {
        match read {
            Read::Entries(entries, _) => entries.iter().map(|e| e.id).collect(),
            Read::Lost { .. } => panic!("lost"),
        }
    }

    #[test]
    fn buffers_replay_in_order_filter_and_report_losses() {
        let log = ScopeLog::new(3, 0);
        for conversation in ["a", "b", "a", "a"] {
            event(&log, conversation);
        }
        // Capacity 3: id 1 is gone, so a reader at 0 lost it; a reader at 1 did not.
        assert!(matches!(log.read_after(0, None, 10), Read::Lost { latest: 4 }));
        assert_eq!(ids(log.read_after(1, None, 10)), vec![2, 3, 4]);
        assert_eq!(ids(log.read_after(1, Some("a"), 10)), vec![3, 4]);
        assert_eq!(ids(log.read_after(2, None, 1)), vec![3]);
        match log.read_after(1, Some("a"), 1) {
            Read::Entries(entries, cursor) => assert!(entries.is_empty() && cursor == 2, "skipped b moves the cursor"),
            Read::Lost { .. } => panic!("lost"),
        }
        assert!(matches!(log.read_after(9, None, 10), Read::Lost { .. }), "a future id is not trusted");
    }

    #[test]
    fn idle_buffers_are_dropped_beyond_the_cap_and_get_a_new_epoch() {
        let hub = EventHub::new(EventOptions { max_scopes: 1, ..EventOptions::default() });
        let a = Scope::new("t", "a");
        let first = hub.log(&a).epoch().to_owned();
        let held = hub.log(&Scope::new("t", "b"));
        assert_ne!(hub.log(&a).epoch(), first, "a's idle buffer was dropped for b's");
        assert_eq!(hub.log(&Scope::new("t", "b")).epoch(), held.epoch(), "a buffer being read is kept");
    }
}
