//! An in-memory backend that keeps contract 0.2.0 exactly, with hooks that make
//! its answers lie: the client's checks are tested against it without wasm.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Mutex;

use crate::adapter::backend::{ConversationBackend, DisplayBackend, Features};
use crate::adapter::raw::{
    AppendReply, DisplayPosition, InsertReply, Range, RawInfo, RawLocated, RawMeta, RawStored, RawStoredDisplay,
    TruncateReply,
};
use crate::error::Error;
use crate::model::Scope;
use crate::wit::ContractVersion;

type Hook<T> = Option<Box<dyn FnMut(&mut T) + Send>>;

/// Ways to make the fake lie: each changes an answer before it is returned.
#[derive(Default)]
pub struct Tamper {
    pub info: Hook<RawInfo>,
    pub list: Hook<Vec<RawInfo>>,
    pub load: Hook<Vec<RawStored>>,
    pub append: Hook<AppendReply>,
    pub insert: Hook<InsertReply>,
    pub display: Hook<Vec<RawStoredDisplay>>,
    pub stale: Hook<Vec<RawLocated>>,
}

struct Conversation {
    info: RawInfo,
    messages: Vec<RawStored>,
}

#[derive(Default)]
struct State {
    conversations: BTreeMap<(Scope, String), Conversation>,
    display: BTreeMap<(Scope, String), Vec<RawStoredDisplay>>,
}

#[derive(Default)]
pub struct Fake {
    state: Mutex<State>,
    pub tamper: Mutex<Tamper>,
}

fn hook<T>(slot: &mut Hook<T>, value: &mut T) {
    if let Some(f) = slot.as_mut() {
        f(value);
    }
}

impl Fake {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn tampered<T>(&self, mut value: T, pick: impl FnOnce(&mut Tamper) -> &mut Hook<T>) -> T {
        if let Ok(mut tamper) = self.tamper.lock() {
            hook(pick(&mut tamper), &mut value);
        }
        value
    }
}

macro_rules! ready {
    ($e:expr) => {{
        let value = $e;
        async move { value }
    }};
}

impl ConversationBackend for Fake {
    fn features(&self) -> Features {
        Features::of(ContractVersion::V0_2)
    }

    fn open(
        &self,
        scope: &Scope,
        id: &str,
        meta: RawMeta,
        now: i64,
    ) -> impl Future<Output = Result<RawInfo, Error>> + Send {
        let info = {
            let mut state = self.state();
            let entry = state.conversations.entry((scope.clone(), id.to_owned())).or_insert_with(|| Conversation {
                info: RawInfo {
                    id: id.to_owned(),
                    scope: scope.clone(),
                    meta,
                    created_at: now,
                    updated_at: now,
                    message_count: 0,
                    last_seq: 0,
                    version: 0,
                },
                messages: Vec::new(),
            });
            entry.info.clone()
        };
        ready!(Ok(self.tampered(info, |t| &mut t.info)))
    }

    fn info(&self, scope: &Scope, id: &str) -> impl Future<Output = Result<RawInfo, Error>> + Send {
        let found = self.state().conversations.get(&(scope.clone(), id.to_owned())).map(|c| c.info.clone());
        ready!(found.map(|info| self.tampered(info, |t| &mut t.info)).ok_or(Error::NotFound))
    }

    fn update_meta(&self, scope: &Scope, id: &str, meta: RawMeta) -> impl Future<Output = Result<(), Error>> + Send {
        let mut state = self.state();
        let found = state.conversations.get_mut(&(scope.clone(), id.to_owned()));
        ready!(found.map(|c| c.info.meta = meta).ok_or(Error::NotFound))
    }

