//! Wall-clock time in the record model's unit.

/// Milliseconds since the Unix epoch, saturating (never panics on a clock before 1970).
pub fn now_millis() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
}
