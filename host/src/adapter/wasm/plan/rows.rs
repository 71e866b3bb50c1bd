//! The load plan's rows as records, and the check that a page holds exactly
//! the seqs its range calls for. Pure functions of the rows: no wasm, no SQL.

use crate::adapter::raw::{Range, RawMessage, RawStored};
use crate::capability::sql::Value;
use crate::model::Role;

/// The plan's rows as records, in ascending order if the statement returned
/// them newest first, and the conversation's newest seq (the same on every
/// row). `Err` names the first row that is not a record.
pub fn records(rows: Vec<Vec<Value>>, newest_first: bool) -> Result<(Vec<RawStored>, u64), String> {
    let mut newest = None;
    let mut records = Vec::with_capacity(rows.len());
    for (i, row) in rows.into_iter().enumerate() {
        let (record, its_newest) = record(row).map_err(|what| format!("the load plan's row {}: {what}", i + 1))?;
        if *newest.get_or_insert(its_newest) != its_newest {
            return Err(format!("the load plan's row {}: another newest seq than the first row's", i + 1));
        }
        records.push(record);
    }
    if newest_first {
        records.reverse();
    }
    Ok((records, newest.unwrap_or(0)))
}

/// One row: seq, id, role, created at, content, tag, and the conversation's
/// newest seq. Errors name the column and the kind of value found, never the
/// value.
fn record(row: Vec<Value>) -> Result<(RawStored, u64), String> {
    let columns = row.len();
    let Ok([seq, id, role, created_at, content, tag, newest]) = <[Value; 7]>::try_from(row) else {
        return Err(format!("{columns} columns, not 7"));
    };
    let newest = match newest {
        Value::Integer(newest) if newest >= 1 => newest as u64,
        Value::Integer(_) => return Err("a newest seq below 1".into()),
        other => return Err(kind("newest seq", "an integer", &other)),
    };
    let seq = match seq {
        Value::Integer(seq) if seq >= 1 => seq as u64,
        Value::Integer(_) => return Err("a seq below 1".into()),
        other => return Err(kind("seq", "an integer", &other)),
    };
    let Value::Text(id) = id else { return Err(kind("id", "text", &id)) };
    let role = match role {
        Value::Integer(code) => role_of(code).ok_or_else(|| format!("role code {code} is no role"))?,
        other => return Err(kind("role", "an integer", &other)),
    };
    let Value::Integer(created_at) = created_at else { return Err(kind("created at", "an integer", &created_at)) };
    let Value::Blob(content) = content else { return Err(kind("content", "a blob", &content)) };
    let Value::Blob(tag) = tag else { return Err(kind("tag", "a blob", &tag)) };
    Ok((RawStored { seq, message: RawMessage { id, role, created_at, content, tag } }, newest))
}

/// The role at `code`, its index in the WIT `role` enum (contract order).
fn role_of(code: i64) -> Option<Role> {
    usize::try_from(code).ok().and_then(|i| Role::ALL.get(i).copied())
}

fn kind(column: &str, expected: &str, found: &Value) -> String {
    let found = match found {
        Value::Null => "null",
        Value::Integer(_) => "an integer",
        Value::Real(_) => "a real",
        Value::Text(_) => "text",
        Value::Blob(_) => "a blob",
    };
    format!("{column} is {found}, not {expected}")
}

