//! The file format of one conversation: its fields in a fixed order, numbers
//! little-endian, strings and bytes prefixed with their length (u32). Opaque
//! content and tags are copied verbatim.
//!
//! ```text
//! "stowage1" tenant user id has_header [meta.content meta.tag created_at updated_at version]
//! count { id role created_at content tag }                       messages, seq 1..
//! count { message_id? message_type content_type tool_call_id? status?
//!         created_at updated_at body tag }                       display records, seq 1..
//! ```

use crate::exports::stowage::store::display_store::DisplayRecord;
use crate::stowage::store::types::{ConversationMeta, Message, Role, Scope};
use crate::{Conversation, Header};

const MAGIC: &[u8; 8] = b"stowage1";
const ROLES: [Role; 5] = [
    Role::System,
    Role::Developer,
    Role::User,
    Role::Assistant,
    Role::Tool,
];

pub fn encode(c: &Conversation) -> Vec<u8> {
    let mut w = Writer(MAGIC.to_vec());
    w.str(&c.scope.tenant);
    w.str(&c.scope.user);
    w.str(&c.id);
    w.u8(u8::from(c.header.is_some()));
    if let Some(h) = &c.header {
        w.bytes(&h.meta.content);
        w.bytes(&h.meta.tag);
        w.u64(h.created_at as u64);
        w.u64(h.updated_at as u64);
        w.u64(h.version);
    }
    w.u32(c.messages.len() as u32);
    for m in &c.messages {
        w.str(&m.id);
        w.u8(ROLES.iter().position(|r| *r == m.role).unwrap_or_default() as u8);
        w.u64(m.created_at as u64);
        w.bytes(&m.content);
        w.bytes(&m.tag);
    }
    w.u32(c.display.len() as u32);
    for r in &c.display {
        w.opt_str(r.message_id.as_deref());
        w.str(&r.message_type);
        w.str(&r.content_type);
        w.opt_str(r.tool_call_id.as_deref());
        w.opt_str(r.status.as_deref());
        w.u64(r.created_at as u64);
        w.u64(r.updated_at as u64);
        w.bytes(&r.body);
        w.bytes(&r.tag);
    }
    w.0
}

/// The conversation in `data`; `None` if the file is damaged (cut short, wrong
/// format).
pub fn decode(data: &[u8]) -> Option<Conversation> {
    let mut r = Reader(data);
    if r.take(MAGIC.len())? != MAGIC {
        return None;
    }
    let scope = Scope {
        tenant: r.str()?,
        user: r.str()?,
    };
    let id = r.str()?;
    let header = match r.u8()? {
        0 => None,
        _ => Some(Header {
            meta: ConversationMeta {
                content: r.bytes()?,
                tag: r.bytes()?,
            },
            created_at: r.u64()? as i64,
            updated_at: r.u64()? as i64,
            version: r.u64()?,
        }),
    };
    let mut messages = Vec::new();
    for _ in 0..r.u32()? {
        messages.push(Message {
            id: r.str()?,
            role: *ROLES.get(usize::from(r.u8()?))?,
            created_at: r.u64()? as i64,
            content: r.bytes()?,
            tag: r.bytes()?,
        });
    }
    let mut display = Vec::new();
    for _ in 0..r.u32()? {
        display.push(DisplayRecord {
            message_id: r.opt_str()?,
            message_type: r.str()?,
            content_type: r.str()?,
            tool_call_id: r.opt_str()?,
            status: r.opt_str()?,
            created_at: r.u64()? as i64,
            updated_at: r.u64()? as i64,
            body: r.bytes()?,
            tag: r.bytes()?,
        });
    }
    r.0.is_empty().then_some(Conversation {
        scope,
        id,
        header,
        messages,
        display,
    })
}

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, v: &[u8]) {
        self.u32(v.len() as u32);
        self.0.extend_from_slice(v);
    }
    fn str(&mut self, v: &str) {
        self.bytes(v.as_bytes());
    }
    fn opt_str(&mut self, v: Option<&str>) {
        self.u8(u8::from(v.is_some()));
        if let Some(v) = v {
            self.str(v);
        }
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn bytes(&mut self) -> Option<Vec<u8>> {
        let len = self.u32()? as usize;
        Some(self.take(len)?.to_vec())
    }
    fn str(&mut self) -> Option<String> {
        String::from_utf8(self.bytes()?).ok()
    }
    fn opt_str(&mut self) -> Option<Option<String>> {
        match self.u8()? {
            0 => Some(None),
            _ => Some(Some(self.str()?)),
        }
    }
}
