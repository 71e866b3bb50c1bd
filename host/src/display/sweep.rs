//! The start-up sweep: cards a crash left `pending` or `executing` (nothing runs
//! those tools any more) become `interrupted`, each with an update event.
//!
//! 0.2.0 adapters page stale cards by position, so every card is visited once
//! however many keep failing to update. 0.1.0 adapters cannot page: the sweep
//! widens its window instead, until a page holds every stale card it has not seen.

use std::collections::HashSet;

use serde_json::Value;

use super::change::Change;
use super::{Display, lifecycle};
use crate::adapter::raw::DisplayPosition;
use crate::error::Error;
use crate::model::{DisplayRecord, Scope, SweepReport, ToolStatus};
use crate::util::clock::now_millis;

/// Statuses the start-up sweep looks for.
const STALE: [ToolStatus; 2] = [ToolStatus::Pending, ToolStatus::Executing];
pub(crate) const SWEEP_BATCH: u32 = 256;

fn position(card: &DisplayRecord) -> DisplayPosition {
    DisplayPosition { scope: card.scope.clone(), conversation_id: card.conversation_id.clone(), seq: card.seq }
}

impl Display {
    /// Marks every card left `pending` or `executing` (by a crash) as
    /// `interrupted`, emitting an update for each.
    pub async fn sweep(&self) -> Result<SweepReport, Error> {
        self.detached(|d| async move { d.sweep_now().await }).await
    }

    async fn sweep_now(&self) -> Result<SweepReport, Error> {
        if !self.storage().persistent() {
            return Ok(SweepReport::default());
        }
        let statuses: Vec<String> = STALE.iter().map(|s| s.as_str().to_owned()).collect();
        let mut report = SweepReport::default();
        if self.storage().paged_sweep() {
            let mut after = None;
            loop {
                let page = self.storage().stale(statuses.clone(), after.clone(), SWEEP_BATCH).await?;
                let Some(last) = page.last() else { break };
                after = Some(position(last));
                let full = page.len() == SWEEP_BATCH as usize;
                for card in page {
                    self.sweep_card(card, &mut report).await;
                }
                if !full {
                    break;
                }
            }
            return Ok(report);
        }
        let mut seen: HashSet<DisplayPosition> = HashSet::new();
        let mut window = SWEEP_BATCH;
        loop {
            let page = self.storage().stale(statuses.clone(), None, window).await?;
            let full = page.len() == window as usize;
            let mut progressed = false;
            for card in page {
                if seen.insert(position(&card)) {
                    progressed = true;
                    self.sweep_card(card, &mut report).await;
                }
            }
            match (progressed, full) {
                (_, false) if !progressed => return Ok(report),
                // Every card of a full page was seen (they keep failing): look further.
                (false, true) => window = window.saturating_add(SWEEP_BATCH),
                _ => {}
            }
        }
    }

    async fn sweep_card(&self, card: DisplayRecord, report: &mut SweepReport) {
        let seq = card.seq;
        match self.sweep_one(card).await {
            Ok(true) => report.interrupted += 1,
            Ok(false) => {} // it moved on its own meanwhile
            Err(error) => {
                // One damaged record must not stop start-up for everyone.
                tracing::warn!(%error, seq, "start-up sweep skipped a tool card it could not update");
                report.skipped += 1;
            }
        }
    }

    /// Marks one stale card interrupted; `Ok(false)` if it is no longer stale.
    async fn sweep_one(&self, card: DisplayRecord) -> Result<bool, Error> {
        let mut change = self.change(&card.scope, &card.conversation_id).await?;
        let swept = self.sweep_in(&mut change, card).await;
        change.finish(self).await;
        swept
    }

    async fn sweep_in(&self, change: &mut Change, mut card: DisplayRecord) -> Result<bool, Error> {
        let (scope, conversation): (Scope, String) = (card.scope.clone(), card.conversation_id.clone());
        // Re-read under the lock: the card may have moved since it was found.
        if let Some(call_id) = card.tool_call_id.clone() {
            let current = self.storage().by_call(scope, conversation, call_id).await?;
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
        self.update(change, &card, None).await?;
        Ok(true)
    }
}
