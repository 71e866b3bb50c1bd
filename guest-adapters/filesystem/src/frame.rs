//! Append-only logs of checksummed frames.
//!
//! A frame is `MAGIC | payload length (u32 LE) | CRC-32 of payload (u32 LE) | payload`.
//! A log is read front to back and ends at its first anomaly (a short header, a
//! wrong magic, an impossible length, a frame running past the end of the file or
//! a checksum mismatch). The anomaly is a *torn tail* (the write in progress when
//! the process died, never acknowledged, possibly zero-filled by the filesystem)
//! when no intact frame starts anywhere after it; it is *damage*, reported with
//! its byte offset and never skipped, when one does.

use std::io::{self, Read, Seek, SeekFrom};

use crate::codec::TooLong;

pub const MAGIC: [u8; 4] = *b"STW1";
pub const HEADER_LEN: usize = 12;
/// Frames larger than this are refused on write and are an anomaly on read.
pub const MAX_PAYLOAD: usize = 1 << 30;

/// Where an intact frame sits in its log: `len` includes the 12-byte header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FrameLoc {
    pub offset: u64,
    pub len: u32,
}

impl FrameLoc {
    pub fn end(self) -> u64 {
        self.offset + u64::from(self.len)
    }
}

/// Appends the frame holding `payload` to `out`. Payloads are never empty: a
/// zero-length frame would read back from a zero-filled tail behind a torn
/// magic (the CRC-32 of nothing is 0), so it is refused here and on read.
pub fn encode_into(out: &mut Vec<u8>, payload: &[u8]) -> Result<(), TooLong> {
    if payload.is_empty() || payload.len() > MAX_PAYLOAD {
        return Err(TooLong(payload.len()));
    }
    out.reserve(HEADER_LEN + payload.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.extend_from_slice(payload);
    Ok(())
}

/// The frame holding `payload`.
pub fn encode(payload: &[u8]) -> Result<Vec<u8>, TooLong> {
    let mut out = Vec::new();
    encode_into(&mut out, payload)?;
    Ok(out)
}

/// The payload length and checksum a header announces; `None` if it cannot
/// start a frame (wrong magic, empty or impossible length).
pub fn parse_header(header: &[u8]) -> Option<(usize, u32)> {
    if header.len() < HEADER_LEN || header[..4] != MAGIC {
        return None;
    }
    let len = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
    let crc = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
    (len != 0 && len <= MAX_PAYLOAD).then_some((len, crc))
}

/// The payload of the intact frame that `bytes` holds exactly (as read back by
/// position), or `None` if it is not one.
pub fn whole_frame(bytes: &[u8]) -> Option<&[u8]> {
    let (len, crc) = parse_header(bytes)?;
    let payload = bytes.get(HEADER_LEN..)?;
    (payload.len() == len && crc32fast::hash(payload) == crc).then_some(payload)
}

/// True if an intact frame starts anywhere in `bytes`.
pub fn any_intact_frame(bytes: &[u8]) -> bool {
    let mut at = 0;
    while let Some(found) = bytes[at..].windows(MAGIC.len()).position(|w| w == MAGIC) {
        let start = at + found;
        let rest = &bytes[start..];
        if let Some((len, crc)) = parse_header(rest)
            && rest.len() >= HEADER_LEN + len
            && crc32fast::hash(&rest[HEADER_LEN..HEADER_LEN + len]) == crc
        {
            return true;
        }
        at = start + 1;
    }
    false
}

/// How a log read from some offset to the end of its file ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The last frame ends exactly at the end of the file.
    Clean,
    /// A torn tail starts at `valid_end`; it is ignored, and the next writer cuts it.
    Torn,
    /// Damage at this offset, followed by at least one intact frame.
    Damaged(u64),
}

/// Where the intact frames stop and how the log ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scan {
    pub valid_end: u64,
    pub end: End,
}

/// Reads the frames of `log` from `start` (a frame boundary) to `file_len`,
/// calling `each` with every intact frame in order. Stops at the first anomaly;
/// `each`'s error stops the read and is returned.
pub fn read_frames<R, E>(
    log: &mut R,
    start: u64,
    file_len: u64,
    mut each: impl FnMut(FrameLoc, &[u8]) -> Result<(), E>,
) -> Result<Result<Scan, E>, io::Error>
where
    R: Read + Seek,
{
    let mut reader = io::BufReader::with_capacity(64 * 1024, &mut *log);
    reader.seek(SeekFrom::Start(start))?;
    let mut pos = start;
    let mut payload = Vec::new();
    loop {
        let remaining = file_len.saturating_sub(pos);
        if remaining == 0 {
            return Ok(Ok(Scan { valid_end: pos, end: End::Clean }));
        }
        if remaining < HEADER_LEN as u64 {
            return Ok(Ok(Scan { valid_end: pos, end: End::Torn }));
        }
        let mut header = [0u8; HEADER_LEN];
        reader.read_exact(&mut header)?;
        let intact = match parse_header(&header) {
            Some((len, crc)) if (HEADER_LEN + len) as u64 <= remaining => {
                payload.resize(len, 0);
                reader.read_exact(&mut payload)?;
                crc32fast::hash(&payload) == crc
            }
            _ => false,
        };
        if !intact {
            drop(reader);
            let end = classify_anomaly(log, pos, file_len)?;
            return Ok(Ok(Scan { valid_end: pos, end }));
        }
        let loc = FrameLoc { offset: pos, len: (HEADER_LEN + payload.len()) as u32 };
        if let Err(e) = each(loc, &payload) {
            return Ok(Err(e));
        }
        pos = loc.end();
    }
}

