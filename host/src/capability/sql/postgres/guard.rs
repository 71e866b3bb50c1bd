//! What an adapter may not send as a statement on PostgreSQL, decided from the
//! statement's leading keywords (comments skipped). A prepared statement holds
//! one command, so the first command is the only one.
//!
//! - Transaction control (`BEGIN`, `COMMIT`, `ROLLBACK`, `SAVEPOINT`, `PREPARE
//!   TRANSACTION`, …) is `transaction`: the host pins and releases connections
//!   by `begin`/`commit`/`rollback`, and a transaction opened behind its back
//!   would return to the pool open.
//! - Statements that change the connection for whoever uses it next or reach
//!   outside the database are `access-denied`: session `SET`/`RESET` (`SET
//!   LOCAL`, `SET TRANSACTION` and `SET CONSTRAINTS` are transaction-scoped and
//!   allowed), `DISCARD`, `DEALLOCATE`, `PREPARE`, `LISTEN`/`UNLISTEN`, `LOAD`,
//!   `COPY`, `CREATE`/`ALTER`/`DROP EXTENSION` and `ALTER SYSTEM`.
//!
//! This is a guard rail, not the security boundary: functions can still do what
//! the connecting role may do. Run a store as a role that owns its schema and
//! nothing else (see the README).

use crate::wit::SqlErrorKind;

/// Up to `n` leading keywords of `sql`, upper-cased.
fn leading_words(sql: &str, n: usize) -> Vec<String> {
    let bytes = sql.as_bytes();
    let mut words = Vec::new();
    let mut i = 0;
    while i < bytes.len() && words.len() < n {
        match bytes[i] {
            b if b.is_ascii_whitespace() => i += 1,
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                i = bytes[i..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |p| i + p + 1);
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                // Block comments nest in PostgreSQL.
                let mut depth = 0usize;
                while i < bytes.len() {
                    if bytes[i..].starts_with(b"/*") {
                        depth += 1;
                        i += 2;
                    } else if bytes[i..].starts_with(b"*/") {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b if b.is_ascii_alphabetic() || b == b'_' => {
                let end = bytes[i..]
                    .iter()
                    .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
                    .map_or(bytes.len(), |p| i + p);
                words.push(sql[i..end].to_ascii_uppercase());
                i = end;
            }
            _ => break,
        }
    }
    words
}

/// `Ok` if an adapter may run `sql` through `execute` or `query`.
pub fn check(sql: &str) -> Result<(), SqlErrorKind> {
    let words = leading_words(sql, 3);
    let word = |k: usize| words.get(k).map_or("", String::as_str);
    let denied =
        |what: &str| Err(SqlErrorKind::AccessDenied(format!("{what} is not allowed on a host-lent connection")));
    match word(0) {
        "BEGIN" | "START" | "COMMIT" | "END" | "ROLLBACK" | "ABORT" | "SAVEPOINT" | "RELEASE" => {
            Err(SqlErrorKind::Transaction(format!(
                "`{}` as a statement is not allowed: use the sql interface's begin, commit and rollback",
                word(0)
            )))
        }
        "PREPARE" if word(1) == "TRANSACTION" => {
            Err(SqlErrorKind::Transaction("two-phase commit is not allowed".into()))
        }
        "SET" | "RESET" if !matches!(word(1), "LOCAL" | "TRANSACTION" | "CONSTRAINTS") => {
            denied("changing a session setting (use SET LOCAL inside a transaction)")
        }
        "DISCARD" | "DEALLOCATE" | "PREPARE" | "LISTEN" | "UNLISTEN" => denied(&format!("`{}`", word(0))),
        "LOAD" => denied("loading a library"),
        "COPY" => denied("COPY (server files and the copy protocol)"),
        "CREATE" | "ALTER" | "DROP" if word(1) == "EXTENSION" => denied("managing extensions"),
        "ALTER" if word(1) == "SYSTEM" => denied("ALTER SYSTEM"),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transaction_control_and_session_state_are_refused_whatever_the_spelling() {
        for sql in ["BEGIN", "  commit", "/* a /* nested */ comment */ ROLLBACK", "-- note\nsavepoint x", "end"] {
            assert!(matches!(check(sql), Err(SqlErrorKind::Transaction(_))), "{sql}");
        }
        for sql in ["SET search_path = x", "reset all", "DISCARD ALL", "LOAD 'x'", "COPY t TO '/tmp/x'"] {
            assert!(matches!(check(sql), Err(SqlErrorKind::AccessDenied(_))), "{sql}");
        }
        for sql in ["create extension dblink", "ALTER SYSTEM SET x = 1", "PREPARE p AS SELECT 1"] {
            assert!(matches!(check(sql), Err(SqlErrorKind::AccessDenied(_))), "{sql}");
        }
        for sql in ["SET LOCAL lock_timeout = 1", "SELECT 1", "  insert into begin_log values (1)", "(SELECT 1)", ""] {
            assert!(check(sql).is_ok(), "{sql}");
        }
    }
}
