//! The binary encoding of log records: little-endian fixed-width integers and
//! byte strings prefixed by their length as a `u32`.
//!
//! Opaque host bytes (`content`, `tag`, `body`) are copied in verbatim, so a
//! record decodes to exactly the bytes that were encoded. A [`Reader`] never
//! reads past its input: a short or malformed record is a [`DecodeError`], never
//! a panic.

use std::fmt;

/// A record that does not decode: it ends early, holds invalid UTF-8 or an
/// unknown tag. The caller adds which file and offset it came from.
#[derive(Debug, PartialEq)]
pub struct DecodeError(pub String);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A value too long for a `u32` length prefix, or a frame payload that is
/// too long (or empty).
#[derive(Debug, PartialEq)]
pub struct TooLong(pub usize);

impl From<TooLong> for crate::Error {
    fn from(TooLong(len): TooLong) -> Self {
        if len == 0 {
            return crate::Error::Storage("an empty record cannot be framed".into());
        }
        crate::Error::InvalidInput(format!(
            "a record of {len} bytes exceeds the filesystem adapter's limit of {} bytes",
            crate::frame::MAX_PAYLOAD
        ))
    }
}

/// Builds one record.
#[derive(Default)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    pub fn with_capacity(capacity: usize) -> Self {
        Self { buf: Vec::with_capacity(capacity) }
    }

    pub fn u8(&mut self, value: u8) {
        self.buf.push(value);
    }

    pub fn u32(&mut self, value: u32) {
        self.buf.extend_from_slice(&value.to_le_bytes());
    }

    pub fn u64(&mut self, value: u64) {
        self.buf.extend_from_slice(&value.to_le_bytes());
    }

    pub fn i64(&mut self, value: i64) {
        self.buf.extend_from_slice(&value.to_le_bytes());
    }

    pub fn raw(&mut self, value: &[u8]) {
        self.buf.extend_from_slice(value);
    }

    /// A length-prefixed byte string.
    pub fn bytes(&mut self, value: &[u8]) -> Result<(), TooLong> {
        let len = u32::try_from(value.len()).map_err(|_| TooLong(value.len()))?;
        self.u32(len);
        self.buf.extend_from_slice(value);
        Ok(())
    }

    pub fn str(&mut self, value: &str) -> Result<(), TooLong> {
        self.bytes(value.as_bytes())
    }

    /// `0` for none, `1` followed by the string otherwise.
    pub fn opt_str(&mut self, value: Option<&str>) -> Result<(), TooLong> {
        match value {
            None => {
                self.u8(0);
                Ok(())
            }
            Some(value) => {
                self.u8(1);
                self.str(value)
            }
        }
    }

    pub fn into_inner(self) -> Vec<u8> {
        self.buf
    }
}

/// Reads one record front to back.
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], DecodeError> {
        let end = self.pos.checked_add(len).filter(|&end| end <= self.bytes.len()).ok_or_else(|| {
            DecodeError(format!(
                "the record ends at byte {} but {len} more bytes were expected at byte {}",
                self.bytes.len(),
                self.pos
            ))
        })?;
        let slice = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>()?[0])
    }

    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    pub fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    pub fn fixed<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        self.array()
    }

    pub fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let len = self.u32()? as usize;
        self.take(len)
    }

    pub fn str(&mut self) -> Result<&'a str, DecodeError> {
        let at = self.pos;
        std::str::from_utf8(self.bytes()?)
            .map_err(|e| DecodeError(format!("the string at byte {at} is not UTF-8: {e}")))
    }

    pub fn opt_str(&mut self) -> Result<Option<&'a str>, DecodeError> {
        match self.u8()? {
            0 => Ok(None),
            1 => self.str().map(Some),
            other => Err(DecodeError(format!("optional-string marker {other} at byte {}", self.pos - 1))),
        }
    }

    /// Fails unless every byte was consumed.
    pub fn finish(&self) -> Result<(), DecodeError> {
        if self.pos == self.bytes.len() {
            Ok(())
        } else {
            Err(DecodeError(format!(
                "{} unexpected bytes after the record's end at byte {}",
                self.bytes.len() - self.pos,
                self.pos
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip() {
        let mut w = Writer::default();
        w.u8(7);
        w.u32(0xdead_beef);
        w.u64(u64::MAX);
        w.i64(-5);
        assert!(w.bytes(&[0, 1, 255]).is_ok());
        assert!(w.str("é").is_ok());
        assert!(w.opt_str(None).is_ok());
        assert!(w.opt_str(Some("x")).is_ok());
        let bytes = w.into_inner();
        let mut r = Reader::new(&bytes);
        assert_eq!(r.u8(), Ok(7));
        assert_eq!(r.u32(), Ok(0xdead_beef));
        assert_eq!(r.u64(), Ok(u64::MAX));
        assert_eq!(r.i64(), Ok(-5));
        assert_eq!(r.bytes(), Ok(&[0u8, 1, 255][..]));
        assert_eq!(r.str(), Ok("é"));
        assert_eq!(r.opt_str(), Ok(None));
        assert_eq!(r.opt_str(), Ok(Some("x")));
        assert_eq!(r.finish(), Ok(()));
    }

    #[test]
    fn short_and_malformed_input_is_an_error_at_every_cut() {
        let mut w = Writer::default();
        assert!(w.str("hello").is_ok());
        w.u64(1);
        let bytes = w.into_inner();
        for cut in 0..bytes.len() {
            let mut r = Reader::new(&bytes[..cut]);
            assert!(r.str().and_then(|_| r.u64()).is_err(), "cut at {cut}");
        }
        assert!(Reader::new(&[2]).opt_str().is_err());
        assert!(Reader::new(&[1, 0, 0, 0, 0xff]).str().is_err());
        assert!(Reader::new(&[1, 2]).finish().is_err());
    }
}
