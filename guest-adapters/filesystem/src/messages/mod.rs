//! Conversations and their message history (`conversation-store`).
//!
//! A conversation is `meta.json` (it exists iff that file does) plus
//! `messages.log`, created by the first write. Each call opens the log, brings
//! the cached index up to date ([`crate::logfile::sync`]) and works from it:
//! `append` checks ids and seqs in memory and writes one frame, `load` reads
//! just the frames holding the requested messages.

mod catalog;
pub mod entry;
mod read;
pub mod state;
mod write;

use std::fs::File;
use std::path::PathBuf;

use crate::durable;
use crate::layout;
use crate::logfile::{self, Damage, LogState};
use crate::lru::Weigh;
use crate::meta::{self, Meta};
use crate::store::Store;
use crate::stowage::store::types::{ConversationInfo, ConversationMeta, Error, Scope};
use state::MessageState;

/// What the cache keeps per conversation.
pub struct Conversation {
    pub meta: Meta,
    pub state: MessageState,
}

impl Weigh for Conversation {
    fn weight(&self) -> usize {
        self.state.weight() + self.meta.weight()
    }
}

/// A conversation opened for one call.
pub(crate) struct Live {
    dir: PathBuf,
    log_path: PathBuf,
    /// The open log; `None` if there is none yet.
    file: Option<File>,
    conv: Conversation,
    /// The index matches the log on disk and may be cached after the call.
    cacheable: bool,
    /// The meta came from the cache: right about the identity (which never
    /// changes while the log lives), maybe stale about the content and tag,
    /// which `update-meta` rewrites.
    meta_cached: bool,
}

impl Live {
    /// The conversation's info, its meta read afresh if it came from the cache;
    /// `None` if the conversation was deleted meanwhile.
    pub fn fresh_info(&mut self) -> Result<Option<ConversationInfo>, Error> {
        if self.meta_cached {
            match meta::read(&self.dir)? {
                Some(meta) if meta.is(&self.conv.meta.scope, &self.conv.meta.id) => self.conv.meta = meta,
                _ => return Ok(None),
            }
            self.meta_cached = false;
        }
        Ok(Some(self.info()))
    }

    fn info(&self) -> ConversationInfo {
        let Conversation { meta, state } = &self.conv;
        ConversationInfo {
            id: meta.id.clone(),
            scope: meta.scope.clone(),
            meta: meta.meta.clone(),
            created_at: meta.created_at,
            updated_at: state.updated_at.unwrap_or(meta.created_at),
            message_count: state.last_seq(),
            last_seq: state.last_seq(),
            version: state.version,
        }
    }
}

impl Store {
    /// The conversation `(scope, id)` with an up-to-date index, its log open
    /// for reading (and writing if `write`); `None` if it does not exist.
    pub(crate) fn live_conversation(
        &mut self,
        scope: &Scope,
        id: &str,
        write: bool,
        damage: Damage,
    ) -> Result<Option<Live>, Error> {
        let dir = layout::conversation_dir(&self.root, scope, id);
        let log_path = dir.join(layout::MESSAGES);
        let cached = self.conversations.take(&dir);
        let Some(file) = durable::open_existing(&log_path, write)? else {
            // No log: nothing to validate a cached meta against, so read it.
            let Some(meta) = meta::read(&dir)?.filter(|m| m.is(scope, id)) else {
                return Ok(None);
            };
            let conv = Conversation { meta, state: MessageState::empty() };
            return Ok(Some(Live { dir, log_path, file: None, conv, cacheable: false, meta_cached: false }));
        };
        let (cached_meta, cached_state) = match cached {
            Some(c) => (Some(c.meta), Some(c.state)),
            None => (None, None),
        };
        let cached_len = cached_state.as_ref().map(|s| s.tail.file_len);
        let synced = logfile::sync(&file, &log_path, cached_state, damage)?;
        self.record_sync(synced.replayed, cached_len, synced.state.tail.file_len);
        // The log id changes whenever the conversation is deleted and created
        // again, so a cached meta is good exactly as long as the cached index.
        let (meta, meta_cached) = match cached_meta {
            Some(meta) if !synced.replayed => (meta, true),
            _ => match meta::read(&dir)? {
                Some(meta) => (meta, false),
                None => return Ok(None),
            },
        };
        if !meta.is(scope, id) {
            return Ok(None);
        }
        let conv = Conversation { meta, state: synced.state };
        let cacheable = synced.damaged_at.is_none();
        Ok(Some(Live { dir, log_path, file: Some(file), conv, cacheable, meta_cached }))
    }

    /// Caches the index of `live` if it matches the file on disk.
    pub(crate) fn keep(&mut self, live: Live) {
        if live.cacheable {
            self.conversations.put(live.dir, live.conv);
        }
    }

    pub fn info(&mut self, scope: &Scope, id: &str) -> Result<ConversationInfo, Error> {
        let mut live = self.live_conversation(scope, id, false, Damage::Fail)?.ok_or(Error::NotFound)?;
        let info = live.fresh_info()?.ok_or(Error::NotFound)?;
        self.keep(live);
        Ok(info)
    }

    /// Rewrites the conversation's `meta.json` with `meta`, atomically; its
    /// identity and creation time stay.
    pub fn update_meta(&mut self, scope: &Scope, id: &str, meta: ConversationMeta) -> Result<(), Error> {
        let dir = layout::conversation_dir(&self.root, scope, id);
        let mut current = meta::read(&dir)?.filter(|m| m.is(scope, id)).ok_or(Error::NotFound)?;
        current.meta = meta;
        meta::write(&dir, &current)?;
        if let Some(mut cached) = self.conversations.take(&dir) {
            cached.meta = current;
            self.conversations.put(dir, cached);
        }
        Ok(())
    }
}