    fn append(
        &self,
        scope: &Scope,
        id: &str,
        messages: Vec<RawStored>,
        expected_version: Option<u64>,
        now: i64,
    ) -> impl Future<Output = Result<AppendReply, Error>> + Send {
        let reply = (|| {
            let mut state = self.state();
            let c = state.conversations.get_mut(&(scope.clone(), id.to_owned())).ok_or(Error::NotFound)?;
            let dups: Vec<(u32, u64)> = messages
                .iter()
                .enumerate()
                .filter_map(|(i, m)| {
                    c.messages.iter().find(|s| s.message.id == m.message.id).map(|s| (i as u32, s.seq))
                })
                .collect();
            if !dups.is_empty() {
                return Ok(AppendReply::AlreadyStored { seqs: dups, version: c.info.version });
            }
            if let Some(expected) = expected_version
                && expected != c.info.version
            {
                return Err(Error::Conflict { expected, actual: c.info.version });
            }
            if messages.first().is_some_and(|m| m.seq != c.info.last_seq + 1) {
                return Ok(AppendReply::OutOfSequence { last_seq: c.info.last_seq });
            }
            let seqs: Vec<u64> = messages.iter().map(|m| m.seq).collect();
            c.info.last_seq += messages.len() as u64;
            c.info.message_count = c.info.last_seq;
            c.info.version += 1;
            c.info.updated_at = now;
            c.messages.extend(messages);
            Ok(AppendReply::Stored { version: c.info.version, stored: seqs.len() as u32, seqs })
        })();
        ready!(reply.map(|r| self.tampered(r, |t| &mut t.append)))
    }

    fn replace(
        &self,
        scope: &Scope,
        id: &str,
        messages: Vec<RawStored>,
        _expected_version: Option<u64>,
        _now: i64,
    ) -> impl Future<Output = Result<u64, Error>> + Send {
        let reply = (|| {
            let mut state = self.state();
            let c = state.conversations.get_mut(&(scope.clone(), id.to_owned())).ok_or(Error::NotFound)?;
            c.info.last_seq = messages.len() as u64;
            c.info.message_count = c.info.last_seq;
            c.info.version += 1;
            c.messages = messages;
            Ok(c.info.version)
        })();
        ready!(reply)
    }

