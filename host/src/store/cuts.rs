//! Cutting history (truncate-after, pop-last) without separating a tool call from
//! its result.

use std::collections::HashSet;

use super::Store;
use super::history::SCAN_BATCH;
use crate::adapter::raw::Range;
use crate::error::Error;
use crate::model::{Message, Part, Scope, TruncateOutcome};
use crate::util::clock::now_millis;
use crate::validate;

/// How far back from a cut the host looks for the call of a result the cut would
/// remove. A result that far from its call is treated as unpaired (and stays
/// loadable: crash repair handles orphans).
const MAX_PAIR_SCAN: u64 = 10_000;

/// Pages of a conversation in one direction, under the caller's lock.
struct Scan<'a> {
    store: &'a Store,
    scope: &'a Scope,
    id: &'a str,
    next: Option<Range>,
}

impl Scan<'_> {
    async fn next_page(&mut self) -> Result<Option<Vec<Message>>, Error> {
        let Some(range) = self.next else { return Ok(None) };
        let page = self.store.fetch(self.scope, self.id, range, SCAN_BATCH).await?.messages;
        self.next = match (range, page.first(), page.last()) {
            (Range::After(_), _, Some(last)) if page.len() == SCAN_BATCH as usize => Some(Range::After(last.seq)),
            (Range::Before(_), Some(first), _) if first.seq > 1 => Some(Range::Before(first.seq)),
            _ => None,
        };
        Ok(if page.is_empty() { None } else { Some(page) })
    }
}

/// A tool call a cut would keep while removing its result.
struct Split {
    call: String,
    call_seq: u64,
    result_seq: u64,
}

/// What cuts history, for the wording of a refusal.
#[derive(Clone, Copy)]
enum Cut {
    /// Truncate after this seq.
    After(u64),
    /// Pop the newest message.
    Pop,
}

impl Split {
    /// The refusal of `cut`, naming the call and the seqs to cut at instead.
    fn refusal(&self, cut: Cut) -> Error {
        let (call, call_seq, result_seq) = (validate::shown(&self.call), self.call_seq, self.result_seq);
        let before_call = call_seq.saturating_sub(1);
        Error::InvalidInput(match cut {
            Cut::After(seq) => format!(
                "truncating after seq {seq} would separate tool call \"{call}\" (seq {call_seq}) from its result \
                 (seq {result_seq}); truncate after seq {before_call} or after seq {result_seq}"
            ),
            Cut::Pop => format!(
                "pop would separate tool call \"{call}\" (seq {call_seq}) from its result (seq {result_seq}, the \
                 newest message); truncate after seq {before_call} to remove both"
            ),
        })
    }
}

impl Store {
    /// The tool call a cut after `seq` would keep while removing its result, if
    /// any. The caller holds the lock.
    async fn find_split(&self, scope: &Scope, id: &str, seq: u64) -> Result<Option<Split>, Error> {
        // Only ids are kept: the part that would be removed may be large.
        let mut removed_calls: HashSet<String> = HashSet::new();
        let mut removed_results: Vec<(String, u64)> = Vec::new();
        let mut forward = Scan { store: self, scope, id, next: Some(Range::After(seq)) };
        while let Some(page) = forward.next_page().await? {
            for m in &page {
                for p in &m.parts {
                    match p {
                        Part::ToolCall { id, .. } => {
                            removed_calls.insert(id.clone());
                        }
                        Part::ToolResult { call_id, .. } => removed_results.push((call_id.clone(), m.seq)),
                        _ => {}
                    }
                }
            }
        }
        let results: Vec<(&str, u64)> = removed_results
            .iter()
            .filter(|(call, _)| !removed_calls.contains(call))
            .map(|(call, seq)| (call.as_str(), *seq))
            .collect();
        if results.is_empty() {
            return Ok(None);
        }
        // Look for those calls among the messages that would be kept, newest first.
        let mut backward = Scan { store: self, scope, id, next: Some(Range::Before(seq.saturating_add(1))) };
        let mut scanned = 0u64;
        while let Some(page) = backward.next_page().await? {
            for m in page.iter().rev() {
                for p in &m.parts {
                    if let Part::ToolCall { id, .. } = p
                        && let Some((_, result_seq)) = results.iter().find(|(call, _)| *call == id)
                    {
                        return Ok(Some(Split { call: id.clone(), call_seq: m.seq, result_seq: *result_seq }));
                    }
                }
            }
            scanned += page.len() as u64;
            if scanned >= MAX_PAIR_SCAN {
                break;
            }
        }
        Ok(None)
    }

    pub(super) async fn truncate_after_now(
        &self,
        scope: &Scope,
        id: &str,
        seq: u64,
        expected_version: Option<u64>,
    ) -> Result<TruncateOutcome, Error> {
        self.check_key(scope, id)?;
        let _guard = self.lock_conversation(scope, id).await;
        self.truncate_locked(scope, id, seq, expected_version, Cut::After(seq)).await
    }

    async fn truncate_locked(
        &self,
        scope: &Scope,
        id: &str,
        seq: u64,
        expected_version: Option<u64>,
        cut: Cut,
    ) -> Result<TruncateOutcome, Error> {
        let last = self.owned_last_seq(scope, id).await?;
        if let Some(split) = self.find_split(scope, id, seq).await? {
            return Err(split.refusal(cut));
        }
        match self.client().truncate_after(scope, id, seq, expected_version, now_millis()).await {
            Ok(reply) => {
                if reply.removed > 0 {
                    self.seqs().set_last_seq(scope, id, seq.min(last));
                }
                Ok(TruncateOutcome { removed: reply.removed, version: reply.version })
            }
            Err(e) => {
                self.seqs().forget(scope, id);
                Err(e)
            }
        }
    }

    pub(super) async fn pop_last_now(&self, scope: &Scope, id: &str) -> Result<Option<Message>, Error> {
        self.check_key(scope, id)?;
        let _guard = self.lock_conversation(scope, id).await;
        let info = self.info_locked(scope, id).await?;
        if info.last_seq == 0 {
            return Ok(None);
        }
        let Some(last) = self.fetch(scope, id, Range::Latest, 1).await?.messages.pop() else {
            return Ok(None);
        };
        if last.seq != info.last_seq {
            return Err(self
                .client()
                .violation_in(id, format!("the newest message has seq {}, info says {}", last.seq, info.last_seq)));
        }
        self.truncate_locked(scope, id, last.seq.saturating_sub(1), Some(info.version), Cut::Pop).await?;
        Ok(Some(last))
    }
}
