//! The frames of `messages.log`, format 2.
//!
//! ```text
//! header  'H' 2 log-id[16] version:u64 updated-at:i64
//! append  'A' version:u64 at:i64 first-seq:u64 count:u32 message*
//! message id:str role:u8 created-at:i64 content:bytes tag:bytes
//! ```
//!
//! A log is one header frame followed by append frames; an append holds one
//! batch (so it is stored whole or not at all) or, in a rewritten log, a chunk
//! of the history. Message `i` of an append has seq `first-seq + i`. Integers
//! are little-endian; `str`/`bytes` are u32-length-prefixed.

use crate::codec::{DecodeError, Reader, TooLong, Writer};
use crate::logfile::{FORMAT, HEADER_KIND, LogId};
use crate::stowage::store::types::{Message, Role, StoredMessage};

pub const APPEND_KIND: u8 = b'A';

/// The fields of a header frame after the log id.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Header {
    pub format: u8,
    pub log_id: LogId,
    pub version: u64,
    pub updated_at: i64,
}

pub fn encode_header(log_id: LogId, version: u64, updated_at: i64) -> Vec<u8> {
    let mut w = Writer::with_capacity(34);
    w.u8(HEADER_KIND);
    w.u8(FORMAT);
    w.raw(&log_id);
    w.u64(version);
    w.i64(updated_at);
    w.into_inner()
}

pub fn decode_header(payload: &[u8]) -> Result<Header, DecodeError> {
    let mut r = Reader::new(payload);
    r.u8()?;
    let format = r.u8()?;
    let log_id = r.fixed()?;
    if format != FORMAT {
        return Ok(Header { format, log_id, version: 0, updated_at: 0 });
    }
    let header = Header { format, log_id, version: r.u64()?, updated_at: r.i64()? };
    r.finish()?;
    Ok(header)
}

fn role_code(role: Role) -> u8 {
    match role {
        Role::System => 0,
        Role::Developer => 1,
        Role::User => 2,
        Role::Assistant => 3,
        Role::Tool => 4,
    }
}

fn role_of(code: u8) -> Result<Role, DecodeError> {
    Ok(match code {
        0 => Role::System,
        1 => Role::Developer,
        2 => Role::User,
        3 => Role::Assistant,
        4 => Role::Tool,
        other => return Err(DecodeError(format!("unknown role {other}"))),
    })
}

/// An append frame for `messages` (contiguous seqs, checked by the caller).
pub fn encode_append(version: u64, at: i64, messages: &[StoredMessage]) -> Result<Vec<u8>, TooLong> {
    let size: usize =
        messages.iter().map(|m| 29 + m.message.id.len() + m.message.content.len() + m.message.tag.len()).sum();
    let mut w = Writer::with_capacity(29 + size);
    w.u8(APPEND_KIND);
    w.u64(version);
    w.i64(at);
    w.u64(messages.first().map_or(0, |m| m.seq));
    w.u32(u32::try_from(messages.len()).map_err(|_| TooLong(messages.len()))?);
    for m in messages {
        let m = &m.message;
        w.str(&m.id)?;
        w.u8(role_code(m.role));
        w.i64(m.created_at);
        w.bytes(&m.content)?;
        w.bytes(&m.tag)?;
    }
    Ok(w.into_inner())
}

/// What an append frame changes in the index: its version and time, its
/// first seq and its messages' ids (content is skipped, not copied).
pub struct AppendSummary<'a> {
    pub version: u64,
    pub at: i64,
    pub first_seq: u64,
    pub ids: Vec<&'a str>,
}

pub fn summarize_append(payload: &[u8]) -> Result<AppendSummary<'_>, DecodeError> {
    let mut r = Reader::new(payload);
    r.u8()?;
    let (version, at, first_seq, count) = (r.u64()?, r.i64()?, r.u64()?, r.u32()?);
    let mut ids = Vec::with_capacity(count.min(4096) as usize);
    for _ in 0..count {
        ids.push(r.str()?);
        role_of(r.u8()?)?;
        r.i64()?;
        r.bytes()?;
        r.bytes()?;
    }
    r.finish()?;
    Ok(AppendSummary { version, at, first_seq, ids })
}

/// Every message of an append frame, with its seq.
pub fn decode_append(payload: &[u8]) -> Result<Vec<StoredMessage>, DecodeError> {
    let mut r = Reader::new(payload);
    r.u8()?;
    r.u64()?;
    r.i64()?;
    let (first_seq, count) = (r.u64()?, r.u32()?);
    let mut out = Vec::with_capacity(count.min(4096) as usize);
    for i in 0..u64::from(count) {
        let id = r.str()?.to_owned();
        let role = role_of(r.u8()?)?;
        let created_at = r.i64()?;
        let content = r.bytes()?.to_vec();
        let tag = r.bytes()?.to_vec();
        let seq = first_seq.checked_add(i).ok_or_else(|| DecodeError("seq overflows".into()))?;
        out.push(StoredMessage { seq, message: Message { id, role, created_at, content, tag } });
    }
    r.finish()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(seq: u64, id: &str, role: Role) -> StoredMessage {
        StoredMessage {
            seq,
            message: Message {
                id: id.into(),
                role,
                created_at: -7,
                content: vec![0x02, 0, 255, b'{'],
                tag: vec![9; 32],
            },
        }
    }

    #[test]
    fn append_frames_round_trip_byte_for_byte() {
        let batch = vec![message(5, "a", Role::Tool), message(6, "é", Role::System)];
        let Ok(payload) = encode_append(3, 99, &batch) else { panic!("encodes") };
        assert_eq!(decode_append(&payload), Ok(batch));
        let summary = summarize_append(&payload).map(|s| (s.version, s.at, s.first_seq, s.ids));
        assert_eq!(summary, Ok((3, 99, 5, vec!["a", "é"])));
    }

    #[test]
    fn headers_round_trip() {
        let payload = encode_header([7; 16], 4, -1);
        let header = decode_header(&payload);
        assert_eq!(header, Ok(Header { format: FORMAT, log_id: [7; 16], version: 4, updated_at: -1 }));
    }

    #[test]
    fn truncated_append_frames_do_not_decode() {
        let Ok(payload) = encode_append(1, 1, &[message(1, "a", Role::User)]) else { panic!() };
        for cut in 1..payload.len() {
            assert!(decode_append(&payload[..cut]).is_err(), "cut at {cut}");
            assert!(summarize_append(&payload[..cut]).is_err(), "cut at {cut}");
        }
    }
}
