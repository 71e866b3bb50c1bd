//! The frames of `display.log`, format 2.
//!
//! ```text
//! header  'H' 2 log-id[16] tenant:str user:str conversation-id:str
//! insert  'I' first-seq:u64 count:u32 record*
//! update  'U' seq:u64 record
//! record  message-id:opt-str message-type:str content-type:str
//!         tool-call-id:opt-str status:opt-str body:bytes
//!         created-at:i64 updated-at:i64 tag:bytes
//! ```
//!
//! The header names the conversation the log belongs to, so a scan of the
//! whole store (`find-by-status`) knows it even behind hashed directory names.
//! An update frame supersedes every earlier version of its record.

use crate::codec::{DecodeError, Reader, TooLong, Writer};
use crate::exports::stowage::store::display_store::{DisplayRecord, StoredDisplayRecord};
use crate::logfile::{FORMAT, HEADER_KIND, LogId};
use crate::stowage::store::types::Scope;

pub const INSERT_KIND: u8 = b'I';
pub const UPDATE_KIND: u8 = b'U';

/// The conversation a display log belongs to.
#[derive(Clone, Debug, PartialEq)]
pub struct Owner {
    pub scope: Scope,
    pub conversation_id: String,
}

pub struct Header {
    pub format: u8,
    pub log_id: LogId,
    pub owner: Option<Owner>,
}

pub fn encode_header(log_id: LogId, owner: &Owner) -> Result<Vec<u8>, TooLong> {
    let mut w = Writer::default();
    w.u8(HEADER_KIND);
    w.u8(FORMAT);
    w.raw(&log_id);
    w.str(&owner.scope.tenant)?;
    w.str(&owner.scope.user)?;
    w.str(&owner.conversation_id)?;
    Ok(w.into_inner())
}

pub fn decode_header(payload: &[u8]) -> Result<Header, DecodeError> {
    let mut r = Reader::new(payload);
    r.u8()?;
    let format = r.u8()?;
    let log_id = r.fixed()?;
    if format != FORMAT {
        return Ok(Header { format, log_id, owner: None });
    }
    let scope = Scope { tenant: r.str()?.to_owned(), user: r.str()?.to_owned() };
    let owner = Owner { scope, conversation_id: r.str()?.to_owned() };
    r.finish()?;
    Ok(Header { format, log_id, owner: Some(owner) })
}

fn write_record(w: &mut Writer, r: &DisplayRecord) -> Result<(), TooLong> {
    w.opt_str(r.message_id.as_deref())?;
    w.str(&r.message_type)?;
    w.str(&r.content_type)?;
    w.opt_str(r.tool_call_id.as_deref())?;
    w.opt_str(r.status.as_deref())?;
    w.bytes(&r.body)?;
    w.i64(r.created_at);
    w.i64(r.updated_at);
    w.bytes(&r.tag)
}

fn read_record(r: &mut Reader<'_>) -> Result<DisplayRecord, DecodeError> {
    Ok(DisplayRecord {
        message_id: r.opt_str()?.map(str::to_owned),
        message_type: r.str()?.to_owned(),
        content_type: r.str()?.to_owned(),
        tool_call_id: r.opt_str()?.map(str::to_owned),
        status: r.opt_str()?.map(str::to_owned),
        body: r.bytes()?.to_vec(),
        created_at: r.i64()?,
        updated_at: r.i64()?,
        tag: r.bytes()?.to_vec(),
    })
}

/// An insert frame for `records` (contiguous seqs, checked by the caller).
pub fn encode_insert(records: &[StoredDisplayRecord]) -> Result<Vec<u8>, TooLong> {
    let mut w = Writer::default();
    w.u8(INSERT_KIND);
    w.u64(records.first().map_or(0, |r| r.seq));
    w.u32(u32::try_from(records.len()).map_err(|_| TooLong(records.len()))?);
    for r in records {
        write_record(&mut w, &r.record)?;
    }
    Ok(w.into_inner())
}

pub fn encode_update(record: &StoredDisplayRecord) -> Result<Vec<u8>, TooLong> {
    let mut w = Writer::default();
    w.u8(UPDATE_KIND);
    w.u64(record.seq);
    write_record(&mut w, &record.record)?;
    Ok(w.into_inner())
}

/// What the index keeps of a record: its seq, tool-call id and status.
pub struct Summary<'a> {
    pub seq: u64,
    pub tool_call_id: Option<&'a str>,
    pub status: Option<&'a str>,
}

/// The records of an insert or update frame, without copying their bodies.
pub fn summarize_records(payload: &[u8]) -> Result<Vec<Summary<'_>>, DecodeError> {
    let mut r = Reader::new(payload);
    let (first, count) = frame_head(&mut r)?;
    let mut out = Vec::with_capacity(count.min(4096) as usize);
    for i in 0..u64::from(count) {
        let seq = seq_at(first, i)?;
        r.opt_str()?;
        r.str()?;
        r.str()?;
        let tool_call_id = r.opt_str()?;
        let status = r.opt_str()?;
        r.bytes()?;
        r.i64()?;
        r.i64()?;
        r.bytes()?;
        out.push(Summary { seq, tool_call_id, status });
    }
    r.finish()?;
    Ok(out)
}

fn frame_head(r: &mut Reader<'_>) -> Result<(u64, u32), DecodeError> {
    match r.u8()? {
        INSERT_KIND => Ok((r.u64()?, r.u32()?)),
        UPDATE_KIND => Ok((r.u64()?, 1)),
        other => Err(DecodeError(format!("unknown display record kind {other}"))),
    }
}

fn seq_at(first: u64, i: u64) -> Result<u64, DecodeError> {
    first.checked_add(i).ok_or_else(|| DecodeError("seq overflows".into()))
}

/// Every record of an insert or update frame, with its seq.
pub fn decode_records(payload: &[u8]) -> Result<Vec<StoredDisplayRecord>, DecodeError> {
    let mut r = Reader::new(payload);
    let (first, count) = frame_head(&mut r)?;
    let mut out = Vec::with_capacity(count.min(4096) as usize);
    for i in 0..u64::from(count) {
        let seq = seq_at(first, i)?;
        out.push(StoredDisplayRecord { seq, record: read_record(&mut r)? });
    }
    r.finish()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(seq: u64, status: Option<&str>) -> StoredDisplayRecord {
        StoredDisplayRecord {
            seq,
            record: DisplayRecord {
                message_id: None,
                message_type: "assistant".into(),
                content_type: "tool_call".into(),
                tool_call_id: Some("c1".into()),
                status: status.map(Into::into),
                body: vec![2, 0, 1],
                created_at: 1,
                updated_at: -2,
                tag: vec![],
            },
        }
    }

    #[test]
    fn records_round_trip_byte_for_byte() {
        let batch = vec![record(3, Some("pending")), record(4, None)];
        let Ok(insert) = encode_insert(&batch) else { panic!("encodes") };
        assert_eq!(decode_records(&insert), Ok(batch.clone()));
        let summary: Result<Vec<_>, _> =
            summarize_records(&insert).map(|s| s.iter().map(|s| (s.seq, s.tool_call_id, s.status)).collect());
        assert_eq!(summary, Ok(vec![(3, Some("c1"), Some("pending")), (4, Some("c1"), None)]));
        let Ok(update) = encode_update(&batch[1]) else { panic!("encodes") };
        assert_eq!(decode_records(&update), Ok(vec![batch[1].clone()]));
        for cut in 1..insert.len() {
            assert!(decode_records(&insert[..cut]).is_err(), "cut at {cut}");
            assert!(summarize_records(&insert[..cut]).is_err(), "cut at {cut}");
        }
    }
}