/// An anomaly at `at` is a torn tail unless an intact frame starts after it.
fn classify_anomaly<R: Read + Seek>(log: &mut R, at: u64, file_len: u64) -> io::Result<End> {
    log.seek(SeekFrom::Start(at + 1))?;
    let mut rest = Vec::new();
    log.take(file_len.saturating_sub(at + 1)).read_to_end(&mut rest)?;
    Ok(if any_intact_frame(&rest) { End::Damaged(at) } else { End::Torn })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn log_of(payloads: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for p in payloads {
            assert!(encode_into(&mut out, p).is_ok());
        }
        out
    }

    /// The payloads read back and how the log ended.
    fn parse(bytes: &[u8]) -> (Vec<Vec<u8>>, Scan) {
        let mut frames = Vec::new();
        let mut cursor = Cursor::new(bytes.to_vec());
        let scan = read_frames(&mut cursor, 0, bytes.len() as u64, |_, p| {
            frames.push(p.to_vec());
            Ok::<(), ()>(())
        });
        match scan {
            Ok(Ok(scan)) => (frames, scan),
            other => panic!("unexpected {other:?}"),
        }
    }

    const PAYLOADS: [&[u8]; 4] = [b"first", b"2", b"third frame", b"the fourth and last frame"];

    #[test]
    fn every_cut_of_a_multi_frame_log_reads_back_the_complete_frames() {
        let bytes = log_of(&PAYLOADS);
        let mut ends = vec![0usize];
        for p in PAYLOADS {
            ends.push(ends[ends.len() - 1] + HEADER_LEN + p.len());
        }
        for cut in 0..=bytes.len() {
            let complete = ends.iter().filter(|&&e| e <= cut).count() - 1;
            let (frames, scan) = parse(&bytes[..cut]);
            assert_eq!(frames.len(), complete, "cut at {cut}");
            assert!(frames.iter().zip(PAYLOADS).all(|(f, p)| f == p), "cut at {cut}");
            assert_eq!(scan.valid_end, ends[complete] as u64, "cut at {cut}");
            let expected = if cut == ends[complete] { End::Clean } else { End::Torn };
            assert_eq!(scan.end, expected, "cut at {cut}");
        }
    }

    #[test]
    fn every_cut_of_the_last_frame_then_zero_fill_is_a_torn_tail() {
        let bytes = log_of(&PAYLOADS);
        let last_start = bytes.len() - HEADER_LEN - PAYLOADS[3].len();
        for cut in last_start..bytes.len() {
            // The filesystem may extend the file with zeros the write never filled.
            for fill in [0usize, 1, 7, 64] {
                let mut torn = bytes[..cut].to_vec();
                torn.resize(cut + fill, 0);
                let (frames, scan) = parse(&torn);
                assert_eq!(frames.len(), 3, "cut at {cut} + {fill} zeros");
                assert_eq!(scan.valid_end, last_start as u64);
                let expected = if torn.len() == last_start { End::Clean } else { End::Torn };
                assert_eq!(scan.end, expected, "cut at {cut} + {fill} zeros");
            }
        }
    }

    #[test]
    fn a_flipped_byte_anywhere_before_the_last_frame_is_damage_at_its_frame() {
        let bytes = log_of(&PAYLOADS);
        let mut starts = vec![0usize];
        for p in PAYLOADS {
            starts.push(starts[starts.len() - 1] + HEADER_LEN + p.len());
        }
        let last_start = starts[3];
        for at in 0..last_start {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x5a;
            let frame = starts.iter().rposition(|&s| s <= at).unwrap_or(0);
            let (frames, scan) = parse(&damaged);
            assert_eq!(frames.len(), frame, "flip at {at}");
            assert_eq!(scan.end, End::Damaged(starts[frame] as u64), "flip at {at}");
        }
    }

    #[test]
    fn a_zero_filled_tail_is_torn_not_damage() {
        let mut bytes = log_of(&[b"first"]);
        bytes.extend([0u8; 40]);
        let (frames, scan) = parse(&bytes);
        assert_eq!(frames.len(), 1);
        assert_eq!(scan.end, End::Torn);
    }

    #[test]
    fn a_torn_magic_followed_by_zeros_is_not_an_empty_frame() {
        let mut bytes = log_of(&[b"first"]);
        bytes.extend_from_slice(&MAGIC);
        bytes.extend([0u8; 8]);
        let (frames, scan) = parse(&bytes);
        assert_eq!((frames.len(), scan.end), (1, End::Torn));
        assert_eq!(encode(b""), Err(TooLong(0)));
    }

    #[test]
    fn whole_frame_checks_length_and_checksum() {
        let frame = log_of(&[b"abc"]);
        assert_eq!(whole_frame(&frame), Some(&b"abc"[..]));
        assert_eq!(whole_frame(&frame[..frame.len() - 1]), None);
        let mut bad = frame.clone();
        bad[HEADER_LEN] ^= 1;
        assert_eq!(whole_frame(&bad), None);
    }
}
