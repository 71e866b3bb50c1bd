//! One test per check of the checked client, driven by a lying fake backend.

use std::sync::Arc;

use super::Client;
use super::fake::Fake;
use crate::adapter::backend::ConversationBackend;
use crate::adapter::raw::{AppendReply, DisplayPosition, InsertReply, Range};
use crate::config::{Integrity, Limits, Untagged};
use crate::error::Error;
use crate::integrity::{Keyring, Protector};
use crate::model::{ConversationMeta, DisplayRecord, JsonText, NewMessage, Role, Scope, ToolStatus};

type R = Result<(), Box<dyn std::error::Error>>;

fn client_with(integrity: Integrity, limits: Limits) -> Result<Client<Fake>, String> {
    let protector = Arc::new(Protector::new(integrity, Keyring::generate()?));
    Ok(Client::new(Fake::default(), protector, "fake".into(), &limits))
}

fn client() -> Result<Client<Fake>, String> {
    client_with(Integrity::default(), Limits::default())
}

fn scope() -> Scope {
    Scope::new("tenant-a", "u")
}

fn other() -> Scope {
    Scope::new("tenant-b", "u")
}

/// A conversation `c` of `scope` with `n` messages m0… appended.
async fn seeded(client: &Client<Fake>, scope: &Scope, id: &str, n: usize) -> Result<(), Error> {
    client.open(scope, id, &ConversationMeta::default(), 1).await?;
    let batch = (0..n)
        .map(|i| client.prepare(scope, id, format!("m{i}"), 10, NewMessage::text(Role::User, format!("body {i}"))))
        .collect::<Result<Vec<_>, _>>()?;
    if !batch.is_empty() {
        client.append(scope, id, 1, &batch, None, 2).await?;
    }
    Ok(())
}

fn tamper(client: &Client<Fake>, f: impl FnOnce(&mut super::fake::Tamper)) {
    if let Ok(mut t) = client.backend().tamper.lock() {
        f(&mut t);
    }
}

fn violation<T: std::fmt::Debug>(result: Result<T, Error>, words: &str) -> R {
    match result {
        Err(Error::ContractViolation { message, .. }) if message.contains(words) => Ok(()),
        other => Err(format!("expected a contract violation about {words:?}, got {other:?}").into()),
    }
}

fn integrity<T: std::fmt::Debug>(result: Result<T, Error>, record: &str) -> R {
    match result {
        Err(Error::Integrity { record: r, conversation, .. }) if r.contains(record) && conversation == "c" => Ok(()),
        other => Err(format!("expected an integrity error on {record:?}, got {other:?}").into()),
    }
}

#[tokio::test]
async fn honest_answers_pass_and_round_trip() -> R {
    let c = client()?;
    seeded(&c, &scope(), "c", 3).await?;
    let loaded = c.load(&scope(), "c", Range::Latest, 10).await?;
    assert_eq!(loaded.messages.iter().map(|m| m.seq).collect::<Vec<_>>(), [1, 2, 3]);
    assert!(loaded.unverified.is_empty());
    assert_eq!(c.info(&scope(), "c").await?.last_seq, 3);
    Ok(())
}

#[tokio::test]
async fn info_of_another_conversation_is_a_violation() -> R {
    let c = client()?;
    seeded(&c, &scope(), "c", 0).await?;
    tamper(&c, |t| t.info = Some(Box::new(|i| i.id = "d".into())));
    violation(c.info(&scope(), "c").await, "another conversation")
}

#[tokio::test]
async fn info_with_counts_that_do_not_add_up_is_a_violation() -> R {
    let c = client()?;
    seeded(&c, &scope(), "c", 2).await?;
    tamper(&c, |t| t.info = Some(Box::new(|i| i.message_count = 7)));
    violation(c.info(&scope(), "c").await, "reported 7 messages with last seq 2")
}

#[tokio::test]
async fn a_relabelled_conversation_of_another_scope_fails_verification() -> R {
    let c = client()?;
    seeded(&c, &other(), "c", 1).await?;
    // The everyday bug: the adapter ignores the scope and labels the answer with the caller's.
    seeded(&c, &scope(), "c", 0).await?;
    let theirs = c.backend().info(&other(), "c").await?;
    tamper(&c, move |t| {
        t.info = Some(Box::new(move |i| {
            *i = theirs.clone();
            i.scope = Scope::new("tenant-a", "u");
        }))
    });
    integrity(c.info(&scope(), "c").await, "conversation info")
}

