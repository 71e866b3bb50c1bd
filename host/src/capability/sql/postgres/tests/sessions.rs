//! PostgreSQL tests of sessions: deadlocks, pinned transactions, pipelined
//! batches and deferred begins, the pool (exhausted, reconnecting, unreachable),
//! the statement cache, calls from a current-thread runtime, and TLS.

use std::sync::Arc;
use std::time::Duration;

use super::{Res, Scratch, int, ok};
use crate::capability::sql::postgres::Settings;
use crate::capability::sql::session::Statement;
use crate::capability::sql::{SqlDatabase, SqlSession, Value};
use crate::wit::SqlErrorKind;

#[test]
fn a_deadlock_is_busy_for_one_side_and_the_other_goes_on() -> Res {
    let Some(db) = Scratch::new() else { return Ok(()) };
    let mut setup = db.session()?;
    ok(setup.execute("CREATE TABLE d (id int8 PRIMARY KEY)", &[]))?;
    ok(setup.execute("INSERT INTO d VALUES (1), (2)", &[]))?;
    let barrier = Arc::new(std::sync::Barrier::new(2));
    let sides: Vec<_> = [(1, 2), (2, 1)]
        .into_iter()
        .map(|(first, second)| {
            let (mut s, barrier) = (db.session(), Arc::clone(&barrier));
            std::thread::spawn(move || -> Result<(), SqlErrorKind> {
                let s = s.as_mut().map_err(|e| SqlErrorKind::Io(e.clone()))?;
                s.begin()?;
                // Wait past PostgreSQL's deadlock detection, so it, not a timeout, ends this.
                s.execute("SET LOCAL lock_timeout = '10s'", &[])?;
                s.execute("SET LOCAL statement_timeout = '10s'", &[])?;
                s.execute("UPDATE d SET id = id WHERE id = $1", &[int(first)])?;
                barrier.wait();
                let second = s.execute("UPDATE d SET id = id WHERE id = $1", &[int(second)]);
                s.rollback()?;
                second.map(drop)
            })
        })
        .collect();
    let results: Vec<_> = sides.into_iter().map(|side| side.join().map_err(|_| "a side panicked")).collect();
    let busy = results.iter().filter(|r| matches!(r, Ok(Err(SqlErrorKind::Busy)))).count();
    let through = results.iter().filter(|r| matches!(r, Ok(Ok(())))).count();
    assert_eq!((busy, through), (1, 1), "{results:?}");
    Ok(())
}

