//! The tool-call card lifecycle: status moves, and resolving interrupted tools
//! with their real result.

use serde_json::{Value, json};

use super::Display;
use super::change::Change;
use super::lifecycle;
use crate::error::Error;
use crate::model::{DisplayContext, DisplayRecord, JsonText, Scope, ToolInfo, ToolStatus, ToolUpdate, content_type};
use crate::util::clock::now_millis;
use crate::validate;

impl Display {
    fn card_of(records: &[DisplayRecord]) -> Result<(DisplayRecord, ToolStatus), Error> {
        let card =
            records.iter().rev().find(|r| r.content_type == content_type::TOOL_CALL).cloned().ok_or(Error::NotFound)?;
        let status = card.status.ok_or_else(|| Error::Storage(format!("tool card {} has no status", card.seq)))?;
        Ok((card, status))
    }

    /// Moves a tool-call card to `status`, merging `info` into its metadata.
    /// Repeating the current status changes nothing (`changed: false`, no event);
    /// a move the lifecycle forbids is `InvalidTransition`; an unknown call id is
    /// `NotFound` (normal: the card may belong to a turn that was not persisted).
    pub async fn update_tool_status(
        &self,
        scope: &Scope,
        status: ToolStatus,
        info: ToolInfo,
        ctx: &DisplayContext,
    ) -> Result<ToolUpdate, Error> {
        Self::check_ctx(scope, ctx)?;
        validate::message_id(&info.call_id).map_err(|_| Error::InvalidInput("tool call id is not valid".into()))?;
        let (scope, ctx) = (scope.clone(), ctx.clone());
        self.detached(move |d| async move {
            let mut change = d.change(&scope, &ctx.conversation_id).await?;
            let updated = async {
                let records = d.storage().by_call(scope, ctx.conversation_id.clone(), info.call_id.clone()).await?;
                let (mut card, current) = Self::card_of(&records)?;
                if !lifecycle::check_transition(current, status)? {
                    return Ok(ToolUpdate { card, changed: false });
                }
                let mut metadata = lifecycle::object(card.metadata.as_ref());
                lifecycle::merge_tool_info(&mut metadata, &info)?;
                card.status = Some(status);
                card.metadata = lifecycle::to_json(metadata);
                card.updated_at = now_millis();
                d.update(&mut change, &card, ctx.agent_id.as_ref()).await?;
                Ok(ToolUpdate { card, changed: true })
            }
            .await;
            change.finish(&d).await;
            updated
        })
        .await
    }

    /// Completes an `interrupted` card with its real result: the interrupt is
    /// cleared, the result goes into the card's metadata, and any tool-result
    /// record of the call gets `content` instead of its placeholder. Emits
    /// `display_message_updated` for each changed record. Resolving a completed
    /// card is a no-op; any other status is `InvalidTransition`.
    pub async fn resolve_tool_result(
        &self,
        scope: &Scope,
        tool_call_id: &str,
        content: &str,
        ctx: &DisplayContext,
    ) -> Result<ToolUpdate, Error> {
        Self::check_ctx(scope, ctx)?;
        let (scope, ctx, call, content) = (scope.clone(), ctx.clone(), tool_call_id.to_owned(), content.to_owned());
        self.detached(move |d| async move {
            let mut change = d.change(&scope, &ctx.conversation_id).await?;
            let resolved = d.resolve_in(&mut change, scope, &ctx, call, content).await;
            change.finish(&d).await;
            resolved
        })
        .await
    }

    async fn resolve_in(
        &self,
        change: &mut Change,
        scope: Scope,
        ctx: &DisplayContext,
        call: String,
        content: String,
    ) -> Result<ToolUpdate, Error> {
        let records = self.storage().by_call(scope, ctx.conversation_id.clone(), call).await?;
        let (mut card, current) = Self::card_of(&records)?;
        if !lifecycle::check_resolve(current)? {
            return Ok(ToolUpdate { card, changed: false });
        }
        let now = now_millis();
        // Results first: if the process dies in between, the card is still
        // interrupted and resolving again finishes the job.
        for mut result in records.into_iter().filter(|r| r.content_type == content_type::TOOL_RESULT) {
            let mut metadata = lifecycle::object(result.metadata.as_ref());
            metadata.remove("placeholder");
            result.content = JsonText::from_value(&json!({ "content": content, "is_error": false }));
            result.metadata = lifecycle::to_json(metadata);
            result.updated_at = now;
            self.update(change, &result, ctx.agent_id.as_ref()).await?;
        }
        let mut metadata = lifecycle::object(card.metadata.as_ref());
        metadata.remove("interrupted_by");
        metadata.insert("result".into(), Value::String(content));
        card.status = Some(ToolStatus::Completed);
        card.metadata = lifecycle::to_json(metadata);
        card.updated_at = now;
        self.update(change, &card, ctx.agent_id.as_ref()).await?;
        Ok(ToolUpdate { card, changed: true })
    }
}
