//! Creating, deleting and listing conversations.
//!
//! - `open` creates the conversation's directories (fsyncing each new entry's
//!   parent) and writes `meta.json` atomically; the log is created by the
//!   first write.
//! - `delete` renames the conversation's directory into the trash (atomic, then
//!   made durable by fsyncing both directories), then empties the trash.
//! - `list` orders by the ids decoded from directory names (or, for hashed
//!   names, stored in `meta.json`), never by the names themselves, and reads
//!   only the conversations it returns. A damaged log does not hide its
//!   conversation: it is listed with what precedes the damage.

use std::sync::atomic::{AtomicU64, Ordering};

use super::Store;
use crate::durable;
use crate::io_error;
use crate::layout;
use crate::logfile::{Damage, unique_suffix};
use crate::meta::{self, Meta};
use crate::stowage::store::types::{ConversationInfo, ConversationMeta, Error, Scope};

impl Store {
    pub fn open(
        &mut self,
        scope: &Scope,
        id: &str,
        meta: ConversationMeta,
        now: i64,
    ) -> Result<ConversationInfo, Error> {
        if let Some(mut live) = self.live_conversation(scope, id, false, Damage::Fail)?
            && let Some(info) = live.fresh_info()?
        {
            self.keep(live);
            return Ok(info);
        }
        let dir = layout::conversation_dir(&self.root, scope, id);
        if let Some(other) = meta::read(&dir)? {
            return Err(Error::Storage(format!(
                "{} already holds conversation {:?} of another scope (hashed names collide)",
                dir.display(),
                other.id
            )));
        }
        durable::ensure_dir(&dir)?;
        let meta = Meta { id: id.to_owned(), scope: scope.clone(), meta, created_at: now };
        meta::write(&dir, &meta)?;
        Ok(ConversationInfo {
            id: meta.id,
            scope: meta.scope,
            meta: meta.meta,
            created_at: now,
            updated_at: now,
            message_count: 0,
            last_seq: 0,
            version: 0,
        })
    }

    pub fn delete(&mut self, scope: &Scope, id: &str) -> Result<bool, Error> {
        let dir = layout::conversation_dir(&self.root, scope, id);
        self.conversations.take(&dir);
        self.displays.take(&dir);
        match std::fs::symlink_metadata(&dir) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(io_error(&format!("inspecting {}", dir.display()), e)),
        }
        if meta::read(&dir)?.is_some_and(|m| !m.is(scope, id)) {
            return Ok(false);
        }
        static DELETIONS: AtomicU64 = AtomicU64::new(0);
        let trash = layout::trash_dir(&self.root);
        durable::ensure_dir(&trash)?;
        let target = trash.join(unique_suffix(DELETIONS.fetch_add(1, Ordering::Relaxed)));
        std::fs::rename(&dir, &target).map_err(|e| io_error(&format!("moving {} to the trash", dir.display()), e))?;
        if let Some(parent) = dir.parent() {
            durable::sync_dir(parent)?;
        }
        durable::sync_dir(&trash)?;
        // The conversation is gone once renamed; what the trash still holds
        // (also after a crash) is removed now or by a later delete.
        if let Ok(entries) = std::fs::read_dir(&trash) {
            for entry in entries.flatten() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        Ok(true)
    }

    pub fn list(&mut self, scope: &Scope, after: Option<&str>, limit: u32) -> Result<Vec<ConversationInfo>, Error> {
        let mut candidates = Vec::new();
        for (name, path) in layout::subdirs(&layout::scope_dir(&self.root, scope))? {
            let id = match layout::decode_name(&name) {
                Some(id) => id,
                None => match meta::read(&path)? {
                    Some(meta) if &meta.scope == scope => meta.id,
                    _ => continue,
                },
            };
            if after.is_none_or(|after| id.as_str() > after) {
                candidates.push(id);
            }
        }
        candidates.sort_unstable();
        let mut found = Vec::new();
        for id in candidates {
            if found.len() >= limit as usize {
                break;
            }
            // Display records only, or a conversation still being created: skipped.
            if let Some(mut live) = self.live_conversation(scope, &id, false, Damage::Tolerate)?
                && let Some(info) = live.fresh_info()?
            {
                found.push(info);
                self.keep(live);
            }
        }
        Ok(found)
    }
}
