//! PostgreSQL's text forms of its date and time types, from their binary forms,
//! as the server prints them with `DateStyle = ISO` and `IntervalStyle =
//! postgres`; `timestamptz` in UTC (`+00`).
//!
//! Binary forms: `date` is days since 2000-01-01 (`i32`), `timestamp[tz]` and
//! `time` microseconds (`i64`) since 2000-01-01 00:00 or midnight, `timetz` adds
//! the zone's offset in seconds west of UTC, `interval` is (microseconds, days,
//! months). The extreme values are `infinity` and `-infinity`.

use std::fmt::Write as _;

const USECS_PER_DAY: i64 = 86_400_000_000;
/// Days from 1970-01-01 to 2000-01-01.
const EPOCH_2000: i64 = 10_957;

/// The proleptic Gregorian (year, month, day) of `days` since 1970-01-01.
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = (if mp < 10 { mp + 3 } else { mp - 9 }) as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `YYYY-MM-DD`, and whether it is BC (year 0 is 1 BC).
fn ymd(days_since_2000: i64) -> (String, bool) {
    let (year, month, day) = civil(days_since_2000 + EPOCH_2000);
    let (shown, bc) = if year <= 0 { (1 - year, true) } else { (year, false) };
    (format!("{shown:04}-{month:02}-{day:02}"), bc)
}

/// `HH:MM:SS` plus a fraction without trailing zeros, from non-negative
/// microseconds (hours may exceed 23 in an interval).
fn clock(usecs: u64) -> String {
    let (secs, frac) = (usecs / 1_000_000, usecs % 1_000_000);
    let mut out = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    if frac > 0 {
        let digits = format!("{frac:06}");
        let _ = write!(out, ".{}", digits.trim_end_matches('0'));
    }
    out
}

pub fn date(days: i32) -> String {
    match days {
        i32::MAX => "infinity".into(),
        i32::MIN => "-infinity".into(),
        days => {
            let (text, bc) = ymd(days.into());
            if bc { format!("{text} BC") } else { text }
        }
    }
}

pub fn time_of_day(usecs: i64) -> String {
    clock(usecs.unsigned_abs())
}

/// A zone offset as PostgreSQL prints it: `+05`, `-03:30`, `+01:02:03`.
fn offset(seconds_east: i64) -> String {
    let sign = if seconds_east < 0 { '-' } else { '+' };
    let s = seconds_east.unsigned_abs();
    let mut out = format!("{sign}{:02}", s / 3600);
    if !s.is_multiple_of(3600) {
        let _ = write!(out, ":{:02}", s / 60 % 60);
        if !s.is_multiple_of(60) {
            let _ = write!(out, ":{:02}", s % 60);
        }
    }
    out
}

pub fn time_tz(raw: &[u8; 12]) -> String {
    let (usecs, zone) = raw.split_at(8);
    let usecs = i64::from_be_bytes(usecs.try_into().unwrap_or_default());
    let west = i32::from_be_bytes(zone.try_into().unwrap_or_default());
    format!("{}{}", clock(usecs.unsigned_abs()), offset(-i64::from(west)))
}

/// A `timestamp` (or, with `utc`, a `timestamptz` shown in UTC).
pub fn timestamp(usecs: i64, utc: bool) -> String {
    match usecs {
        i64::MAX => return "infinity".into(),
        i64::MIN => return "-infinity".into(),
        _ => {}
    }
    let (days, time) = (usecs.div_euclid(USECS_PER_DAY), usecs.rem_euclid(USECS_PER_DAY));
    let (date, bc) = ymd(days);
    let mut out = format!("{date} {}", clock(time.unsigned_abs()));
    if utc {
        out.push_str("+00");
    }
    if bc {
        out.push_str(" BC");
    }
    out
}

/// Appends one interval field as PostgreSQL's `postgres` style does: a `+` on a
/// positive field after a negative one, plural unless exactly 1.
fn field(out: &mut String, value: i64, unit: &str, before_negative: &mut bool) {
    if value == 0 {
        return;
    }
    let space = if out.is_empty() { "" } else { " " };
    let plus = if *before_negative && value > 0 { "+" } else { "" };
    let plural = if value != 1 { "s" } else { "" };
    let _ = write!(out, "{space}{plus}{value} {unit}{plural}");
    *before_negative = value < 0;
}

pub fn interval(raw: &[u8; 16]) -> String {
    let usecs = i64::from_be_bytes(raw[0..8].try_into().unwrap_or_default());
    let days = i32::from_be_bytes(raw[8..12].try_into().unwrap_or_default());
    let months = i32::from_be_bytes(raw[12..16].try_into().unwrap_or_default());
    let mut out = String::new();
    let mut negative = false;
    field(&mut out, i64::from(months / 12), "year", &mut negative);
    field(&mut out, i64::from(months % 12), "mon", &mut negative);
    field(&mut out, i64::from(days), "day", &mut negative);
    if out.is_empty() || usecs != 0 {
        let space = if out.is_empty() { "" } else { " " };
        let sign = if usecs < 0 {
            "-"
        } else if negative {
            "+"
        } else {
            ""
        };
        let _ = write!(out, "{space}{sign}{}", clock(usecs.unsigned_abs()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_around_the_epochs_and_leap_days() {
        assert_eq!(date(0), "2000-01-01");
        assert_eq!(date(59), "2000-02-29");
        assert_eq!(date(-1), "1999-12-31");
        assert_eq!(date(-730_119), "0001-01-01");
        assert_eq!(date(-730_120), "0001-12-31 BC");
        assert_eq!(timestamp(-1, true), "1999-12-31 23:59:59.999999+00");
        assert_eq!(timestamp(1_500_000, false), "2000-01-01 00:00:01.5");
    }

    #[test]
    fn intervals_and_zone_offsets_follow_postgres_style() {
        let iv = |usecs: i64, days: i32, months: i32| {
            let mut raw = [0u8; 16];
            raw[0..8].copy_from_slice(&usecs.to_be_bytes());
            raw[8..12].copy_from_slice(&days.to_be_bytes());
            raw[12..16].copy_from_slice(&months.to_be_bytes());
            interval(&raw)
        };
        assert_eq!(iv(0, 0, 0), "00:00:00");
        assert_eq!(iv(3_723_000_000, 1, 14), "1 year 2 mons 1 day 01:02:03");
        assert_eq!(iv(7_200_000_000, -1, 0), "-1 days +02:00:00");
        assert_eq!(iv(-1, 0, -12), "-1 years -00:00:00.000001");
        assert_eq!(offset(19_800), "+05:30");
        assert_eq!(offset(-3_600), "-01");
    }
}
