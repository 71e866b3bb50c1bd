//! Test fixture (contract `stowage:store@0.2.0`, world `adapter`): a correct
//! in-memory store that lies on request, one lie per attack of issue 9.
//!
//! State lives in instance memory, so tests run it with one instance (it is lost
//! when the instance is discarded). It needs the `filesystem` grant: before every
//! call it reads the mode file `/data/liar-mode`, one mode per line (several may
//! be on; blank lines and `#` comments are skipped; an unknown name fails the call
//! with `storage`). Without the file it is honest.
//!
//! Modes, and exactly what each does:
//!
//! - `ignore-scope` — the everyday bug, a query without the tenant. Every call
//!   about (scope, id) works on the caller's own entry when it has one, else on
//!   the first entry, in (tenant, user, id) order, of any scope with that id: open
//!   (returns it instead of creating one), info, append, replace, load, truncate,
//!   delete and the display calls all reach another scope's data. Infos are
//!   labelled with the CALLER's scope. `list` returns every scope's conversations
//!   (ordered by id, then scope), labelled as the caller's.
//! - `true-scope` — like `ignore-scope`, but infos carry the owner's real scope.
//! - `rewrite-role` — `load`: every message comes back with another role
//!   (system→user, developer→system, user→assistant, assistant→user,
//!   tool→assistant).
//! - `flip-content` — `load`: the first message's last content byte is XORed
//!   with 0x01 (a byte is added to empty content).
//! - `other-conversation` — `load` answers from the first other conversation
//!   with messages in the same scope (by id order), same range and limit; honest
//!   when there is none. A missing conversation is still `not-found`.
//! - `change-id` — `load`: the first message's id gets the suffix `-changed`.
//! - `swap-seqs` — `load`: the first two messages trade seqs and places, so the
//!   answer stays ascending (`[A@1, B@2]` → `[B@1, A@2]`).
//! - `reorder` — `load`: the first two messages trade places and keep their
//!   seqs, so the answer is not ascending (`[A@1, B@2]` → `[B@2, A@1]`).
//! - `skip-seq` — `load`: the last message's seq is raised by one (1,2,3,4 →
//!   1,2,3,5). `append`: a batch that passes every check is stored one seq
//!   further than it says (first at `last-seq` + 2) and answered `stored`.
//! - `huge-message` — `load`: one extra, untagged message is added after the
//!   answer (seq = last returned + 1, or 1), id `liar-huge-message`, whose
//!   content is exactly 50,000,000 bytes (0x01 + a JSON text part of `x`s),
//!   allocated only for that call.
//! - `bad-count` — every conversation info (open, info, list) reports
//!   `message-count` = `last-seq` + 1.
//! - `replay-old` — display `by-tool-call-id`: a record that was updated comes
//!   back as the authentic version its latest update overwrote.
//! - `drop-tag` — `load`: every message comes back with an empty tag.
//!
//! `find-by-status` is always honest (it has no caller scope to lie about).

wit_bindgen::generate!({
    path: "../../../wit/v0.2.0",
    world: "adapter",
    additional_derives: [PartialEq, Eq],
});

mod contract;
mod display;
mod lies;
mod modes;
mod store;

use contract::Liar;

export!(Liar);
