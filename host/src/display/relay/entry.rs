//! Journal entries: a display event as the journal keeps it, and the checks on
//! the way back. Host logic only; the journal's storage is elsewhere.
//!
//! An entry names its conversation in clear (the journal is read in order, not
//! searched) and carries the event as JSON, sealed when the store seals and
//! tagged under the binding (scope, conversation, origin, counter). A reader
//! takes an entry only if the tag verifies, the event is of the conversation the
//! entry names, and its counter is past the last one taken from that origin — so
//! an entry that was forged, changed, moved or copied is dropped, never shown.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::integrity::{Protector, Verdict, bindings};
use crate::model::{DisplayEvent, DisplayRecord, Scope};

/// An event as the journal encodes it (a plain struct: the record's verbatim
/// JSON fields cannot pass through serde's internally tagged enums).
#[derive(Serialize, Deserialize)]
struct Wire {
    updated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent_id: Option<String>,
    record: DisplayRecord,
}

impl Wire {
    fn of(event: &DisplayEvent) -> Self {
        let (updated, agent_id, record) = match event.clone() {
            DisplayEvent::DisplayMessageSaved { agent_id, record } => (false, agent_id, record),
            DisplayEvent::DisplayMessageUpdated { agent_id, record } => (true, agent_id, record),
        };
        Self { updated, agent_id, record }
    }

    fn event(self) -> DisplayEvent {
        let Self { updated, agent_id, record } = self;
        if updated {
            DisplayEvent::DisplayMessageUpdated { agent_id, record }
        } else {
            DisplayEvent::DisplayMessageSaved { agent_id, record }
        }
    }
}

/// One journal entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The publishing host's origin id (random per relay, hex).
    pub origin: String,
    /// Its number among the origin's entries; increases in journal order.
    pub counter: u64,
    pub scope: Scope,
    pub conversation_id: String,
    /// The event's JSON, sealed when the store seals.
    pub payload: Vec<u8>,
    /// The integrity tag (empty when the store keeps no tags).
    pub tag: Vec<u8>,
}

/// Why an entry was dropped (never its content).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Dropped {
    #[error("its integrity tag does not verify: {0}")]
    Tag(String),
    #[error("it cannot be opened or decoded: {0}")]
    Payload(String),
    #[error("its event belongs to another conversation than the entry names")]
    Moved,
    #[error("it repeats counter {counter} of its origin (last taken {last})")]
    Replayed { counter: u64, last: u64 },
}

/// Builds the entry of `event`.
pub fn seal(protector: &Protector, origin: &str, counter: u64, event: &DisplayEvent) -> Result<Entry, String> {
    let record = event.record();
    let (scope, conversation_id) = (record.scope.clone(), record.conversation_id.clone());
    let binding = bindings::display_event(&scope, &conversation_id, origin, counter);
    let json = serde_json::to_vec(&Wire::of(event)).map_err(|e| format!("encoding a display event: {e}"))?;
    let payload = protector.seal(&scope, &binding, json)?;
    let tag = protector.tag(&binding, &payload);
    Ok(Entry { origin: origin.to_owned(), counter, scope, conversation_id, payload, tag })
}

/// Reads entries in journal order, remembering each origin's last counter.
#[derive(Default)]
pub struct Reader {
    last: HashMap<String, u64>,
}