#[tokio::test]
async fn listings_are_checked_for_limit_scope_and_order() -> R {
    let c = client()?;
    for id in ["a", "b"] {
        seeded(&c, &scope(), id, 0).await?;
    }
    tamper(&c, |t| t.list = Some(Box::new(|l| l.reverse())));
    violation(c.list(&scope(), None, 5).await, "out of order")?;
    tamper(&c, |t| t.list = Some(Box::new(|l| l[0].scope = Scope::new("x", "y"))));
    violation(c.list(&scope(), None, 5).await, "another scope")?;
    tamper(&c, |t| t.list = Some(Box::new(|l| l.push(l[0].clone()))));
    violation(c.list(&scope(), None, 2).await, "for a limit of 2")
}

#[tokio::test]
async fn pages_are_checked_for_limit_gaps_range_and_repeated_ids() -> R {
    let c = client()?;
    seeded(&c, &scope(), "c", 5).await?;
    let s = scope();
    let load = |range, limit| c.load(&s, "c", range, limit);
    tamper(&c, |t| t.load = Some(Box::new(|m| m.extend(m.clone()))));
    violation(load(Range::Latest, 5).await.map(|_| ()), "for a limit of 5")?;
    tamper(&c, |t| t.load = Some(Box::new(|m| drop(m.remove(1)))));
    violation(load(Range::Latest, 5).await.map(|_| ()), "seq 3 after seq 1")?;
    tamper(&c, |t| t.load = Some(Box::new(|m| m[0].seq = 0)));
    violation(load(Range::Latest, 5).await.map(|_| ()), "seq 0")?;
    tamper(&c, |t| {
        t.load = Some(Box::new(|m| {
            m.truncate(1);
            m[0].seq = 1;
        }))
    });
    violation(load(Range::After(3), 5).await.map(|_| ()), "outside the requested range")?;
    tamper(&c, |t| t.load = Some(Box::new(|m| m[1].message.id = m[0].message.id.clone())));
    violation(load(Range::Latest, 5).await.map(|_| ()), "already returned")
}

/// Each forgery is caught whether or not the honest records were loaded (and
/// remembered by the memo of checked messages) before.
#[tokio::test]
async fn forged_messages_fail_verification() -> R {
    for remembered in [false, true] {
        forgeries_fail(remembered).await.map_err(|e| format!("remembered before: {remembered}: {e}"))?;
    }
    Ok(())
}

async fn forgeries_fail(remembered: bool) -> R {
    let c = client()?;
    seeded(&c, &scope(), "c", 3).await?;
    seeded(&c, &scope(), "d", 3).await?;
    let honest = |c: &Client<Fake>| tamper(c, |t| t.load = None);
    type Forgery = Box<dyn FnMut(&mut Vec<crate::adapter::raw::RawStored>) + Send>;
    let cases: [(&str, Forgery); 6] = [
        ("rewritten role", Box::new(|m| m[1].message.role = Role::System)),
        ("changed content", Box::new(|m| *m[1].message.content.last_mut().unwrap_or(&mut 0) ^= 1)),
        ("changed id", Box::new(|m| m[1].message.id = "forged".into())),
        (
            "swapped seqs",
            Box::new(|m| {
                let (a, b) = (m[0].message.clone(), m[1].message.clone());
                m[0].message = b;
                m[1].message = a;
            }),
        ),
        ("changed time", Box::new(|m| m[1].message.created_at += 1)),
        ("tag of another record", Box::new(|m| m[1].message.tag = m[0].message.tag.clone())),
    ];
    for (what, hook) in cases {
        if remembered {
            honest(&c);
            c.load(&scope(), "c", Range::Latest, 3).await?;
            assert!(c.memo.bytes() > 0, "the honest page is remembered");
        }
        tamper(&c, |t| t.load = Some(hook));
        integrity(c.load(&scope(), "c", Range::Latest, 3).await.map(|_| ()), "message seq")
            .map_err(|e| format!("{what}: {e}"))?;
    }
    // Messages of another conversation, renumbered to fit.
    honest(&c);
    let theirs = c.backend().load(&scope(), "d", Range::Latest, 3).await?;
    if remembered {
        c.load(&scope(), "d", Range::Latest, 3).await?;
    }
    tamper(&c, move |t| t.load = Some(Box::new(move |m| *m = theirs.clone())));
    integrity(c.load(&scope(), "c", Range::Latest, 3).await.map(|_| ()), "message seq 1")
}

