//! Test fixture: an adapter that misbehaves on request. `open` picks the behaviour
//! from the conversation id:
//!
//! - `loop`: spins forever (the host's deadline must stop it);
//! - `memory-bomb`: allocates until memory runs out (the host's cap must stop it);
//! - `trap`: panics;
//! - `escape:<host path>`: tries to read `<host path>` and other places outside its
//!   data directory (including its sibling `secret.txt`), to read the environment and arguments and to open a socket;
//!   fails with `access-denied(report)` when everything was refused and with
//!   `storage("ESCAPED: …")` when anything got through;
//! - anything else: succeeds, reporting in `message-count` how many calls this
//!   instance has served (so tests can tell a fresh instance from a reused one).
//!
//! Every other function fails with `unsupported`.

wit_bindgen::generate!({
    path: "../../../wit",
    world: "adapter",
});

use std::sync::atomic::{AtomicU64, Ordering};

use exports::stowage::store::conversation_store::{
    AppendOutcome, ConversationInfo, ConversationMeta, Guest as ConversationStore, Message,
    MessageRange, Scope, StoredMessage, TruncateOutcome,
};
use exports::stowage::store::display_store::{
    DisplayRecord, Guest as DisplayStore, LocatedDisplayRecord, StoredDisplayRecord,
};
use stowage::store::types::Error;

static CALLS: AtomicU64 = AtomicU64::new(0);

fn unsupported<T>() -> Result<T, Error> {
    Err(Error::Unsupported("hostile test adapter".to_owned()))
}

fn escape_attempts(host_path: &str) -> Result<ConversationInfo, Error> {
    let mut escaped = Vec::new();
    let mut refused = Vec::new();
    let targets = [
        host_path.to_owned(),
        format!("/data/../{}", host_path.trim_start_matches('/')),
        "/data/../secret.txt".to_owned(),
        "/data/../../../../etc/passwd".to_owned(),
        "/etc/passwd".to_owned(),
        "../etc/passwd".to_owned(),
        "/".to_owned(),
    ];
    for target in &targets {
        match std::fs::read(target) {
            Ok(_) => escaped.push(format!("read {target}")),
            Err(e) => refused.push(format!("read {target}: {e}")),
        }
        match std::fs::read_dir(target) {
            Ok(_) => escaped.push(format!("listed {target}")),
            Err(e) => refused.push(format!("list {target}: {e}")),
        }
    }
    if std::env::vars().count() > 0 {
        escaped.push("environment variables are visible".to_owned());
    }
    if std::env::args().count() > 0 {
        escaped.push("arguments are visible".to_owned());
    }
    match std::net::TcpStream::connect("127.0.0.1:9") {
        Ok(_) => escaped.push("opened a TCP connection".to_owned()),
        Err(e) => refused.push(format!("tcp connect: {e}")),
    }
    if escaped.is_empty() {
        Err(Error::AccessDenied(refused.join("; ")))
    } else {
        Err(Error::Storage(format!("ESCAPED: {}", escaped.join("; "))))
    }
}

struct Hostile;

impl ConversationStore for Hostile {
    fn open(
        scope: Scope,
        conversation_id: String,
        meta: ConversationMeta,
        now: i64,
    ) -> Result<ConversationInfo, Error> {
        let calls = CALLS.fetch_add(1, Ordering::Relaxed) + 1;
        match conversation_id.as_str() {
            "loop" => loop {
                std::hint::black_box(calls);
            },
            "memory-bomb" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "trap" => panic!("hostile adapter trapped on purpose"),
            id if id.starts_with("escape:") => escape_attempts(&id["escape:".len()..]),
            _ => Ok(ConversationInfo {
                id: conversation_id,
                scope,
                meta,
                created_at: now,
                updated_at: now,
                message_count: calls,
                last_seq: 0,
                version: 0,
            }),
        }
    }

    fn info(_: Scope, _: String) -> Result<ConversationInfo, Error> {
        unsupported()
    }
    fn append(_: Scope, _: String, _: Vec<Message>, _: Option<u64>, _: i64) -> Result<AppendOutcome, Error> {
        unsupported()
    }
    fn replace(_: Scope, _: String, _: Vec<Message>, _: Option<u64>, _: i64) -> Result<u64, Error> {
        unsupported()
    }
    fn load(_: Scope, _: String, _: MessageRange, _: u32) -> Result<Vec<StoredMessage>, Error> {
        unsupported()
    }
    fn truncate_after(_: Scope, _: String, _: u64, _: Option<u64>, _: i64) -> Result<TruncateOutcome, Error> {
        unsupported()
    }
    fn delete(_: Scope, _: String) -> Result<bool, Error> {
        unsupported()
    }
    fn list(_: Scope, _: Option<String>, _: u32) -> Result<Vec<ConversationInfo>, Error> {
        unsupported()
    }
}

impl DisplayStore for Hostile {
    fn insert(_: Scope, _: String, _: Vec<DisplayRecord>) -> Result<Vec<u64>, Error> {
        unsupported()
    }
    fn by_tool_call_id(_: Scope, _: String, _: String) -> Result<Vec<StoredDisplayRecord>, Error> {
        unsupported()
    }
    fn update(_: Scope, _: String, _: u64, _: DisplayRecord) -> Result<(), Error> {
        unsupported()
    }
    fn list(_: Scope, _: String, _: u64, _: u32) -> Result<Vec<StoredDisplayRecord>, Error> {
        unsupported()
    }
    fn find_by_status(_: Vec<String>, _: u32) -> Result<Vec<LocatedDisplayRecord>, Error> {
        unsupported()
    }
}

export!(Hostile);
