//! Lower-case hexadecimal, for digests and cursor payloads.

use std::fmt::Write;

/// `bytes` as lower-case hex.
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// The bytes of an even-length hex string; `None` for anything else (never panics).
pub fn decode(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_garbage() {
        assert_eq!(encode(&[0, 0xab, 0xff]), "00abff");
        assert_eq!(decode("00abff"), Some(vec![0, 0xab, 0xff]));
        for bad in ["0", "zz", "aé", "+1"] {
            assert_eq!(decode(bad), None, "{bad}");
        }
    }
}
