//! The power-loss workload and its oracle: what every conversation must hold
//! given the writes that were acknowledged, and reading a store back to compare.
//!
//! Operations mix message appends of batches, display inserts of batches and
//! status updates, replaces, truncates, deletes and (re)creations over a few
//! conversations. Each one is a single writing adapter call, so an interrupted
//! one either took effect whole or not at all: after a cut a conversation must
//! read back exactly as acknowledged, or (for the one operation in flight) as
//! that operation would have left it.

use std::collections::BTreeMap;

use anyhow::{Context, bail, ensure};
use serde_json::json;
use stowage::{
    ConversationMeta, Display, DisplayContext, DisplayRecord, Error, JsonText, NewMessage, Part, Role, Scope, Store,
    ToolInfo, ToolStatus,
};

/// splitmix64.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Msg {
    pub id: String,
    pub text: String,
}

/// A tool-call display card.
#[derive(Clone, Debug, PartialEq)]
pub struct Card {
    pub call: String,
    pub body: String,
    pub status: ToolStatus,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Conv {
    pub messages: Vec<Msg>,
    pub cards: Vec<Card>,
}

#[derive(Clone, Debug)]
pub enum Op {
    Open,
    Append(Vec<Msg>),
    Replace(Vec<Msg>),
    Truncate(u64),
    Delete,
    Insert(Vec<Card>),
    Update(usize, ToolStatus),
}

pub fn scope() -> Scope {
    Scope::new("tenant", "user")
}

/// Every conversation's acknowledged state (`None`: it does not exist).
pub struct World {
    pub convs: BTreeMap<String, Option<Conv>>,
    next_id: u64,
}

impl World {
    pub fn new(conversations: usize) -> Self {
        Self { convs: (0..conversations).map(|i| (format!("c{i}"), None)).collect(), next_id: 0 }
    }

    /// Text of a few hundred bytes to a few kilobytes, so frames span sectors.
    fn message(&mut self, rng: &mut Rng) -> Msg {
        self.next_id += 1;
        let id = format!("m{}", self.next_id);
        let fill = char::from(b'a' + (rng.below(26) as u8));
        let text = format!("{id} {}", fill.to_string().repeat(rng.below(1200) as usize));
        Msg { id, text }
    }

    fn messages(&mut self, rng: &mut Rng, most: u64) -> Vec<Msg> {
        (0..=rng.below(most)).map(|_| self.message(rng)).collect()
    }

    fn card(&mut self, rng: &mut Rng) -> Card {
        self.next_id += 1;
        Card {
            call: format!("call-{}", self.next_id),
            body: "x".repeat(rng.below(1000) as usize),
            status: ToolStatus::Pending,
        }
    }

    /// An append to some existing conversation (an open if none exists).
    pub fn next_write(&mut self, rng: &mut Rng) -> (String, Op) {
        let existing: Vec<String> = self.convs.iter().filter(|(_, c)| c.is_some()).map(|(k, _)| k.clone()).collect();
        match existing.get(rng.below(existing.len() as u64) as usize) {
            Some(id) => (id.clone(), Op::Append(self.messages(rng, 2))),
            None => ("c0".to_owned(), Op::Open),
        }
    }

    /// A random operation on a random conversation.
    pub fn next_op(&mut self, rng: &mut Rng) -> (String, Op) {
        let id = format!("c{}", rng.below(self.convs.len() as u64));
        let Some(Some(conv)) = self.convs.get(&id).cloned() else { return (id, Op::Open) };
        let live_card = conv.cards.iter().position(|c| matches!(c.status, ToolStatus::Pending | ToolStatus::Executing));
        let len = conv.messages.len() as u64;
        let op = match rng.below(100) {
            0..45 => Op::Append(self.messages(rng, 4)),
            45..58 => Op::Insert((0..=rng.below(3)).map(|_| self.card(rng)).collect()),
            58..68 if live_card.is_some() => {
                let index = live_card.unwrap_or_default();
                let next = if conv.cards[index].status == ToolStatus::Pending {
                    ToolStatus::Executing
                } else {
                    ToolStatus::Completed
                };
                Op::Update(index, next)
            }
            68..78 => {
                let mut kept: Vec<Msg> = conv.messages.iter().filter(|_| rng.below(3) > 0).cloned().collect();
                kept.extend((0..rng.below(3)).map(|_| self.message(rng)));
                Op::Replace(kept)
            }
            78..93 if len > 0 => Op::Truncate(rng.below(len)),
            93..100 => Op::Delete,
            _ => Op::Append(self.messages(rng, 2)),
        };
        (id, op)
    }

    /// What conversation `id` holds once `op` took effect.
    pub fn after(&self, id: &str, op: &Op) -> Option<Conv> {
        let before = self.convs.get(id).cloned().flatten();
        let mut conv = before.clone().unwrap_or_default();
        match op {
            Op::Open => return Some(before.unwrap_or_default()),
            Op::Delete => return None,
            Op::Append(batch) => conv.messages.extend(batch.iter().cloned()),
            Op::Replace(all) => conv.messages = all.clone(),
            Op::Truncate(keep) => conv.messages.truncate(*keep as usize),
            Op::Insert(cards) => conv.cards.extend(cards.iter().cloned()),
            Op::Update(index, status) => {
                if let Some(card) = conv.cards.get_mut(*index) {
                    card.status = *status;
                }
            }
        }
        Some(conv)
    }