/// Whether `records` (ascending, contiguous as the client checks, not empty) are
/// exactly the seqs `range` and `limit` call for in a conversation whose seqs run
/// from 1 to `newest`.
pub fn whole(records: &[RawStored], newest: u64, range: Range, limit: u32) -> Result<(), String> {
    let (Some(first), Some(last)) = (records.first().map(|r| r.seq), records.last().map(|r| r.seq)) else {
        return Ok(());
    };
    let count = u64::try_from(records.len()).unwrap_or(u64::MAX);
    let limit = u64::from(limit);
    let (from, to) = match range {
        Range::Latest => (newest.saturating_sub(limit.saturating_sub(1)).max(1), newest),
        Range::After(after) => (after.saturating_add(1), newest.min(after.saturating_add(limit))),
        Range::Before(before) => {
            let to = newest.min(before.saturating_sub(1));
            (to.saturating_sub(limit.saturating_sub(1)).max(1), to)
        }
    };
    if (first, last) == (from, to) && count == to - from + 1 {
        return Ok(());
    }
    Err(format!(
        "the load plan returned seqs {first} to {last} where the conversation, whose newest seq is {newest}, \
         holds {from} to {to}: its database is corrupt or inconsistent"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(seq: i64, role: i64) -> Vec<Value> {
        vec![
            Value::Integer(seq),
            Value::Text(format!("m{seq}")),
            Value::Integer(role),
            Value::Integer(7),
            Value::Blob(vec![1, 2]),
            Value::Blob(vec![9; 21]),
            Value::Integer(3),
        ]
    }

    #[test]
    fn rows_become_records_in_ascending_order() -> Result<(), String> {
        let (newest_first, newest) = records(vec![row(3, 4), row(2, 0)], true)?;
        assert_eq!(newest, 3);
        assert_eq!(newest_first.iter().map(|r| r.seq).collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!((newest_first[0].message.role, newest_first[1].message.role), (Role::System, Role::Tool));
        assert_eq!(newest_first[1].message.id, "m3");
        assert_eq!((newest_first[1].message.content.as_slice(), newest_first[1].message.created_at), (&[1, 2][..], 7));
        let (oldest_first, _) = records(vec![row(2, 2), row(3, 3)], false)?;
        assert_eq!(oldest_first.iter().map(|r| r.seq).collect::<Vec<_>>(), vec![2, 3]);
        Ok(())
    }

    #[test]
    fn a_row_of_another_shape_is_named_without_its_values() {
        let mut text_content = row(1, 2);
        text_content[4] = Value::Text("secret".into());
        let mut null_tag = row(1, 2);
        null_tag[5] = Value::Null;
        let mut other_newest = row(1, 2);
        other_newest[6] = Value::Integer(4);
        let cases = [
            (row(0, 2), "row 2: a seq below 1"),
            (row(1, 5), "row 2: role code 5 is no role"),
            (row(1, 2)[..6].to_vec(), "row 2: 6 columns, not 7"),
            (other_newest, "row 2: another newest seq than the first row's"),
            (text_content, "row 2: content is text, not a blob"),
            (null_tag, "row 2: tag is null, not a blob"),
        ];
        for (bad, expected) in cases {
            let found = records(vec![row(2, 2), bad], false).map(|_| ()).err().unwrap_or_default();
            assert!(found.ends_with(expected), "{found}");
            assert!(!found.contains("secret"), "{found}");
        }
    }

    #[test]
    fn a_page_must_hold_exactly_the_seqs_its_range_calls_for() {
        let page = |seqs: std::ops::RangeInclusive<i64>| -> Vec<RawStored> {
            seqs.map(|seq| record(row(seq, 2)).map(|(r, _)| r)).collect::<Result<_, _>>().unwrap_or_default()
        };
        // A conversation of seqs 1..=20.
        let whole_ones = [
            (page(11..=20), Range::Latest, 10),
            (page(1..=20), Range::Latest, 100),
            (page(6..=15), Range::After(5), 10),
            (page(16..=20), Range::After(15), 10),
            (page(1..=20), Range::After(0), 1000),
            (page(3..=4), Range::Before(5), 2),
            (page(1..=4), Range::Before(5), 10),
            (page(19..=20), Range::Before(u64::MAX), 2),
        ];
        for (records, range, limit) in whole_ones {
            assert_eq!(whole(&records, 20, range, limit), Ok(()), "{range:?} {limit}");
        }
        // Cut short at a damaged page, or starting late, or at the wrong end.
        let cut = [
            (page(1..=10), Range::After(0), 1000),
            (page(6..=10), Range::After(5), 1000),
            (page(7..=16), Range::After(5), 10),
            (page(11..=19), Range::Latest, 10),
            (page(12..=20), Range::Latest, 10),
            (page(2..=20), Range::Latest, 100),
            (page(2..=4), Range::Before(5), 10),
            (page(1..=3), Range::Before(5), 10),
        ];
        for (records, range, limit) in cut {
            let found = whole(&records, 20, range, limit).err().unwrap_or_default();
            assert!(found.contains("corrupt or inconsistent"), "{range:?} {limit}: {found}");
        }
    }
}