/// A page answered from the memo of checked messages is the page a full check
/// gives, and a record accepted without a tag is never remembered: it is
/// reported as unverified on every load.
#[tokio::test]
async fn remembered_pages_equal_checked_ones_and_untagged_records_stay_reported() -> R {
    let c = client()?;
    let cold = client_with(Integrity::default(), Limits { verified_cache_bytes: 0, ..Limits::default() })?;
    seeded(&c, &scope(), "c", 5).await?;
    let first = c.load(&scope(), "c", Range::Latest, 5).await?;
    let remembered = c.memo.bytes();
    assert!(remembered > 0);
    let again = c.load(&scope(), "c", Range::Latest, 5).await?;
    assert_eq!(again.messages, first.messages);
    assert_eq!(c.memo.bytes(), remembered, "nothing checked twice");
    seeded(&cold, &scope(), "c", 5).await?;
    cold.load(&scope(), "c", Range::Latest, 5).await?;
    assert_eq!(cold.memo.bytes(), 0, "off");

    let lax = client_with(Integrity { untagged: Untagged::Accept, ..Integrity::default() }, Limits::default())?;
    seeded(&lax, &scope(), "c", 2).await?;
    tamper(&lax, |t| t.load = Some(Box::new(|m| m[0].message.tag.clear())));
    for _ in 0..2 {
        assert_eq!(lax.load(&scope(), "c", Range::Latest, 2).await?.unverified, [1]);
    }
    Ok(())
}

/// A page long enough to be checked on several threads comes back whole and in
/// order, and of two forged records the one reported is the first.
#[tokio::test]
async fn a_long_page_is_checked_in_order_and_names_its_first_forgery() -> R {
    let c = client()?;
    let n = 3 * crate::util::parallel::MIN_ITEMS;
    seeded(&c, &scope(), "c", n).await?;
    let page = c.load(&scope(), "c", Range::After(0), n as u32).await?;
    let seqs: Vec<u64> = page.messages.iter().map(|m| m.seq).collect();
    assert_eq!(seqs, (1..=n as u64).collect::<Vec<_>>());
    assert_eq!(page.messages[n - 1].id, format!("m{}", n - 1));
    tamper(&c, move |t| {
        t.load = Some(Box::new(move |m| {
            m[n - 2].message.created_at += 1;
            m[7].message.created_at += 1;
        }))
    });
    integrity(c.load(&scope(), "c", Range::After(0), n as u32).await.map(|_| ()), "message seq 8")
}

#[tokio::test]
async fn untagged_records_are_refused_or_reported_per_policy() -> R {
    for (untagged, refused) in [(Untagged::Refuse, true), (Untagged::Accept, false)] {
        let c = client_with(Integrity { untagged, ..Integrity::default() }, Limits::default())?;
        seeded(&c, &scope(), "c", 2).await?;
        tamper(&c, |t| t.load = Some(Box::new(|m| m[0].message.tag.clear())));
        let result = c.load(&scope(), "c", Range::Latest, 2).await;
        if refused {
            integrity(result.map(|_| ()), "message seq 1")?;
        } else {
            assert_eq!(result?.unverified, [1]);
        }
    }
    Ok(())
}

#[tokio::test]
async fn oversized_answers_are_violations() -> R {
    let limits = Limits { max_message_bytes: 1 << 10, max_response_bytes: 4 << 10, ..Limits::default() };
    let c = client_with(Integrity::default(), limits)?;
    seeded(&c, &scope(), "c", 2).await?;
    tamper(&c, |t| t.load = Some(Box::new(|m| m[0].message.content = vec![1; 2 << 10])));
    violation(c.load(&scope(), "c", Range::Latest, 2).await.map(|_| ()), "over the store's limit")?;
    tamper(&c, |t| t.load = Some(Box::new(|m| m[0].message.content = vec![1; 8 << 10])));
    violation(c.load(&scope(), "c", Range::Latest, 2).await.map(|_| ()), "response budget")
}

#[tokio::test]
async fn undecodable_content_is_a_storage_error_naming_the_record() -> R {
    let c = client_with(Integrity { tags: false, ..Integrity::default() }, Limits::default())?;
    seeded(&c, &scope(), "c", 1).await?;
    tamper(&c, |t| t.load = Some(Box::new(|m| m[0].message.content = b"\x01{not json".to_vec())));
    match c.load(&scope(), "c", Range::Latest, 1).await {
        Err(Error::Storage(reason)) => assert!(reason.contains("message seq 1 of `c`"), "{reason}"),
        other => return Err(format!("{:?}", other.map(|_| ())).into()),
    }
    Ok(())
}