    /// `op` was acknowledged.
    pub fn apply(&mut self, id: &str, op: &Op) {
        let after = self.after(id, op);
        self.convs.insert(id.to_owned(), after);
    }
}

/// Runs `op` on conversation `id`.
pub async fn run(store: &Store, display: &Display, world: &World, id: &str, op: &Op) -> Result<(), Error> {
    let scope = scope();
    let ctx = DisplayContext::new(None, id);
    let new = |batch: &[Msg]| -> Vec<NewMessage> {
        batch.iter().map(|m| NewMessage::text(Role::User, m.text.clone()).with_id(m.id.clone())).collect()
    };
    match op {
        Op::Open => store.open(&scope, id, ConversationMeta::default()).await.map(drop),
        Op::Append(batch) => store.append(&scope, id, new(batch), None).await.map(drop),
        Op::Replace(all) => store.replace(&scope, id, new(all), None).await.map(drop),
        Op::Truncate(keep) => store.truncate_after(&scope, id, *keep, None).await.map(drop),
        Op::Delete => store.delete(&scope, id).await.map(drop),
        Op::Insert(cards) => {
            let records = cards.iter().map(|c| record(&scope, id, c)).collect();
            display.restore(&scope, id, records).await.map(drop)
        }
        Op::Update(index, status) => {
            let call = world.convs.get(id).cloned().flatten().and_then(|c| c.cards.get(*index).cloned());
            let call = call.map(|c| c.call).unwrap_or_default();
            display.update_tool_status(&scope, *status, ToolInfo::new(call), &ctx).await.map(drop)
        }
    }
}

fn record(scope: &Scope, id: &str, card: &Card) -> DisplayRecord {
    DisplayRecord {
        scope: scope.clone(),
        conversation_id: id.to_owned(),
        seq: 0,
        message_id: None,
        message_type: "assistant".into(),
        content_type: "tool_call".into(),
        tool_call_id: Some(card.call.clone()),
        status: Some(card.status),
        content: JsonText::from_value(&json!({ "body": card.body })),
        metadata: None,
        created_at: 1,
        updated_at: 1,
    }
}

/// Reads conversation `id` back; any error (damage, a torn record, a broken
/// numbering) is a failure.
pub async fn observe(store: &Store, display: &Display, id: &str) -> anyhow::Result<Option<Conv>> {
    let scope = scope();
    let mut cards = Vec::new();
    let mut after = 0;
    loop {
        let page = display.list(&scope, id, after, 1000).await.context("listing display records")?;
        for r in &page.records {
            ensure!(
                r.seq == cards.len() as u64 + 1,
                "display seqs are not contiguous: {} after {}",
                r.seq,
                cards.len()
            );
            let body = r.content.to_value()?.get("body").and_then(|b| b.as_str()).map(str::to_owned);
            let (Some(call), Some(status), Some(body)) = (r.tool_call_id.clone(), r.status, body) else {
                bail!("display record {} is not a card this test wrote: {r:?}", r.seq);
            };
            cards.push(Card { call, body, status });
        }
        match page.next_after {
            Some(next) => after = next,
            None => break,
        }
    }
    let info = match store.info(&scope, id).await {
        Ok(info) => info,
        Err(Error::NotFound) if cards.is_empty() => return Ok(None),
        Err(Error::NotFound) => bail!("{} display records outlive their deleted conversation", cards.len()),
        Err(e) => return Err(e).context("reading the conversation's info"),
    };
    let loaded = store.load_all(&scope, id).await.context("loading every message")?;
    let mut messages = Vec::new();
    for m in &loaded {
        ensure!(
            m.seq == messages.len() as u64 + 1,
            "message seqs are not contiguous: {} after {}",
            m.seq,
            messages.len()
        );
        let [Part::Text { text, .. }] = m.parts.as_slice() else {
            bail!("message {} has parts this test never wrote", m.seq)
        };
        messages.push(Msg { id: m.id.clone(), text: text.clone() });
    }
    ensure!(
        info.last_seq == messages.len() as u64,
        "info says last seq {}, but {} messages load",
        info.last_seq,
        messages.len()
    );
    Ok(Some(Conv { messages, cards }))
}

/// A short account of how `got` differs from `want`.
pub fn diff(want: &Option<Conv>, got: &Option<Conv>) -> String {
    let (Some(want), Some(got)) = (want, got) else {
        let state = |c: &Option<Conv>| if c.is_some() { "present" } else { "absent" };
        return format!("the conversation should be {} but is {}", state(want), state(got));
    };
    let ids = |m: &[Msg]| m.iter().map(|m| m.id.as_str()).collect::<Vec<_>>().join(",");
    if want.messages != got.messages {
        let at = want.messages.iter().zip(&got.messages).position(|(a, b)| a != b);
        return format!(
            "messages: want {} [{}], got {} [{}]{}",
            want.messages.len(),
            ids(&want.messages),
            got.messages.len(),
            ids(&got.messages),
            at.map(|i| format!("; first difference at seq {}", i + 1)).unwrap_or_default()
        );
    }
    let cards = |c: &[Card]| c.iter().map(|c| format!("{}:{:?}", c.call, c.status)).collect::<Vec<_>>().join(",");
    format!("display cards: want [{}], got [{}]", cards(&want.cards), cards(&got.cards))
}
