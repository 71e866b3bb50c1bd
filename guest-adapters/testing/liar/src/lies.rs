//! The forgeries applied to an honest `load` answer and to conversation infos.
//! Each function makes exactly the change its mode documents and nothing else.

use crate::modes::{Mode, Modes};
use crate::stowage::store::types::{ConversationInfo, Message, Role, StoredMessage};

/// Size of the extra message `huge-message` adds: well past any sane limit.
pub const HUGE_MESSAGE_BYTES: usize = 50_000_000;

/// Applies every message lie of `modes` to `answer`, in a fixed order.
pub fn forge_load(answer: &mut Vec<StoredMessage>, modes: &Modes) {
    if modes.has(Mode::RewriteRole) {
        rewrite_roles(answer);
    }
    if modes.has(Mode::FlipContent) {
        flip_content(answer);
    }
    if modes.has(Mode::ChangeId) {
        change_id(answer);
    }
    if modes.has(Mode::SwapSeqs) {
        swap_seqs(answer);
    }
    if modes.has(Mode::Reorder) {
        reorder(answer);
    }
    if modes.has(Mode::SkipSeq) {
        skip_seq(answer);
    }
    if modes.has(Mode::DropTag) {
        answer.iter_mut().for_each(|m| m.message.tag.clear());
    }
    if modes.has(Mode::HugeMessage) {
        let seq = answer.last().map_or(1, |m| m.seq + 1);
        answer.push(huge_message(seq));
    }
}

/// `bad-count`: the count disagrees with `last-seq`.
pub fn forge_info(info: &mut ConversationInfo, modes: &Modes) {
    if modes.has(Mode::BadCount) {
        info.message_count = info.last_seq + 1;
    }
}

/// Every message gets a role other than its own.
fn rewrite_roles(answer: &mut [StoredMessage]) {
    for m in answer {
        m.message.role = match m.message.role {
            Role::System => Role::User,
            Role::Developer => Role::System,
            Role::User => Role::Assistant,
            Role::Assistant => Role::User,
            Role::Tool => Role::Assistant,
        };
    }
}

/// The first message's last content byte is flipped (a byte is added when the
/// content is empty).
fn flip_content(answer: &mut [StoredMessage]) {
    if let Some(m) = answer.first_mut() {
        match m.message.content.last_mut() {
            Some(byte) => *byte ^= 0x01,
            None => m.message.content.push(0),
        }
    }
}

/// The first message's id gets a `-changed` suffix.
fn change_id(answer: &mut [StoredMessage]) {
    if let Some(m) = answer.first_mut() {
        m.message.id.push_str("-changed");
    }
}

/// The first two messages trade seqs and places: `[A@1, B@2]` comes back as
/// `[B@1, A@2]`, still ascending; only the records' bindings to their seqs tell.
fn swap_seqs(answer: &mut [StoredMessage]) {
    if let [a, b, ..] = answer {
        std::mem::swap(&mut a.seq, &mut b.seq);
        std::mem::swap(a, b);
    }
}

/// The first two messages trade places, each keeping its own seq: the answer
/// is no longer ascending (`[A@1, B@2]` comes back as `[B@2, A@1]`).
fn reorder(answer: &mut [StoredMessage]) {
    if answer.len() >= 2 {
        answer.swap(0, 1);
    }
}

/// The last message's seq moves up by one, leaving a gap (1,2,3,4 → 1,2,3,5).
fn skip_seq(answer: &mut [StoredMessage]) {
    if let Some(m) = answer.last_mut() {
        m.seq += 1;
    }
}

/// An untagged message of exactly [`HUGE_MESSAGE_BYTES`] bytes of content in the
/// plain legacy form (0x01 + JSON with one text part).
fn huge_message(seq: u64) -> StoredMessage {
    let head = b"\x01{\"parts\":[{\"type\":\"text\",\"text\":\"";
    let tail = b"\"}]}";
    let mut content = Vec::with_capacity(HUGE_MESSAGE_BYTES);
    content.extend_from_slice(head);
    content.resize(HUGE_MESSAGE_BYTES - tail.len(), b'x');
    content.extend_from_slice(tail);
    StoredMessage {
        seq,
        message: Message {
            id: "liar-huge-message".to_owned(),
            role: Role::Assistant,
            created_at: 0,
            content,
            tag: Vec::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::message;

    fn answer() -> Vec<StoredMessage> {
        (1..=4).map(|s| message(s, &format!("m{s}"))).collect()
    }

    fn forged(modes: &str) -> Vec<StoredMessage> {
        let mut answer = answer();
        forge_load(&mut answer, &Modes::parse(modes).unwrap_or_default());
        answer
    }

    fn seqs(answer: &[StoredMessage]) -> Vec<u64> {
        answer.iter().map(|m| m.seq).collect()
    }

    #[test]
    fn no_mode_changes_nothing() {
        assert_eq!(forged(""), answer());
    }

    #[test]
    fn each_message_lie_changes_what_it_says() {
        let honest = answer();
        let roles = forged("rewrite-role");
        assert!(roles.iter().zip(&honest).all(|(f, h)| f.message.role != h.message.role));

        let flipped = forged("flip-content");
        let differing = flipped[0].message.content.iter().zip(&honest[0].message.content);
        assert_eq!(differing.filter(|(f, h)| f != h).count(), 1);
        assert_eq!(flipped[1..], honest[1..]);

        assert_eq!(forged("change-id")[0].message.id, "m1-changed");

        let swapped = forged("swap-seqs");
        assert_eq!(seqs(&swapped), [1, 2, 3, 4]);
        assert_eq!((swapped[0].message.id.as_str(), swapped[1].message.id.as_str()), ("m2", "m1"));

        assert_eq!(seqs(&forged("reorder")), [2, 1, 3, 4]);
        assert_eq!(seqs(&forged("skip-seq")), [1, 2, 3, 5]);
        assert!(forged("drop-tag").iter().all(|m| m.message.tag.is_empty()));
    }

    #[test]
    fn huge_message_is_exactly_fifty_million_bytes_after_the_answer() {
        let answer = forged("huge-message");
        assert_eq!(answer.len(), 5);
        let huge = &answer[4];
        assert_eq!((huge.seq, huge.message.content.len()), (5, HUGE_MESSAGE_BYTES));
        assert!(huge.message.content.ends_with(b"xx\"}]}"));
    }

    #[test]
    fn bad_count_breaks_the_count_invariant() {
        let mut info = ConversationInfo {
            id: "c".to_owned(),
            scope: crate::store::tests::scope("a"),
            meta: crate::stowage::store::types::ConversationMeta { content: vec![], tag: vec![] },
            created_at: 0,
            updated_at: 0,
            message_count: 3,
            last_seq: 3,
            version: 1,
        };
        forge_info(&mut info, &Modes::parse("bad-count").unwrap_or_default());
        assert_ne!(info.message_count, info.last_seq);
    }
}