#[tokio::test]
async fn append_answers_are_checked() -> R {
    let c = client()?;
    seeded(&c, &scope(), "c", 2).await?;
    let batch = vec![c.prepare(&scope(), "c", "x".into(), 1, NewMessage::text(Role::User, "x"))?];
    let cases: [(&str, AppendReply); 5] = [
        ("seq 0", AppendReply::AlreadyStored { seqs: vec![(0, 0)], version: 2 }),
        ("other than the host's", AppendReply::Stored { version: 3, seqs: vec![7], stored: 1 }),
        ("reported version 0", AppendReply::Stored { version: 0, seqs: vec![3], stored: 1 }),
        ("index 4", AppendReply::AlreadyStored { seqs: vec![(4, 1)], version: 2 }),
        ("while reporting last seq 2", AppendReply::OutOfSequence { last_seq: 2 }),
    ];
    for (words, reply) in cases {
        tamper(&c, move |t| t.append = Some(Box::new(move |r| *r = reply.clone())));
        violation(c.append(&scope(), "c", 3, &batch, None, 5).await, words)?;
    }
    // Already stored past the host's numbering: the host's view was stale, and it
    // renumbers past the stored messages.
    let past = AppendReply::AlreadyStored { seqs: vec![(0, 9)], version: 2 };
    tamper(&c, move |t| t.append = Some(Box::new(move |r| *r = past.clone())));
    match c.append(&scope(), "c", 3, &batch, None, 5).await {
        Ok(AppendReply::OutOfSequence { last_seq: 9 }) => Ok(()),
        other => Err(format!("a renumbering expected: {other:?}").into()),
    }
}

fn card(seq: u64, call: &str) -> Result<DisplayRecord, Error> {
    Ok(DisplayRecord {
        scope: scope(),
        conversation_id: "c".into(),
        seq,
        message_id: Some("m".into()),
        message_type: "assistant".into(),
        content_type: "tool_call".into(),
        tool_call_id: Some(call.into()),
        status: Some(ToolStatus::Pending),
        content: JsonText::parse("{}")?,
        metadata: None,
        created_at: 1,
        updated_at: 1,
    })
}

#[tokio::test]
async fn display_answers_are_checked_and_verified() -> R {
    let c = client()?;
    c.display_insert(&scope(), "c", 1, &[card(1, "a")?, card(2, "b")?]).await?;
    tamper(&c, |t| t.insert = Some(Box::new(|r| *r = InsertReply::Stored { seqs: vec![5, 9] })));
    violation(c.display_insert(&scope(), "c", 3, &[card(3, "x")?, card(4, "y")?]).await, "contiguously")?;
    tamper(&c, |t| t.insert = Some(Box::new(|r| *r = InsertReply::OutOfSequence { last_seq: 2 })));
    violation(c.display_insert(&scope(), "c", 3, &[card(3, "x")?]).await, "while reporting last seq 2")?;
    tamper(&c, |t| t.display = Some(Box::new(|r| r.iter_mut().for_each(|r| r.record.tool_call_id = Some("b".into())))));
    violation(c.display_by_call(&scope(), "c", "a").await, "another call")?;
    tamper(&c, |t| t.display = Some(Box::new(|r| r.reverse())));
    violation(c.display_list(&scope(), "c", 0, 10).await, "out of order")?;
    tamper(&c, |t| t.display = Some(Box::new(|r| r[0].record.status = Some("completed".into()))));
    integrity(c.display_list(&scope(), "c", 0, 10).await, "display record 1")?;
    tamper(&c, |t| t.display = None);
    tamper(&c, |t| t.stale = Some(Box::new(|r| r[0].stored.record.status = Some("completed".into()))));
    violation(c.display_stale(&["pending".into()], None, 10).await, "another status")?;
    tamper(&c, |t| t.stale = Some(Box::new(|r| r.reverse())));
    let after = DisplayPosition { scope: Scope::default(), conversation_id: String::new(), seq: 0 };
    violation(c.display_stale(&["pending".into()], Some(after), 10).await, "out of order")
}

#[tokio::test]
async fn sealed_content_never_reaches_the_adapter_in_the_clear() -> R {
    let c = client_with(Integrity { seal: true, ..Integrity::default() }, Limits::default())?;
    c.open(&scope(), "c", &ConversationMeta { title: Some("Secret title".into()), ..Default::default() }, 1).await?;
    let secret = NewMessage::text(Role::User, "the launch code is 0000");
    let batch = vec![c.prepare(&scope(), "c", "m".into(), 1, secret)?];
    c.append(&scope(), "c", 1, &batch, None, 2).await?;
    let raw = c.backend().load(&scope(), "c", Range::Latest, 1).await?;
    let stored = &raw[0].message.content;
    assert!(!stored.windows(11).any(|w| w == b"launch code"), "plaintext reached the adapter");
    let info = c.backend().info(&scope(), "c").await?;
    assert!(!info.meta.content.windows(6).any(|w| w == b"Secret"), "meta plaintext reached the adapter");
    let loaded = c.load(&scope(), "c", Range::Latest, 1).await?;
    assert_eq!(loaded.messages[0].parts, vec![crate::model::Part::text("the launch code is 0000")]);
    assert_eq!(c.info(&scope(), "c").await?.meta.title.as_deref(), Some("Secret title"));
    Ok(())
}
