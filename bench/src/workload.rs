//! The pinned message generator of `shared/bench/WORKLOAD.md` §1, byte for byte.
//!
//! Message `m` of conversation `c` depends only on `(c, m)`: a splitmix64 stream seeded
//! with `SEED + (c << 32) + m` picks words until the canonical JSON reaches 1,024 bytes.
//! [`canonical`] returns the canonical form (compact JSON, keys in the pinned order);
//! [`Message::value`] parses it into a `serde_json::Value` that serialises back to the
//! same bytes (the workspace enables serde_json's `preserve_order`).

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::Result;

/// The PRNG seed (decimal 20261122).
pub const SEED: u64 = 20_261_122;

/// Messages per agent turn (user, assistant + tool call, tool result, assistant text).
pub const TURN: u32 = 4;

/// The 64 words, at indices 0..63.
pub const WORDS: [&str; 64] = [
    "agent", "tool", "memory", "vector", "query", "result", "store", "token", "model", "prompt", "context", "window",
    "search", "index", "record", "stream", "batch", "commit", "branch", "merge", "schema", "table", "column", "cursor",
    "buffer", "cache", "latency", "file", "disk", "page", "block", "write", "read", "append", "load", "session",
    "thread", "message", "reply", "user", "system", "function", "argument", "value", "string", "number", "object",
    "array", "field", "key", "hash", "seed", "state", "step", "event", "trace", "span", "node", "edge", "graph", "the",
    "of", "and", "with",
];

/// Bytes of each shape's canonical form with an empty text, by `m % 4`.
pub const ENVELOPE_BYTES: [usize; 4] = [28, 170, 61, 33];

/// Text grows while `envelope + len(text)` is below this.
const TARGET_BYTES: usize = 1024;

/// splitmix64, all arithmetic mod 2^64.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// The stream of message `(c, m)`: `state = SEED + (c << 32) + m`.
    pub fn for_message(c: u32, m: u32) -> Self {
        Self { state: SEED.wrapping_add(u64::from(c) << 32).wrapping_add(u64::from(m)) }
    }

    /// The next output.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// `conv-` + c as 4 digits: the conversation (session, thread) id.
pub fn conv_id(c: u32) -> String {
    format!("conv-{c:04}")
}

/// `call_` + c as 4 digits + `_` + m as 5 digits: the tool call id `CID(c, m)`.
pub fn call_id(c: u32, m: u32) -> String {
    format!("call_{c:04}_{m:05}")
}

/// The generated text of message `(c, m)`.
pub fn text(c: u32, m: u32) -> String {
    let envelope = ENVELOPE_BYTES[(m % 4) as usize];
    let mut rng = SplitMix64::for_message(c, m);
    let mut text = String::new();
    while envelope + text.len() < TARGET_BYTES {
        // `% 64` keeps the index below 64, so the cast cannot truncate.
        let word = WORDS[(rng.next_u64() % 64) as usize];
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(word);
    }
    text
}

