//! Tests of the SQL text tables: each dialect's placeholders, the same parameters
//! in both, the row and advisory locks, and the generated placeholder lists.

use super::*;

/// Every SQL text of a dialect, the generated ones included.
fn all(dialect: Dialect) -> Vec<String> {
    let t = text(dialect);
    let mut texts: Vec<String> = [
        t.conversation_key,
        t.conversation_key_for_write,
        t.conversation_info,
        t.conversation_create,
        t.conversation_meta_update,
        t.conversation_update,
        t.conversation_delete,
        t.conversations_first,
        t.conversations_after,
        t.message_insert,
        t.messages_latest,
        t.messages_after,
        t.messages_before,
        t.messages_delete_all,
        t.messages_delete_after,
        t.stream_key,
        t.stream_key_for_write,
        t.stream_create,
        t.stream_delete,
        t.display_last_seq,
        t.display_insert,
        t.display_update,
        t.display_delete_all,
        t.display_by_tool_call,
        t.display_list,
        t.migrations_table,
        t.migrations_applied,
        t.migrations_record,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    texts.push(messages_by_id(dialect, 3));
    texts.push(display_by_status(dialect, 2, false));
    texts.push(display_by_status(dialect, 2, true));
    texts
}

/// The placeholder numbers a statement uses.
fn numbers(sql: &str, sigil: char) -> Vec<usize> {
    let mut found: Vec<usize> = sql
        .split(sigil)
        .skip(1)
        .filter_map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect();
    found.sort_unstable();
    found.dedup();
    found
}

#[test]
fn each_dialect_uses_only_its_own_placeholders() {
    for sql in all(Dialect::Sqlite) {
        assert!(!sql.contains('$'), "{sql}");
    }
    for sql in all(Dialect::Postgres) {
        assert!(!sql.contains('?'), "{sql}");
    }
}

#[test]
fn both_dialects_take_the_same_parameters_numbered_without_gaps() {
    for (sqlite, postgres) in all(Dialect::Sqlite).iter().zip(all(Dialect::Postgres).iter()) {
        let lite = numbers(sqlite, '?');
        assert_eq!(lite, numbers(postgres, '$'), "{sqlite}\n{postgres}");
        assert_eq!(lite, (1..=lite.len()).collect::<Vec<_>>(), "{sqlite}");
    }
}

#[test]
fn only_postgres_locks_rows_and_takes_an_advisory_lock() {
    assert!(text(Dialect::Postgres).conversation_key_for_write.ends_with("FOR UPDATE"));
    assert!(text(Dialect::Postgres).stream_key_for_write.ends_with("FOR UPDATE"));
    assert!(text(Dialect::Postgres).migrations_lock.is_some_and(|l| l.contains("pg_advisory_xact_lock")));
    assert!(!all(Dialect::Sqlite).iter().any(|s| s.contains("FOR UPDATE")));
    assert!(text(Dialect::Sqlite).migrations_lock.is_none());
    let lock = text(Dialect::Postgres).migrations_lock.unwrap_or_default();
    assert!(!lock.contains('$') && !lock.contains('?'), "the lock takes no parameters");
}

#[test]
fn generated_lists_number_their_placeholders_after_the_fixed_ones() {
    assert_eq!(placeholders(Dialect::Sqlite, 2, 3), "?2, ?3, ?4");
    assert_eq!(placeholders(Dialect::Postgres, 6, 2), "$6, $7");
    assert!(messages_by_id(Dialect::Sqlite, 2).ends_with("IN (?2, ?3)"));
    assert!(display_by_status(Dialect::Postgres, 1, false).contains("IN ($2) ORDER BY"));
    let after = display_by_status(Dialect::Sqlite, 2, true);
    assert!(after.contains("IN (?6, ?7) AND (s.tenant"), "{after}");
}