    fn load(
        &self,
        scope: &Scope,
        id: &str,
        range: Range,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<RawStored>, Error>> + Send {
        let found = (|| {
            let state = self.state();
            let c = state.conversations.get(&(scope.clone(), id.to_owned())).ok_or(Error::NotFound)?;
            let limit = limit as usize;
            let all = &c.messages;
            Ok(match range {
                Range::Latest => all[all.len().saturating_sub(limit)..].to_vec(),
                Range::After(after) => all.iter().filter(|m| m.seq > after).take(limit).cloned().collect(),
                Range::Before(before) => {
                    let older: Vec<RawStored> = all.iter().filter(|m| m.seq < before).cloned().collect();
                    older[older.len().saturating_sub(limit)..].to_vec()
                }
            })
        })();
        ready!(found.map(|f| self.tampered(f, |t| &mut t.load)))
    }

    fn truncate_after(
        &self,
        scope: &Scope,
        id: &str,
        seq: u64,
        _expected_version: Option<u64>,
        _now: i64,
    ) -> impl Future<Output = Result<TruncateReply, Error>> + Send {
        let reply = (|| {
            let mut state = self.state();
            let c = state.conversations.get_mut(&(scope.clone(), id.to_owned())).ok_or(Error::NotFound)?;
            let before = c.messages.len();
            c.messages.retain(|m| m.seq <= seq);
            let removed = (before - c.messages.len()) as u64;
            if removed > 0 {
                c.info.last_seq = seq;
                c.info.message_count = seq;
                c.info.version += 1;
            }
            Ok(TruncateReply { removed, version: c.info.version })
        })();
        ready!(reply)
    }

    fn delete(&self, scope: &Scope, id: &str) -> impl Future<Output = Result<bool, Error>> + Send {
        let mut state = self.state();
        let key = (scope.clone(), id.to_owned());
        let deleted = state.conversations.remove(&key).is_some() | state.display.remove(&key).is_some();
        ready!(Ok(deleted))
    }

    fn list(
        &self,
        scope: &Scope,
        after: Option<String>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<RawInfo>, Error>> + Send {
        let found: Vec<RawInfo> = self
            .state()
            .conversations
            .iter()
            .filter(|((s, id), _)| s == scope && after.as_ref().is_none_or(|a| id > a))
            .take(limit as usize)
            .map(|(_, c)| c.info.clone())
            .collect();
        ready!(Ok(self.tampered(found, |t| &mut t.list)))
    }
}

impl DisplayBackend for Fake {
    fn display_insert(
        &self,
        scope: &Scope,
        id: &str,
        records: Vec<RawStoredDisplay>,
    ) -> impl Future<Output = Result<InsertReply, Error>> + Send {
        let reply = {
            let mut state = self.state();
            let stored = state.display.entry((scope.clone(), id.to_owned())).or_default();
            let last = stored.last().map_or(0, |r| r.seq);
            if records.first().is_some_and(|r| r.seq != last + 1) {
                InsertReply::OutOfSequence { last_seq: last }
            } else {
                let seqs = records.iter().map(|r| r.seq).collect();
                stored.extend(records);
                InsertReply::Stored { seqs }
            }
        };
        ready!(Ok(self.tampered(reply, |t| &mut t.insert)))
    }

    fn display_by_call(
        &self,
        scope: &Scope,
        id: &str,
        call_id: &str,
    ) -> impl Future<Output = Result<Vec<RawStoredDisplay>, Error>> + Send {
        let found: Vec<RawStoredDisplay> = self
            .state()
            .display
            .get(&(scope.clone(), id.to_owned()))
            .map(|all| all.iter().filter(|r| r.record.tool_call_id.as_deref() == Some(call_id)).cloned().collect())
            .unwrap_or_default();
        ready!(Ok(self.tampered(found, |t| &mut t.display)))
    }

    fn display_update(
        &self,
        scope: &Scope,
        id: &str,
        record: RawStoredDisplay,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        let mut state = self.state();
        let slot = state
            .display
            .get_mut(&(scope.clone(), id.to_owned()))
            .and_then(|all| all.iter_mut().find(|r| r.seq == record.seq));
        let result = match slot {
            Some(slot) => {
                *slot = record;
                Ok(())
            }
            None => Err(Error::NotFound),
        };
        ready!(result)
    }

    fn display_list(
        &self,
        scope: &Scope,
        id: &str,
        after: u64,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<RawStoredDisplay>, Error>> + Send {
        let found: Vec<RawStoredDisplay> = self
            .state()
            .display
            .get(&(scope.clone(), id.to_owned()))
            .map(|all| all.iter().filter(|r| r.seq > after).take(limit as usize).cloned().collect())
            .unwrap_or_default();
        ready!(Ok(self.tampered(found, |t| &mut t.display)))
    }

    fn display_find_by_status(
        &self,
        statuses: Vec<String>,
        after: Option<DisplayPosition>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<RawLocated>, Error>> + Send {
        let found: Vec<RawLocated> = self
            .state()
            .display
            .iter()
            .flat_map(|((scope, id), records)| {
                records.iter().map(move |r| RawLocated {
                    scope: scope.clone(),
                    conversation_id: id.clone(),
                    stored: r.clone(),
                })
            })
            .filter(|r| r.stored.record.status.as_ref().is_some_and(|s| statuses.contains(s)))
            .filter(|r| {
                after.as_ref().is_none_or(|a| {
                    DisplayPosition {
                        scope: r.scope.clone(),
                        conversation_id: r.conversation_id.clone(),
                        seq: r.stored.seq,
                    } > *a
                })
            })
            .take(limit as usize)
            .collect();
        ready!(Ok(self.tampered(found, |t| &mut t.stale)))
    }
}
