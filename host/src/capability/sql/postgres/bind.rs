//! Binding the contract's five value kinds to a prepared statement's parameters,
//! by the types PostgreSQL inferred for them. Nothing is ever truncated or
//! rounded into a different number: a value that does not fit is
//! `invalid-statement`, naming the parameter.
//!
//! | value | parameter types it binds to |
//! |---|---|
//! | null | any |
//! | integer | `int2`/`int4`/`int8`/`oid` (range-checked), `float4`/`float8` (when exactly representable), `numeric`, `boolean` (0 or 1) |
//! | real | `float8`; `float4` (within its range, rounded to its precision); `numeric` (finite values) |
//! | text | any type but `bytea`, sent in text form for the server to parse (`text`, `varchar`, `json`, `uuid`, `date`, …) |
//! | blob | `bytea` |
//!
//! Domains bind as their base type.

use std::borrow::Cow;
use std::error::Error;

use bytes::BytesMut;
use tokio_postgres::types::{Format, IsNull, Kind, ToSql, Type, to_sql_checked};

use crate::capability::sql::Value;
use crate::wit::SqlErrorKind;

/// One parameter, encoded as its type expects.
#[derive(Debug)]
pub enum Bound<'a> {
    Null,
    Bool(bool),
    I16(i16),
    I32(i32),
    I64(i64),
    Oid(u32),
    F32(f32),
    F64(f64),
    Bytes(&'a [u8]),
    /// Sent in text format: the server parses it with the type's input function.
    Text(Cow<'a, str>),
}

impl ToSql for Bound<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self {
            Bound::Null => return Ok(IsNull::Yes),
            Bound::Bool(v) => v.to_sql(ty, out)?,
            Bound::I16(v) => v.to_sql(ty, out)?,
            Bound::I32(v) => v.to_sql(ty, out)?,
            Bound::I64(v) => v.to_sql(ty, out)?,
            Bound::Oid(v) => v.to_sql(ty, out)?,
            Bound::F32(v) => v.to_sql(ty, out)?,
            Bound::F64(v) => v.to_sql(ty, out)?,
            Bound::Bytes(v) => v.to_sql(ty, out)?,
            Bound::Text(v) => {
                out.extend_from_slice(v.as_bytes());
                IsNull::No
            }
        };
        Ok(IsNull::No)
    }

    /// Checked by [`bind`] against the statement's types before encoding.
    fn accepts(_: &Type) -> bool {
        true
    }

    fn encode_format(&self, _: &Type) -> Format {
        match self {
            Bound::Text(_) => Format::Text,
            _ => Format::Binary,
        }
    }

    to_sql_checked!();
}

/// Binds `values` to the parameters `types` of a prepared statement.
pub fn bind<'a>(types: &[Type], values: &'a [Value]) -> Result<Vec<Bound<'a>>, SqlErrorKind> {
    if types.len() != values.len() {
        return Err(SqlErrorKind::InvalidStatement(format!(
            "the statement takes {} parameter(s) but {} value(s) were given",
            types.len(),
            values.len()
        )));
    }
    types.iter().zip(values).enumerate().map(|(i, (ty, value))| bind_one(i + 1, ty, value)).collect()
}

/// The type a value is encoded as: a domain's base type.
fn base(ty: &Type) -> &Type {
    match ty.kind() {
        Kind::Domain(inner) => base(inner),
        _ => ty,
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Integer(_) => "an integer",
        Value::Real(_) => "a real",
        Value::Text(_) => "text",
        Value::Blob(_) => "a blob",
    }
}

