//! The display-store half of the checked client.

use super::{Client, checks};
use crate::adapter::backend::{ConversationBackend, DisplayBackend};
use crate::adapter::raw::{DisplayPosition, InsertReply};
use crate::error::Error;
use crate::model::{DisplayRecord, Scope};
use crate::util::parallel;

impl<B: ConversationBackend + DisplayBackend> Client<B> {
    /// Inserts `records` numbered from `first_seq` (they all belong to `scope`,
    /// `id`); the reply is checked, retrying is the caller's.
    pub async fn display_insert(
        &self,
        scope: &Scope,
        id: &str,
        first_seq: u64,
        records: &[DisplayRecord],
    ) -> Result<InsertReply, Error> {
        let features = self.features();
        let raw = records
            .iter()
            .zip(first_seq..)
            .map(|(r, seq)| self.display(features, r, seq))
            .collect::<Result<Vec<_>, _>>()?;
        let reply = self.backend.display_insert(scope, id, raw).await?;
        checks::insert(&reply, records.len(), first_seq, features.host_seqs).map_err(|v| self.violation_in(id, v))?;
        Ok(reply)
    }

    /// Every record of `call_id`, checked to be of that call, ascending, verified.
    pub async fn display_by_call(&self, scope: &Scope, id: &str, call_id: &str) -> Result<Vec<DisplayRecord>, Error> {
        let features = self.features();
        let found = self.backend.display_by_call(scope, id, call_id).await?;
        self.budget(found.iter().map(|r| r.record.body.len() + r.record.tag.len()).sum())?;
        if found.iter().any(|r| r.record.tool_call_id.as_deref() != Some(call_id)) {
            return Err(self.violation_in(id, "by-tool-call-id returned a record of another call"));
        }
        let seqs: Vec<u64> = found.iter().map(|r| r.seq).collect();
        checks::display_seqs(&seqs, 0, u32::MAX).map_err(|v| self.violation_in(id, v))?;
        parallel::map(found, |r| self.display_back(features, scope, id, r)).into_iter().collect()
    }

    /// Overwrites the record with `record.seq`.
    pub async fn display_update(&self, record: &DisplayRecord) -> Result<(), Error> {
        let features = self.features();
        let raw = self.display(features, record, record.seq)?;
        self.backend.display_update(&record.scope, &record.conversation_id, raw).await
    }

    /// At most `limit` records after seq `after`, checked and verified.
    pub async fn display_list(
        &self,
        scope: &Scope,
        id: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<DisplayRecord>, Error> {
        let features = self.features();
        let found = self.backend.display_list(scope, id, after, limit).await?;
        self.budget(found.iter().map(|r| r.record.body.len() + r.record.tag.len()).sum())?;
        let seqs: Vec<u64> = found.iter().map(|r| r.seq).collect();
        checks::display_seqs(&seqs, after, limit).map_err(|v| self.violation_in(id, v))?;
        parallel::map(found, |r| self.display_back(features, scope, id, r)).into_iter().collect()
    }

    /// A page of records whose status is one of `statuses`, across every scope,
    /// each verified against its own scope and conversation.
    pub async fn display_stale(
        &self,
        statuses: &[String],
        after: Option<DisplayPosition>,
        limit: u32,
    ) -> Result<Vec<DisplayRecord>, Error> {
        let features = self.features();
        let found = self.backend.display_find_by_status(statuses.to_vec(), after.clone(), limit).await?;
        self.budget(found.iter().map(|r| r.stored.record.body.len() + r.stored.record.tag.len()).sum())?;
        checks::stale(&found, statuses, after.as_ref(), limit, features.paged_sweep).map_err(|v| self.violation(v))?;
        found
            .into_iter()
            .map(|located| {
                let (scope, id) = (located.scope, located.conversation_id);
                self.display_back(features, &scope, &id, located.stored)
            })
            .collect()
    }
}
