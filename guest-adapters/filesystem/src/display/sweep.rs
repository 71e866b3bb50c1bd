//! `find-by-status`: records with given statuses across the whole store, in
//! (tenant, user, conversation id, seq) order, byte-wise, strictly after a
//! position.
//!
//! The order is that of the ids, not of the encoded directory names (which
//! sort differently): ids are decoded from `c-` names, or read from the display
//! log's header for hashed names. Whole tenants and users before the position
//! are skipped by name. Statuses are in the cached index, so only the
//! matching records' frames are read. A conversation whose display log cannot
//! be read does not stop the sweep: what precedes damage is used, and a log
//! that fails otherwise is skipped (and logged).

use std::path::PathBuf;

use super::read_records;
use crate::exports::stowage::store::display_store::{DisplayPosition, LocatedDisplayRecord};
use crate::layout::{self, decode_name};
use crate::logfile::Damage;
use crate::store::Store;
use crate::stowage::store::types::{Error, Scope};

/// A conversation's place in the sweep order.
type Key = (String, String, String);

fn before(key: &Key, after: Option<&DisplayPosition>, level: usize) -> bool {
    let Some(a) = after else { return false };
    let (t, u, c) = key;
    let (at, au, ac) = (&a.scope.tenant, &a.scope.user, &a.conversation_id);
    match level {
        0 => t < at,
        1 => (t, u) < (at, au),
        _ => (t, u, c) < (at, au, ac),
    }
}

impl Store {
    /// Every conversation directory at or after `after`'s, in sweep order.
    fn sweep_order(&mut self, after: Option<&DisplayPosition>) -> Result<Vec<(Key, PathBuf)>, Error> {
        let mut found = Vec::new();
        let blank = String::new;
        for (tenant_name, tenant_dir) in layout::subdirs(&self.root)? {
            let tenant = decode_name(&tenant_name);
            if tenant.as_ref().is_some_and(|t| before(&(t.clone(), blank(), blank()), after, 0)) {
                continue;
            }
            for (user_name, user_dir) in layout::subdirs(&tenant_dir)? {
                let user = decode_name(&user_name);
                if let (Some(t), Some(u)) = (&tenant, &user)
                    && before(&(t.clone(), u.clone(), blank()), after, 1)
                {
                    continue;
                }
                for (conversation_name, dir) in layout::subdirs(&user_dir)? {
                    let key = match (&tenant, &user, decode_name(&conversation_name)) {
                        (Some(t), Some(u), Some(c)) => (t.clone(), u.clone(), c),
                        // A hashed name: the display log says whose it is.
                        _ => match self.live_display(dir.clone(), false, Damage::Tolerate) {
                            Ok(live) => {
                                let owner = live.state.owner.clone();
                                self.keep_display(live);
                                match owner {
                                    Some(o) => (o.scope.tenant, o.scope.user, o.conversation_id),
                                    None => continue,
                                }
                            }
                            Err(e) => {
                                crate::warn(&format!(
                                    "find-by-status skips {}: {}",
                                    dir.display(),
                                    crate::describe(&e)
                                ));
                                continue;
                            }
                        },
                    };
                    if !before(&key, after, 2) {
                        found.push((key, dir));
                    }
                }
            }
        }
        found.sort_unstable();
        Ok(found)
    }

    pub fn find_by_status(
        &mut self,
        statuses: &[String],
        after: Option<&DisplayPosition>,
        limit: u32,
    ) -> Result<Vec<LocatedDisplayRecord>, Error> {
        let limit = limit as usize;
        let mut found = Vec::new();
        if limit == 0 || statuses.is_empty() {
            return Ok(found);
        }
        for ((tenant, user, conversation_id), dir) in self.sweep_order(after)? {
            let live = match self.live_display(dir, false, Damage::Tolerate) {
                Ok(live) => live,
                Err(e) => {
                    crate::warn(&format!("find-by-status skips a display log: {}", crate::describe(&e)));
                    continue;
                }
            };
            let scope = Scope { tenant, user };
            let owned =
                live.state.owner.as_ref().is_none_or(|o| o.scope == scope && o.conversation_id == conversation_id);
            let min_seq = match after {
                Some(a) if a.scope == scope && a.conversation_id == conversation_id => a.seq,
                _ => 0,
            };
            let seqs: Vec<u64> = (1..)
                .zip(&live.state.locs)
                .filter(|(seq, loc)| {
                    *seq > min_seq && loc.status.as_deref().is_some_and(|s| statuses.iter().any(|w| w == s))
                })
                .map(|(seq, _)| seq)
                .take(limit - found.len())
                .collect();
            if owned
                && !seqs.is_empty()
                && let Some(file) = &live.file
            {
                match read_records(file, &live.path, &live.state, &seqs) {
                    Ok(records) => found.extend(records.into_iter().map(|stored| LocatedDisplayRecord {
                        scope: scope.clone(),
                        conversation_id: conversation_id.clone(),
                        stored,
                    })),
                    Err(e) => crate::warn(&format!("find-by-status skips records: {}", crate::describe(&e))),
                }
            }
            self.keep_display(live);
            if found.len() >= limit {
                break;
            }
        }
        Ok(found)
    }
}
