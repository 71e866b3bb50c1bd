//! The cases of the catalogue, by topic. Each states the guarantee it checks and
//! what it needs.

mod display;
mod escapes;
mod faults;
mod history;
mod isolation;
mod paging;
mod repair;

use std::future::Future;
use std::pin::Pin;

use anyhow::{Context, bail};
use stowage::{ConversationMeta, Error, Message, NewMessage, Role, Scope, Store};

use crate::{Ctx, Need};

/// What running a case returns.
pub type CaseFuture<'a> = Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send + 'a>>;

/// A case of the catalogue.
pub struct Case {
    pub name: &'static str,
    pub needs: &'static [Need],
    pub run: for<'a> fn(&'a Ctx) -> CaseFuture<'a>,
}

macro_rules! catalogue {
    ($($module:ident :: $name:ident needs [$($need:ident),*]),* $(,)?) => {
        /// Every case name, in catalogue order.
        pub const NAMES: &[&str] = &[$(stringify!($name)),*];

        /// The catalogue.
        pub fn catalogue() -> Vec<Case> {
            vec![$(Case {
                name: stringify!($name),
                needs: &[$(Need::$need),*],
                run: |ctx| -> CaseFuture<'_> { Box::pin($module::$name(ctx)) },
            }),*]
        }
    };
}

catalogue!(
    history::open_is_idempotent needs [Durable],
    history::missing_conversation_is_not_found needs [Durable],
    history::seqs_are_contiguous_and_ordered needs [Durable],
    history::append_is_idempotent_by_message_id needs [Durable],
    history::append_can_create_the_conversation needs [Durable],
    history::meta_updates_keep_the_history needs [Durable],
    history::expected_version_conflicts needs [Durable],
    history::batch_rejected_by_validation_stores_nothing needs [],
    faults::batch_is_atomic_under_sql_faults needs [Durable, SqlFaults],
    faults::a_torn_last_write_is_absent_at_every_byte needs [Durable, TornFiles],
    paging::recent_n_in_chronological_order needs [Durable],
    paging::paging_by_cursor_visits_every_message_once needs [Durable],
    paging::load_all_reads_past_one_page needs [Durable],
    paging::invalid_cursors_are_refused needs [],
    history::truncate_and_pop_last needs [Durable],
    history::replace_renumbers_history needs [Durable],
    isolation::delete_is_idempotent_and_isolated needs [Durable],
    paging::list_is_scoped_ordered_and_paginated needs [Durable],
    isolation::scopes_are_isolated needs [Durable],
    history::unicode_and_one_mebibyte_messages needs [Durable],
    isolation::hostile_ids_are_rejected_or_stored_safely needs [Durable],
    escapes::planted_links_never_reach_another_store needs [Durable],
    history::every_part_type_round_trips_exactly needs [Durable],
    history::data_survives_a_host_restart needs [Durable],
    history::null_accepts_writes_and_keeps_nothing needs [KeepsNothing],
    display::display_splits_a_message_into_ordered_records needs [Durable],
    display::display_lifecycle_allows_exactly_the_documented_moves needs [Durable],
    display::display_repeats_are_noops_and_unknown_calls_are_not_found needs [Durable],
    display::display_metadata_merges_and_resolve_completes_an_interrupt needs [Durable],
    display::display_synthetic_records needs [Durable],
    display::display_scopes_are_isolated needs [Durable],
    display::display_sweep_interrupts_cards_left_by_a_crash needs [Durable],
    display::display_records_are_deleted_with_their_conversation needs [Durable],
    repair::orphaned_tool_calls_are_repaired_on_load needs [Durable],
    repair::cuts_never_separate_a_tool_call_from_its_result needs [Durable],
);

pub(crate) fn scope() -> Scope {
    Scope::new("tenant-a", "user-1")
}

pub(crate) fn other_scope() -> Scope {
    Scope::new("tenant-b", "user-1")
}

pub(crate) fn text(role: Role, id: &str, body: &str) -> NewMessage {
    NewMessage::text(role, body).with_id(id)
}

/// `n` messages with ids `{prefix}{i}` and distinct bodies.
pub(crate) fn numbered(prefix: &str, n: usize) -> Vec<NewMessage> {
    (0..n)
        .map(|i| {
            let role = if i % 2 == 0 { Role::User } else { Role::Assistant };
            text(role, &format!("{prefix}{i}"), &format!("message {prefix}{i}"))
        })
        .collect()
}

pub(crate) async fn opened(store: &Store, scope: &Scope, id: &str) -> anyhow::Result<()> {
    store.open(scope, id, ConversationMeta::default()).await.with_context(|| format!("opening {id}"))?;
    Ok(())
}

/// Every message of a conversation (the library's own pager).
pub(crate) async fn all_messages(store: &Store, scope: &Scope, id: &str) -> anyhow::Result<Vec<Message>> {
    Ok(store.load_all(scope, id).await?)
}

pub(crate) fn seqs(messages: &[Message]) -> Vec<u64> {
    messages.iter().map(|m| m.seq).collect()
}

pub(crate) fn ids(messages: &[Message]) -> Vec<String> {
    messages.iter().map(|m| m.id.clone()).collect()
}

pub(crate) fn expect_not_found<T: std::fmt::Debug>(result: Result<T, Error>, what: &str) -> anyhow::Result<()> {
    match result {
        Err(Error::NotFound) => Ok(()),
        other => bail!("{what}: expected not-found, got {other:?}"),
    }
}