fn bind_one<'a>(n: usize, ty: &Type, value: &'a Value) -> Result<Bound<'a>, SqlErrorKind> {
    let misfit = |why: &str| SqlErrorKind::InvalidStatement(format!("parameter ${n} has type {ty}: {why}"));
    let range = |lo: i64, hi: i64| misfit(&format!("the integer does not fit ({lo} to {hi})"));
    let target = base(ty);
    Ok(match value {
        Value::Null => Bound::Null,
        Value::Integer(i) => match *target {
            Type::INT2 => Bound::I16(i16::try_from(*i).map_err(|_| range(i16::MIN.into(), i16::MAX.into()))?),
            Type::INT4 => Bound::I32(i32::try_from(*i).map_err(|_| range(i32::MIN.into(), i32::MAX.into()))?),
            Type::INT8 => Bound::I64(*i),
            Type::OID => Bound::Oid(u32::try_from(*i).map_err(|_| range(0, u32::MAX.into()))?),
            // Exact when converting back gives the same integer (compared wide, so
            // a float rounded up past i64::MAX cannot saturate into a match).
            Type::FLOAT4 if (*i as f32) as i128 == i128::from(*i) => Bound::F32(*i as f32),
            Type::FLOAT8 if (*i as f64) as i128 == i128::from(*i) => Bound::F64(*i as f64),
            Type::FLOAT4 | Type::FLOAT8 => return Err(misfit("the integer is not exactly representable")),
            Type::NUMERIC => Bound::Text(Cow::Owned(i.to_string())),
            Type::BOOL => match i {
                0 => Bound::Bool(false),
                1 => Bound::Bool(true),
                _ => return Err(misfit("a boolean takes the integer 0 or 1")),
            },
            _ => return Err(misfit("an integer cannot be bound to it")),
        },
        Value::Real(f) => match *target {
            Type::FLOAT8 => Bound::F64(*f),
            Type::FLOAT4 if f.is_finite() && f.abs() > f64::from(f32::MAX) => {
                return Err(misfit("the real is out of float4's range"));
            }
            Type::FLOAT4 => Bound::F32(*f as f32),
            Type::NUMERIC if f.is_finite() => Bound::Text(Cow::Owned(f.to_string())),
            Type::NUMERIC => return Err(misfit("a numeric takes finite reals only")),
            _ => return Err(misfit("a real cannot be bound to it")),
        },
        Value::Text(s) => match *target {
            Type::BYTEA => return Err(misfit("text cannot be bound to it; bind a blob")),
            _ => Bound::Text(Cow::Borrowed(s)),
        },
        Value::Blob(b) => match *target {
            Type::BYTEA => Bound::Bytes(b),
            _ => return Err(misfit(&format!("{} cannot be bound to it", kind_of(value)))),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(ty: Type, value: Value) -> Result<String, String> {
        let values = [value];
        bind(&[ty], &values).map(|b| format!("{:?}", b[0])).map_err(|e| format!("{e:?}"))
    }

    #[test]
    fn integers_are_range_checked_per_parameter_type() {
        assert_eq!(bound(Type::INT2, Value::Integer(32_767)), Ok("I16(32767)".into()));
        assert_eq!(bound(Type::INT4, Value::Integer(-2_147_483_648)), Ok("I32(-2147483648)".into()));
        for (ty, v) in [(Type::INT2, 32_768), (Type::INT4, 2_147_483_648), (Type::OID, -1), (Type::BOOL, 2)] {
            let err = bound(ty.clone(), Value::Integer(v)).expect_err("out of range");
            assert!(
                err.contains("InvalidStatement") && err.contains("parameter $1") && err.contains(ty.name()),
                "{err}"
            );
        }
        assert_eq!(bound(Type::BOOL, Value::Integer(1)), Ok("Bool(true)".into()));
        assert_eq!(bound(Type::NUMERIC, Value::Integer(i64::MAX)), Ok(format!("Text({:?})", i64::MAX.to_string())));
        assert!(bound(Type::FLOAT8, Value::Integer((1 << 53) + 1)).is_err(), "would round");
        assert!(bound(Type::FLOAT4, Value::Integer((1 << 24) + 1)).is_err(), "would round");
        assert!(bound(Type::TEXT, Value::Integer(1)).is_err(), "no implicit text conversion");
    }

    #[test]
    fn reals_text_blobs_and_nulls_bind_only_where_they_fit() {
        assert_eq!(bound(Type::FLOAT4, Value::Real(1.5)), Ok("F32(1.5)".into()));
        assert!(bound(Type::FLOAT4, Value::Real(1e300)).is_err());
        assert!(bound(Type::NUMERIC, Value::Real(f64::NAN)).is_err());
        assert!(bound(Type::INT8, Value::Real(1.0)).is_err(), "never truncated into an integer");
        assert_eq!(bound(Type::UUID, Value::Text("x".into())), Ok("Text(\"x\")".into()));
        assert!(bound(Type::BYTEA, Value::Text("x".into())).is_err());
        assert_eq!(bound(Type::BYTEA, Value::Blob(vec![1])), Ok("Bytes([1])".into()));
        assert!(bound(Type::TEXT, Value::Blob(vec![1])).is_err());
        assert_eq!(bound(Type::JSONB, Value::Null), Ok("Null".into()));
        let err = bind(&[Type::INT8, Type::INT8], &[Value::Integer(1)]).expect_err("count");
        assert!(format!("{err:?}").contains("takes 2 parameter(s) but 1"), "{err:?}");
    }
}
