//! Result columns as the contract's five value kinds. Rows arrive in binary
//! format; each column is read by its type:
//!
//! | column type | value |
//! |---|---|
//! | `int2`, `int4`, `int8`, `oid` | integer |
//! | `boolean` | integer 0 or 1 |
//! | `float4`, `float8` | real |
//! | `bytea` | blob |
//! | `void` (e.g. `SELECT pg_advisory_xact_lock(…)`) | null |
//! | `text`, `varchar`, `bpchar`, `name`, `"char"`, `json`, `jsonb`, `xml`, enums, unknown | text |
//! | `numeric`, `uuid`, `date`, `time`, `timetz`, `timestamp`, `timestamptz`, `interval`, `inet`, `cidr` | text: their PostgreSQL text form (`timestamptz` in UTC, `+00`; dates and times in ISO style) |
//! | a domain | as its base type |
//!
//! Any other type (arrays, ranges, composites, geometry, money, …) is refused with
//! `invalid-statement` naming the column and suggesting a cast to text in the
//! query — never garbled.

use std::error::Error;
use std::fmt::Write as _;

use tokio_postgres::types::{FromSql, Kind, Type};

use super::time;
use crate::capability::sql::Value;
use crate::wit::SqlErrorKind;

/// A column's raw bytes, whatever its type; `None` for SQL NULL.
pub struct Raw<'a>(pub Option<&'a [u8]>);

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
        Ok(Raw(Some(raw)))
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn Error + Sync + Send>> {
        Ok(Raw(None))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// Why a column's bytes did not decode (the server sent something malformed).
fn malformed(column: &str, ty: &Type) -> SqlErrorKind {
    SqlErrorKind::Io(format!("the server sent a malformed {ty} value in column `{column}`"))
}

fn array<const N: usize>(raw: &[u8], column: &str, ty: &Type) -> Result<[u8; N], SqlErrorKind> {
    raw.try_into().map_err(|_| malformed(column, ty))
}

fn utf8(raw: &[u8], column: &str, ty: &Type) -> Result<String, SqlErrorKind> {
    String::from_utf8(raw.to_vec()).map_err(|_| malformed(column, ty))
}

/// The value of one column of type `ty`.
pub fn value(column: &str, ty: &Type, raw: Raw<'_>) -> Result<Value, SqlErrorKind> {
    let Some(raw) = raw.0 else { return Ok(Value::Null) };
    match ty.kind() {
        Kind::Domain(base) => return value(column, base, Raw(Some(raw))),
        Kind::Enum(_) => return utf8(raw, column, ty).map(Value::Text),
        _ => {}
    }
    let bad = || malformed(column, ty);
    Ok(match *ty {
        Type::BOOL => Value::Integer(i64::from(array::<1>(raw, column, ty)?[0] != 0)),
        Type::INT2 => Value::Integer(i16::from_be_bytes(array(raw, column, ty)?).into()),
        Type::INT4 => Value::Integer(i32::from_be_bytes(array(raw, column, ty)?).into()),
        Type::INT8 => Value::Integer(i64::from_be_bytes(array(raw, column, ty)?)),
        Type::OID => Value::Integer(u32::from_be_bytes(array(raw, column, ty)?).into()),
        Type::FLOAT4 => Value::Real(f32::from_be_bytes(array(raw, column, ty)?).into()),
        Type::FLOAT8 => Value::Real(f64::from_be_bytes(array(raw, column, ty)?)),
        Type::BYTEA => Value::Blob(raw.to_vec()),
        Type::VOID => Value::Null,
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN | Type::JSON | Type::XML => {
            Value::Text(utf8(raw, column, ty)?)
        }
        Type::JSONB => match raw.split_first() {
            Some((1, json)) => Value::Text(utf8(json, column, ty)?),
            _ => return Err(bad()),
        },
        Type::CHAR => Value::Text(char_text(array::<1>(raw, column, ty)?[0])),
        Type::UUID => Value::Text(uuid(&array::<16>(raw, column, ty)?)),
        Type::NUMERIC => Value::Text(numeric(raw).ok_or_else(bad)?),
        Type::DATE => Value::Text(time::date(i32::from_be_bytes(array(raw, column, ty)?))),
        Type::TIME => Value::Text(time::time_of_day(i64::from_be_bytes(array(raw, column, ty)?))),
        Type::TIMETZ => Value::Text(time::time_tz(&array::<12>(raw, column, ty)?)),
        Type::TIMESTAMP => Value::Text(time::timestamp(i64::from_be_bytes(array(raw, column, ty)?), false)),
        Type::TIMESTAMPTZ => Value::Text(time::timestamp(i64::from_be_bytes(array(raw, column, ty)?), true)),
        Type::INTERVAL => Value::Text(time::interval(&array::<16>(raw, column, ty)?)),
        Type::INET | Type::CIDR => Value::Text(inet(raw, *ty == Type::CIDR).ok_or_else(bad)?),
        _ if ty.name() == "citext" => Value::Text(utf8(raw, column, ty)?),
        _ => return Err(unreadable(column, ty)),
    })
}

/// The types [`value`] reads (besides enums, domains over them and `citext`).
const READABLE: &[Type] = &[
    Type::VOID,
    Type::BOOL,
    Type::INT2,
    Type::INT4,
    Type::INT8,
    Type::OID,
    Type::FLOAT4,
    Type::FLOAT8,
    Type::BYTEA,
    Type::TEXT,
    Type::VARCHAR,
    Type::BPCHAR,
    Type::NAME,
    Type::UNKNOWN,
    Type::JSON,
    Type::XML,
    Type::JSONB,
    Type::CHAR,
    Type::UUID,
    Type::NUMERIC,
    Type::DATE,
    Type::TIME,
    Type::TIMETZ,
    Type::TIMESTAMP,
    Type::TIMESTAMPTZ,
    Type::INTERVAL,
    Type::INET,
    Type::CIDR,
];

fn unreadable(column: &str, ty: &Type) -> SqlErrorKind {
    SqlErrorKind::InvalidStatement(format!(
        "column `{column}` has type {ty}, which the host does not hand to adapters; cast it in the query \
         (e.g. `{column}::text`)"
    ))
}

/// `Ok` if the host reads columns of type `ty`: checked before a query runs.
pub fn readable(column: &str, ty: &Type) -> Result<(), SqlErrorKind> {
    let known = match ty.kind() {
        Kind::Domain(base) => return readable(column, base),
        Kind::Enum(_) => true,
        _ => READABLE.contains(ty) || ty.name() == "citext",
    };
    if known { Ok(()) } else { Err(unreadable(column, ty)) }
}

/// PostgreSQL's text form of a `"char"`: the character, or an octal escape.
fn char_text(byte: u8) -> String {
    match byte {
        0 => String::new(),
        b if b.is_ascii() => char::from(b).to_string(),
        b => format!("\\{b:03o}"),
    }
}

fn uuid(b: &[u8; 16]) -> String {
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

fn be16(raw: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(raw.get(at..at + 2)?.try_into().ok()?))
}

/// A `numeric` in its text form: `ndigits, weight, sign, dscale` then base-10000
/// digits, `weight` being the power of 10000 of the first.
fn numeric(raw: &[u8]) -> Option<String> {
    let ndigits = usize::from(be16(raw, 0)?);
    let weight = i64::from(be16(raw, 2)? as i16);
    let (sign, dscale) = (be16(raw, 4)?, usize::from(be16(raw, 6)?));
    match sign {
        0xC000 => return Some("NaN".into()),
        0xD000 => return Some("Infinity".into()),
        0xF000 => return Some("-Infinity".into()),
        0x0000 | 0x4000 => {}
        _ => return None,
    }
    let digits: Vec<u16> = (0..ndigits).map(|i| be16(raw, 8 + 2 * i)).collect::<Option<_>>()?;
    // The base-10000 digit at power `p` (zero outside the stored ones).
    let at = |p: i64| usize::try_from(weight - p).ok().and_then(|i| digits.get(i)).copied().unwrap_or(0);
    let mut out = String::new();
    if sign == 0x4000 && ndigits > 0 {
        out.push('-');
    }
    if weight < 0 {
        out.push('0');
    } else {
        let _ = write!(out, "{}", at(weight));
        for p in (0..weight).rev() {
            let _ = write!(out, "{:04}", at(p));
        }
    }
    if dscale > 0 {
        let mut fraction = String::new();
        let mut p = -1;
        while fraction.len() < dscale {
            let _ = write!(fraction, "{:04}", at(p));
            p -= 1;
        }
        fraction.truncate(dscale);
        out.push('.');
        out.push_str(&fraction);
    }
    Some(out)
}

/// An `inet`/`cidr`: family (2: IPv4, 3: IPv6), prefix bits, is-cidr, length,
/// address. `inet` omits a full-length prefix, as PostgreSQL prints it.
fn inet(raw: &[u8], cidr: bool) -> Option<String> {
    let (&family, rest) = raw.split_first()?;
    let (&bits, rest) = rest.split_first()?;
    let address = rest.get(2..)?;
    let (text, full) = match family {
        2 => (std::net::Ipv4Addr::from(<[u8; 4]>::try_from(address).ok()?).to_string(), 32),
        3 => (std::net::Ipv6Addr::from(<[u8; 16]>::try_from(address).ok()?).to_string(), 128),
        _ => return None,
    };
    Some(if cidr || bits != full { format!("{text}/{bits}") } else { text })
}
