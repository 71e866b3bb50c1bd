//! Opening, reading, changing the meta of, listing and deleting conversations,
//! and the ownership check writes rely on.

use super::Store;
use crate::cursor;
use crate::error::Error;
use crate::model::{ConversationInfo, ConversationMeta, ConversationPage, JsonText, MetaPatch, Scope};
use crate::util::clock::now_millis;
use crate::validate;

impl Store {
    pub(super) fn check_key(&self, scope: &Scope, conversation_id: &str) -> Result<(), Error> {
        validate::scope(scope)?;
        validate::conversation_id(conversation_id)
    }

    pub(super) async fn open_now(
        &self,
        scope: &Scope,
        id: &str,
        meta: ConversationMeta,
    ) -> Result<ConversationInfo, Error> {
        self.check_key(scope, id)?;
        validate::meta(&meta)?;
        let _guard = self.lock_conversation(scope, id).await;
        let info = self.client().open(scope, id, &meta, now_millis()).await?;
        self.seqs().set_last_seq(scope, id, info.last_seq);
        Ok(info)
    }

    pub(super) async fn info_now(&self, scope: &Scope, id: &str) -> Result<ConversationInfo, Error> {
        self.check_key(scope, id)?;
        let _guard = self.lock_conversation(scope, id).await;
        self.info_locked(scope, id).await
    }

    pub(super) async fn update_meta_now(
        &self,
        scope: &Scope,
        id: &str,
        meta: ConversationMeta,
    ) -> Result<ConversationInfo, Error> {
        validate::meta(&meta)?;
        self.change_meta(scope, id, |_| meta).await
    }

    pub(super) async fn patch_meta_now(
        &self,
        scope: &Scope,
        id: &str,
        patch: MetaPatch,
    ) -> Result<ConversationInfo, Error> {
        fn new_value(field: &Option<Option<JsonText>>) -> Option<&JsonText> {
            field.as_ref().and_then(Option::as_ref)
        }
        validate::meta_json(new_value(&patch.metadata), new_value(&patch.extra))?;
        self.change_meta(scope, id, |stored| patch.apply(stored)).await
    }

    /// Replaces the meta with `change(stored meta)` under the conversation's
    /// lock, so concurrent changes do not undo each other.
    async fn change_meta(
        &self,
        scope: &Scope,
        id: &str,
        change: impl FnOnce(ConversationMeta) -> ConversationMeta,
    ) -> Result<ConversationInfo, Error> {
        self.check_key(scope, id)?;
        let _guard = self.lock_conversation(scope, id).await;
        let mut info = self.info_locked(scope, id).await?;
        let meta = change(std::mem::take(&mut info.meta));
        self.client().update_meta(scope, id, &meta, info.created_at).await?;
        info.meta = meta;
        Ok(info)
    }

    /// Verified info; refreshes what the host knows of the numbering. The caller
    /// holds the conversation's lock.
    pub(super) async fn info_locked(&self, scope: &Scope, id: &str) -> Result<ConversationInfo, Error> {
        match self.client().info(scope, id).await {
            Ok(info) => {
                self.seqs().set_last_seq(scope, id, info.last_seq);
                Ok(info)
            }
            Err(e) => {
                self.seqs().forget(scope, id);
                Err(e)
            }
        }
    }

    /// The conversation's last seq, known to belong to `scope`: from what this
    /// host last saw, else from verified info (`NotFound` when it does not exist
    /// in this scope — an adapter that mixes scopes up fails verification here,
    /// before anything is written). The caller holds the lock.
    pub(super) async fn owned_last_seq(&self, scope: &Scope, id: &str) -> Result<u64, Error> {
        match self.seqs().last_seq(scope, id) {
            Some(last) => Ok(last),
            None => Ok(self.info_locked(scope, id).await?.last_seq),
        }
    }

    pub(super) async fn delete_now(&self, scope: &Scope, id: &str) -> Result<bool, Error> {
        self.check_key(scope, id)?;
        let _guard = self.lock_conversation(scope, id).await;
        // Refuse before deleting if the adapter answers with another scope's
        // conversation; a missing one may still have display records to delete.
        match self.owned_last_seq(scope, id).await {
            Ok(_) | Err(Error::NotFound) => {}
            Err(e) => return Err(e),
        }
        let deleted = self.client().delete(scope, id).await;
        self.seqs().forget(scope, id);
        deleted
    }

    pub(super) async fn list_now(
        &self,
        scope: &Scope,
        cursor: Option<&str>,
        limit: u32,
    ) -> Result<ConversationPage, Error> {
        validate::scope(scope)?;
        validate::limit(limit, self.limits())?;
        let after = cursor.map(|c| cursor::decode_list(scope, c)).transpose()?;
        let mut conversations = self.client().list(scope, after, limit.saturating_add(1)).await?;
        let next_cursor = if conversations.len() > limit as usize {
            conversations.truncate(limit as usize);
            conversations.last().map(|c| cursor::encode_list(scope, &c.id))
        } else {
            None
        };
        Ok(ConversationPage { conversations, next_cursor })
    }
}