/// The canonical JSON of message `(c, m)` around a given text (the shape of `m % 4`).
pub fn canonical_with_text(c: u32, m: u32, text: &str) -> String {
    let mut out = String::with_capacity(TARGET_BYTES + 16);
    match m % 4 {
        0 => {
            out.push_str(r#"{"role":"user","content":""#);
            out.push_str(text);
            out.push_str(r#""}"#);
        }
        1 => {
            out.push_str(r#"{"role":"assistant","content":null,"tool_calls":[{"id":""#);
            out.push_str(&call_id(c, m));
            out.push_str(r#"","type":"function","function":{"name":"search_docs","arguments":"{\"query\":\""#);
            out.push_str(text);
            out.push_str(r#"\",\"top_k\":5}"}}]}"#);
        }
        2 => {
            out.push_str(r#"{"role":"tool","tool_call_id":""#);
            // m % 4 == 2 implies m >= 2.
            out.push_str(&call_id(c, m - 1));
            out.push_str(r#"","content":""#);
            out.push_str(text);
            out.push_str(r#""}"#);
        }
        _ => {
            out.push_str(r#"{"role":"assistant","content":""#);
            out.push_str(text);
            out.push_str(r#""}"#);
        }
    }
    out
}

/// The canonical JSON of message `(c, m)`: 1,024–1,032 bytes.
pub fn canonical(c: u32, m: u32) -> String {
    canonical_with_text(c, m, &text(c, m))
}

/// One generated message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub c: u32,
    pub m: u32,
    /// The canonical JSON.
    pub canonical: String,
}

impl Message {
    pub fn new(c: u32, m: u32) -> Self {
        Self { c, m, canonical: canonical(c, m) }
    }

    /// The message as a JSON value (keys in canonical order).
    pub fn value(&self) -> Result<Value> {
        Ok(serde_json::from_str(&self.canonical)?)
    }
}

/// Messages `m = 0..count` of conversation `c`, in order.
pub fn conversation(c: u32, count: u32) -> Vec<Message> {
    (0..count).map(|m| Message::new(c, m)).collect()
}

/// The calls of phase B's order: `for t in 0..turns: for c in 0..convs: (c, t)`.
pub fn b_call_order(convs: u32, turns: u32) -> Vec<(u32, u32)> {
    (0..turns).flat_map(|t| (0..convs).map(move |c| (c, t))).collect()
}

/// The 4 messages of turn `t` of conversation `c`: `m = 4t..4t+3`.
pub fn turn(c: u32, t: u32) -> Vec<Message> {
    (t * TURN..(t + 1) * TURN).map(|m| Message::new(c, m)).collect()
}

/// Lower-case hex SHA-256 over `canonical + "\n"` of each message, in the given order.
pub fn digest<'a>(canonicals: impl IntoIterator<Item = &'a str>) -> String {
    let mut hasher = Sha256::new();
    for canonical in canonicals {
        hasher.update(canonical.as_bytes());
        hasher.update(b"\n");
    }
    hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Pinned digest of set A (conversation 0, m = 0..1999).
pub const DIGEST_A: &str = "5460942fcac9e1b28d58961111fdced9185f61b188f41498558c8feed3d0ae6e";
/// Pinned digest of set B (100 conversations × 25 turns, in B's append order).
pub const DIGEST_B: &str = "377741822c948cf52eedd492acab37625c39220c0f685360663dadee81af6336";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prng_test_vector() {
        let mut rng = SplitMix64::for_message(0, 0);
        let got = [rng.next_u64(), rng.next_u64(), rng.next_u64()];
        assert_eq!(got, [646995126359979506, 2253979286968669252, 12877417409365039896]);
    }

    #[test]
    fn envelopes_match_the_pinned_sizes() {
        for m in 0..4 {
            let empty = canonical_with_text(0, m + 4, "");
            assert_eq!(empty.len(), ENVELOPE_BYTES[m as usize], "shape {m}: {empty}");
        }
    }

    #[test]
    fn first_message_prefix_and_ids() {
        let first = canonical(0, 0);
        assert!(first.starts_with(r#"{"role":"user","content":"hash query buffer field branch record graph cache "#));
        assert_eq!(call_id(0, 1), "call_0000_00001");
        assert_eq!(conv_id(99), "conv-0099");
        assert!(canonical(3, 6).contains(r#""tool_call_id":"call_0003_00005""#));
    }

    #[test]
    fn set_a_totals_and_digest() {
        let a = conversation(0, 2000);
        let total: usize = a.iter().map(|msg| msg.canonical.len()).sum();
        assert_eq!(total, 2_053_341);
        assert!(a.iter().all(|msg| (1024..=1032).contains(&msg.canonical.len())));
        assert_eq!(digest(a.iter().map(|msg| msg.canonical.as_str())), DIGEST_A);
    }

    #[test]
    fn set_b_digest_in_append_order() {
        let order = b_call_order(100, 25);
        assert_eq!(order.len(), 2500);
        assert_eq!(order[1], (1, 0));
        let messages: Vec<Message> = order.iter().flat_map(|&(c, t)| turn(c, t)).collect();
        assert_eq!(messages.len(), 10_000);
        assert_eq!(digest(messages.iter().map(|msg| msg.canonical.as_str())), DIGEST_B);
    }

    #[test]
    fn values_serialise_back_to_the_canonical_bytes() {
        for m in 0..8 {
            let msg = Message::new(7, m);
            let value = msg.value().unwrap();
            assert_eq!(serde_json::to_string(&value).unwrap(), msg.canonical);
        }
        let call = Message::new(0, 1).value().unwrap();
        let arguments = call["tool_calls"][0]["function"]["arguments"].as_str().unwrap();
        let inner: Value = serde_json::from_str(arguments).unwrap();
        assert_eq!(inner["top_k"], 5);
    }
}