impl Reader {
    /// The event of `entry`, if it is authentic and new.
    pub fn open(&mut self, protector: &Protector, entry: Entry) -> Result<DisplayEvent, Dropped> {
        let binding = bindings::display_event(&entry.scope, &entry.conversation_id, &entry.origin, entry.counter);
        match protector.verify(&entry.tag, &binding, &entry.payload, true) {
            Verdict::Verified => {}
            Verdict::Untagged => return Err(Dropped::Tag("the entry has no tag".into())),
            Verdict::Refused(why) => return Err(Dropped::Tag(why)),
        }
        let last = self.last.get(&entry.origin).copied();
        if let Some(last) = last.filter(|last| entry.counter <= *last) {
            return Err(Dropped::Replayed { counter: entry.counter, last });
        }
        let json = protector.open(&entry.scope, &binding, &entry.payload).map_err(Dropped::Payload)?;
        let wire: Wire = serde_json::from_slice(&json).map_err(|e| Dropped::Payload(e.to_string()))?;
        let event = wire.event();
        let record = event.record();
        if record.scope != entry.scope || record.conversation_id != entry.conversation_id {
            return Err(Dropped::Moved);
        }
        self.last.insert(entry.origin, entry.counter);
        Ok(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Integrity;
    use crate::integrity::Keyring;
    use crate::model::{DisplayRecord, JsonText};

    fn event(conversation: &str, seq: u64) -> DisplayEvent {
        let record = DisplayRecord {
            scope: Scope::new("t", "u"),
            conversation_id: conversation.into(),
            seq,
            message_id: None,
            message_type: "assistant".into(),
            content_type: "text".into(),
            tool_call_id: None,
            status: None,
            content: JsonText::from_value(&serde_json::json!({ "text": "secret words" })),
            metadata: None,
            created_at: 1,
            updated_at: 1,
        };
        DisplayEvent::DisplayMessageSaved { agent_id: None, record }
    }

    fn protector(seal: bool) -> Result<Protector, String> {
        let settings = Integrity { seal, ..Integrity::default() };
        Ok(Protector::new(settings, Keyring::generate()?))
    }

    #[test]
    fn authentic_entries_open_once_and_in_counter_order() -> Result<(), String> {
        let p = protector(false)?;
        let (first, second) = (seal(&p, "a", 1, &event("c", 1))?, seal(&p, "a", 2, &event("c", 2))?);
        let mut reader = Reader::default();
        assert_eq!(reader.open(&p, first.clone()), Ok(event("c", 1)));
        assert_eq!(reader.open(&p, second.clone()), Ok(event("c", 2)));
        assert_eq!(reader.open(&p, first), Err(Dropped::Replayed { counter: 1, last: 2 }));
        assert_eq!(reader.open(&p, second), Err(Dropped::Replayed { counter: 2, last: 2 }));
        let other_origin = seal(&p, "b", 1, &event("c", 3))?;
        assert_eq!(reader.open(&p, other_origin), Ok(event("c", 3)), "counters are per origin");
        Ok(())
    }

    #[test]
    fn forged_changed_and_moved_entries_are_dropped() -> Result<(), String> {
        let p = protector(false)?;
        let genuine = seal(&p, "a", 1, &event("c", 1))?;
        let mut reader = Reader::default();
        let mut changed = genuine.clone();
        changed.payload = serde_json::to_vec(&Wire::of(&event("c", 9))).map_err(|e| e.to_string())?;
        assert!(matches!(reader.open(&p, changed), Err(Dropped::Tag(_))));
        let moved = Entry { conversation_id: "other".into(), ..genuine.clone() };
        assert!(matches!(reader.open(&p, moved), Err(Dropped::Tag(_))));
        let renumbered = Entry { counter: 7, ..genuine.clone() };
        assert!(matches!(reader.open(&p, renumbered), Err(Dropped::Tag(_))));
        let untagged = Entry { tag: Vec::new(), ..genuine.clone() };
        assert!(matches!(reader.open(&p, untagged), Err(Dropped::Tag(_))));
        let foreign = seal(&protector(false)?, "a", 1, &event("c", 1))?;
        assert!(matches!(reader.open(&p, foreign), Err(Dropped::Tag(_))), "another store's key");
        assert_eq!(reader.open(&p, genuine), Ok(event("c", 1)), "nothing dropped counted as taken");
        Ok(())
    }

    #[test]
    fn sealed_entries_hold_no_plaintext() -> Result<(), String> {
        let p = protector(true)?;
        let entry = seal(&p, "a", 1, &event("c", 1))?;
        assert!(!entry.payload.windows(b"secret".len()).any(|w| w == b"secret"));
        assert_eq!(Reader::default().open(&p, entry), Ok(event("c", 1)));
        Ok(())
    }
}