#[test]
fn pinned_transactions_end_before_their_connection_returns() -> Res {
    let Some(db) = Scratch::new() else { return Ok(()) };
    let mut s = db.session_with(1)?;
    ok(s.execute("CREATE TABLE t (x int8 UNIQUE)", &[]))?;
    let insert = |x| Statement { sql: "INSERT INTO t VALUES ($1)".into(), params: vec![int(x)] };
    // execute-batch is atomic; inside a transaction it is a savepoint.
    assert!(matches!(s.execute_batch(&[insert(1), insert(2), insert(1)]), Err(SqlErrorKind::Constraint(_))));
    ok(s.begin())?;
    ok(s.execute_batch(&[insert(3)]))?;
    assert!(s.execute_batch(&[insert(4), insert(3)]).is_err());
    ok(s.commit())?;
    assert_eq!(ok(s.query("SELECT x FROM t ORDER BY x", &[]))?.rows, vec![vec![int(3)]]);
    // A failed statement aborts a PostgreSQL transaction: commit says so.
    ok(s.begin())?;
    ok(s.execute("INSERT INTO t VALUES (5)", &[]))?;
    assert!(s.execute("INSERT INTO t VALUES (3)", &[]).is_err());
    assert!(matches!(s.commit(), Err(SqlErrorKind::Transaction(_))));
    // A transaction left open is rolled back by reset (after every call).
    ok(s.begin())?;
    ok(s.execute("INSERT INTO t VALUES (6)", &[]))?;
    assert!(matches!(s.reset(), Ok(true)));
    // An instance dropped mid-transaction (a trap): its connection is closed, not
    // returned open. The one-connection pool must serve the next session at once.
    ok(s.begin())?;
    ok(s.execute("INSERT INTO t VALUES (7)", &[]))?;
    let pid = match ok(s.query("SELECT pg_backend_pid()::int8", &[]))?.rows.as_slice() {
        [row] => match row.as_slice() {
            [Value::Integer(pid)] => *pid,
            other => return Err(format!("pg_backend_pid returned {other:?}").into()),
        },
        other => return Err(format!("pg_backend_pid returned {other:?}").into()),
    };
    let database = s.database().cloned().ok_or("database")?;
    drop(s);
    let mut next = SqlSession::new(database);
    assert_eq!(ok(next.query("SELECT x FROM t ORDER BY x", &[]))?.rows, vec![vec![int(3)]]);
    // The server ends the closed connection's backend asynchronously: wait (bounded)
    // for that one backend, not for anything else running on the shared server.
    let in_transaction = || {
        db.admin_value(&format!(
            "SELECT count(*) FROM pg_stat_activity WHERE pid = {pid} AND state LIKE 'idle in transaction%'"
        ))
    };
    let mut open = in_transaction()?;
    for _ in 0..200 {
        if open == "0" {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        open = in_transaction()?;
    }
    assert_eq!(open, "0", "no connection is left inside a transaction");
    Ok(())
}

#[test]
fn pipelined_batches_and_deferred_begins_keep_their_semantics() -> Res {
    let Some(db) = Scratch::new() else { return Ok(()) };
    let mut s = db.session_with(1)?;
    ok(s.execute("CREATE TABLE t (x int8 UNIQUE)", &[]))?;
    let stmt = |sql: &str, x| Statement { sql: sql.into(), params: vec![int(x)] };
    let insert = |x| stmt("INSERT INTO t VALUES ($1)", x);
    // A batch whose second statement does not parse (a missing table, never
    // prepared): undone whole, the transaction goes on.
    ok(s.begin())?;
    ok(s.execute_batch(&[insert(1)]))?;
    let missing = stmt("INSERT INTO missing VALUES ($1)", 2);
    assert!(matches!(s.execute_batch(&[insert(2), missing]), Err(SqlErrorKind::InvalidStatement(_))));
    // Binding fails on the host (a value out of range for int2) after the savepoint.
    ok(s.execute("CREATE TABLE small (v int2)", &[]))?;
    let too_big = stmt("INSERT INTO small VALUES ($1)", 1 << 20);
    assert!(s.execute_batch(&[insert(3), too_big]).is_err());
    ok(s.execute_batch(&[insert(4), insert(5)]))?;
    ok(s.commit())?;
    let rows = ok(s.query("SELECT x FROM t ORDER BY x", &[]))?.rows;
    assert_eq!(rows, vec![vec![int(1)], vec![int(4)], vec![int(5)]]);
    // Transactions without statements never reach the server, and leave nothing open.
    ok(s.begin())?;
    ok(s.commit())?;
    ok(s.begin())?;
    ok(s.rollback())?;
    // The first statement of a transaction carries its BEGIN: a failure there
    // still aborts the transaction, and commit says so.
    ok(s.begin())?;
    assert!(s.execute("INSERT INTO t VALUES (1)", &[]).is_err());
    assert!(matches!(s.commit(), Err(SqlErrorKind::Transaction(_))));
    ok(s.begin())?;
    ok(s.execute("INSERT INTO t VALUES (6)", &[]))?;
    ok(s.rollback())?;
    let rows = ok(s.query("SELECT count(*) FROM t", &[]))?.rows;
    assert_eq!(rows, vec![vec![int(3)]]);
    Ok(())
}

#[test]
fn an_exhausted_pool_answers_busy_and_recovers() -> Res {
    let Some(db) = Scratch::new() else { return Ok(()) };
    let mut a = db.session_with(1)?;
    let mut b = SqlSession::new(a.database().cloned().ok_or("database")?);
    ok(a.begin())?;
    assert!(matches!(b.query("SELECT 1", &[]), Err(SqlErrorKind::Busy)), "the only connection is pinned");
    ok(a.commit())?;
    assert_eq!(ok(b.query("SELECT 1", &[]))?.rows, vec![vec![int(1)]]);
    Ok(())
}

#[test]
fn a_terminated_backend_loses_the_transaction_and_the_pool_reconnects() -> Res {
    let Some(db) = Scratch::new() else { return Ok(()) };
    let mut s = db.session_with(1)?;
    ok(s.execute("CREATE TABLE t (x int8)", &[]))?;
    ok(s.begin())?;
    ok(s.execute("INSERT INTO t VALUES (1)", &[]))?;
    let pid = ok(s.query("SELECT pg_backend_pid()", &[]))?.rows[0][0].clone();
    let Value::Integer(pid) = pid else { panic!("pid {pid:?}") };
    db.admin(&format!("SELECT pg_terminate_backend({pid})"))?;
    let lost = s.execute("INSERT INTO t VALUES (2)", &[]);
    assert!(matches!(&lost, Err(SqlErrorKind::Io(_))), "{lost:?}");
    assert!(matches!(s.execute("INSERT INTO t VALUES (3)", &[]), Err(SqlErrorKind::Io(_))), "never outside it");
    assert!(matches!(s.commit(), Err(SqlErrorKind::Io(m)) if m.contains("nothing of it was committed")));
    assert_eq!(ok(s.query("SELECT count(*) FROM t", &[]))?.rows, vec![vec![int(0)]], "a new connection");
    Ok(())
}

#[test]
fn an_unreachable_server_fails_statements_with_io_and_caps_hold() -> Res {
    let Some(db) = Scratch::new() else { return Ok(()) };
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let closed = format!("postgres://postgres@127.0.0.1:{}/test", listener.local_addr()?.port());
    drop(listener);
    let settings = Settings {
        max_connections: 1,
        busy_timeout: Duration::from_secs(1),
        statement_timeout: Duration::from_secs(1),
    };
    let mut s = SqlSession::new(db.database(&settings, &closed)?);
    match s.query("SELECT 1", &[]) {
        Err(SqlErrorKind::Io(m)) => assert!(m.contains("cannot connect") && !m.contains("postgres@"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(SqlDatabase::postgres("mysql://x", &settings, 1).is_err(), "not a PostgreSQL URL");
    // Results over the cap are refused.
    let mut s = db.session()?;
    assert!(matches!(s.query("SELECT repeat('x', 2000000)", &[]), Err(SqlErrorKind::TooLarge(_))));
    Ok(())
}

#[test]
fn the_statement_cache_stays_bounded() -> Res {
    let Some(db) = Scratch::new() else { return Ok(()) };
    let mut s = db.session_with(1)?;
    for n in 0..(super::super::ops::STATEMENT_CACHE + 40) {
        ok(s.query(&format!("SELECT {n}"), &[]))?;
    }
    let held = ok(s.query("SELECT count(*) FROM pg_prepared_statements", &[]))?.rows;
    let [Value::Integer(held)] = held[0][..] else { panic!("{held:?}") };
    assert!(held as usize <= super::super::ops::STATEMENT_CACHE + 1, "{held} statements prepared");
    Ok(())
}

#[test]
fn calls_from_the_blocking_pool_of_a_current_thread_runtime_work() -> Res {
    let Some(db) = Scratch::new() else { return Ok(()) };
    let mut s = db.session()?;
    let app = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let rows = app.block_on(async move { tokio::task::spawn_blocking(move || s.query("SELECT 41 + 1", &[])).await })?;
    assert_eq!(ok(rows)?.rows, vec![vec![int(42)]]);
    Ok(())
}

/// With the `postgres-tls` feature: TLS to the local server, whose certificate
/// (Debian's self-signed "snakeoil" one, for `localhost`) is trusted through
/// `sslrootcert`; the same certificate does not vouch for another name.
#[cfg(feature = "postgres-tls")]
#[test]
fn tls_verifies_the_server_against_sslrootcert() -> Res {
    let Some(db) = Scratch::new() else { return Ok(()) };
    let snakeoil = "/etc/ssl/certs/ssl-cert-snakeoil.pem";
    if !std::path::Path::new(snakeoil).exists() || db.admin_value("SHOW ssl")? != "on" {
        eprintln!("SKIPPED tls_verifies_the_server_against_sslrootcert: the server has no snakeoil TLS certificate");
        return Ok(());
    }
    let settings = Settings {
        max_connections: 1,
        busy_timeout: Duration::from_secs(1),
        statement_timeout: Duration::from_secs(5),
    };
    let url = |host: &str| format!("postgres://postgres@{host}:5432/test?sslmode=verify-full&sslrootcert={snakeoil}");
    let mut s = SqlSession::new(db.database(&settings, &url("localhost"))?);
    let rows = ok(s.query("SELECT ssl::int4 FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[]))?;
    assert_eq!(rows.rows, vec![vec![int(1)]], "the connection is encrypted");
    let mut wrong_name = SqlSession::new(db.database(&settings, &url("127.0.0.1"))?);
    match wrong_name.query("SELECT 1", &[]) {
        Err(SqlErrorKind::Io(m)) => assert!(m.to_lowercase().contains("certificate"), "{m}"),
        other => panic!("a certificate for another name was accepted: {other:?}"),
    }
    Ok(())
}
