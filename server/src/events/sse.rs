//! One SSE stream over a scope's replay buffer, optionally of one conversation.
//!
//! Events on the wire:
//! - `display_message_saved` / `display_message_updated`: `id: EPOCH-N`, data the
//!   [`stowage::DisplayEvent`] JSON (`{"event":…,"agent_id":…,"record":{…}}`).
//! - `events_lost`: `id:` where to resume from, data
//!   `{"code":"events_lost","message":…,"last_event_id":…}`. Events between the
//!   client's `Last-Event-ID` and this id may be missing: reload the display list
//!   (`GET …/display`) and apply the events that follow.
//!
//! The stream ends when the server shuts down (a client reconnects with its
//! `Last-Event-ID`) and holds a per-tenant stream permit while open.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use tokio::sync::{OwnedSemaphorePermit, watch};

use super::{EntryKind, Read, ScopeLog};
use crate::errors::{ApiError, Code};
use crate::metrics::Metrics;

/// Entries read from the buffer per wake-up.
const READ_BATCH: usize = 256;

/// Where a stream starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Start {
    /// Only events published from now on.
    Now,
    /// After this `Last-Event-ID` (kept verbatim for the `events_lost` notice).
    After { epoch: String, id: u64, raw: String },
}

impl Start {
    /// Parses a `Last-Event-ID` (`EPOCH-N`; empty means none).
    pub fn parse(last_event_id: Option<&str>) -> Result<Self, ApiError> {
        let Some(raw) = last_event_id.map(str::trim).filter(|s| !s.is_empty()) else {
            return Ok(Start::Now);
        };
        let invalid =
            || ApiError::new(Code::InvalidLastEventId, "Last-Event-ID must be an id this server sent (EPOCH-N)");
        let (epoch, n) = raw.split_once('-').ok_or_else(invalid)?;
        if epoch.is_empty() || epoch.len() > 32 || !epoch.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(invalid());
        }
        let id = n.parse::<u64>().map_err(|_| invalid())?;
        Ok(Start::After { epoch: epoch.to_owned(), id, raw: raw.to_owned() })
    }
}

/// Counts the stream as open until dropped.
struct Open {
    metrics: Arc<Metrics>,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Open {
    fn drop(&mut self) {
        self.metrics.stream_closed();
    }
}

struct Subscriber {
    log: Arc<ScopeLog>,
    wake: watch::Receiver<u64>,
    shutdown: watch::Receiver<bool>,
    conversation: Option<String>,
    cursor: u64,
    pending: VecDeque<Event>,
    metrics: Arc<Metrics>,
    _open: Open,
}

fn lost_event(log: &ScopeLog, latest: u64, requested: &str) -> Event {
    let data = serde_json::json!({
        "code": "events_lost",
        "message": "events after last_event_id may be missing; reload the display list and apply the events that follow",
        "last_event_id": requested,
    });
    Event::default().event("events_lost").id(format!("{}-{latest}", log.epoch())).data(data.to_string())
}

impl Subscriber {
    /// Fills `pending` from the buffer; false when there was nothing new.
    fn fill(&mut self) -> bool {
        match self.log.read_after(self.cursor, self.conversation.as_deref(), READ_BATCH) {
            Read::Lost { latest } => {
                let requested = format!("{}-{}", self.log.epoch(), self.cursor);
                self.pending.push_back(lost_event(&self.log, latest, &requested));
                self.metrics.events_lost();
                self.cursor = latest;
            }
            Read::Entries(entries, cursor) => {
                self.cursor = cursor;
                for entry in entries {
                    let id = format!("{}-{}", self.log.epoch(), entry.id);
                    let event = match entry.kind {
                        EntryKind::Event { name, data, .. } => Event::default().event(name).id(id).data(&*data),
                        EntryKind::Gap => {
                            self.metrics.events_lost();
                            lost_event(&self.log, entry.id, &format!("{}-{}", self.log.epoch(), entry.id - 1))
                        }
                    };
                    self.pending.push_back(event);
                }
            }
        }
        !self.pending.is_empty()
    }

    async fn next(mut self) -> Option<(Result<Event, Infallible>, Self)> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some((Ok(event), self));
            }
            if *self.shutdown.borrow() {
                return None;
            }
            // Mark the current id seen *before* reading, so a push between the
            // read and the wait still wakes us.
            self.wake.borrow_and_update();
            if self.fill() {
                continue;
            }
            tokio::select! {
                changed = self.wake.changed() => if changed.is_err() { return None },
                _ = self.shutdown.changed() => {}
            }
        }
    }
}

/// Everything a stream needs.
pub struct StreamSpec {
    pub log: Arc<ScopeLog>,
    pub start: Start,
    pub conversation: Option<String>,
    pub shutdown: watch::Receiver<bool>,
    pub metrics: Arc<Metrics>,
    pub permit: OwnedSemaphorePermit,
    pub keep_alive: std::time::Duration,
}

/// The SSE response.
pub fn stream(spec: StreamSpec) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let StreamSpec { log, start, conversation, shutdown, metrics, permit, keep_alive } = spec;
    let mut pending = VecDeque::new();
    let cursor = match start {
        Start::Now => log.latest(),
        Start::After { epoch, raw, .. } if epoch != log.epoch() => {
            // Another epoch: the server restarted or the buffer was dropped.
            let latest = log.latest();
            pending.push_back(lost_event(&log, latest, &raw));
            metrics.events_lost();
            latest
        }
        Start::After { id, .. } => id,
    };
    metrics.stream_opened();
    let open = Open { metrics: Arc::clone(&metrics), _permit: permit };
    let wake = log.watch();
    let subscriber = Subscriber { log, wake, shutdown, conversation, cursor, pending, metrics, _open: open };
    let events = futures_util::stream::unfold(subscriber, Subscriber::next);
    Sse::new(events).keep_alive(KeepAlive::new().interval(keep_alive))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_event_ids_parse_or_are_refused() {
        assert_eq!(Start::parse(None).ok(), Some(Start::Now));
        assert_eq!(Start::parse(Some(" ")).ok(), Some(Start::Now));
        assert_eq!(
            Start::parse(Some("00ff-12")).ok(),
            Some(Start::After { epoch: "00ff".into(), id: 12, raw: "00ff-12".into() })
        );
        for bad in ["12", "zz-1", "ab-", "ab-x", "-3"] {
            assert_eq!(Start::parse(Some(bad)).map_err(|e| e.code), Err(Code::InvalidLastEventId), "{bad}");
        }
    }
}
