//! Tests against a real PostgreSQL server: `STOWAGE_TEST_POSTGRES_URL`, by default
//! the local one (`postgres://postgres@127.0.0.1:5432/test`). Each test works in
//! a schema of its own, dropped afterwards. Without a server each test says on
//! stderr that it was skipped and why, unless `STOWAGE_REQUIRE_POSTGRES=1`, when
//! it fails.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::super::session::Statement;
use super::super::{SqlDatabase, SqlSession, Value};
use super::{Settings, runtime};
use crate::wit::SqlErrorKind;

type Res = Result<(), Box<dyn std::error::Error>>;

const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// `url` with extra startup `options` (URL or `key=value` form).
fn with_options(url: &str, options: &str) -> String {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let sep = if url.contains('?') { '&' } else { '?' };
        format!("{url}{sep}options={}", options.replace(' ', "%20").replace('=', "%3D"))
    } else {
        format!("{url} options='{options}'")
    }
}

/// A schema of its own on the test server, and an admin connection.
struct Scratch {
    admin: tokio_postgres::Client,
    schema: String,
    url: String,
}

impl Scratch {
    fn new() -> Option<Self> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let base = std::env::var("STOWAGE_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned());
        let connected = runtime().map_err(|e| format!("{e:?}")).and_then(|rt| {
            rt.block_on(tokio_postgres::connect(&base, tokio_postgres::NoTls))
                .map(|(client, conn)| {
                    rt.spawn(conn);
                    client
                })
                .map_err(|e| e.to_string())
        });
        let admin = match connected {
            Ok(admin) => admin,
            Err(e) if std::env::var("STOWAGE_REQUIRE_POSTGRES").as_deref() == Ok("1") => {
                panic!("STOWAGE_REQUIRE_POSTGRES=1 but no PostgreSQL server answers at {base}: {e}")
            }
            Err(e) => {
                eprintln!("SKIPPED: PostgreSQL test: no server at {base} ({e}); set STOWAGE_TEST_POSTGRES_URL");
                return None;
            }
        };
        let schema = format!("stowage_unit_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let scratch =
            Self { url: with_options(&base, &format!("-c search_path={schema} -c TimeZone=UTC")), admin, schema };
        scratch.admin(&format!("DROP SCHEMA IF EXISTS {0} CASCADE; CREATE SCHEMA {0}", scratch.schema)).ok()?;
        Some(scratch)
    }

    fn admin(&self, sql: &str) -> Result<(), String> {
        let rt = runtime().map_err(|e| format!("{e:?}"))?;
        rt.block_on(self.admin.batch_execute(sql)).map_err(|e| e.to_string())
    }

    /// The first column of the first row, as text.
    fn admin_value(&self, sql: &str) -> Result<String, String> {
        let rt = runtime().map_err(|e| format!("{e:?}"))?;
        let rows = rt.block_on(self.admin.simple_query(sql)).map_err(|e| e.to_string())?;
        rows.iter()
            .find_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
                _ => None,
            })
            .ok_or_else(|| format!("no row from {sql}"))
    }

    fn database(&self, settings: &Settings, url: &str) -> Result<Arc<SqlDatabase>, String> {
        Ok(Arc::new(SqlDatabase::postgres(url, settings, 1 << 20)?))
    }

    fn session_with(&self, max_connections: u32) -> Result<SqlSession, String> {
        let settings = Settings {
            max_connections,
            busy_timeout: Duration::from_millis(300),
            statement_timeout: Duration::from_millis(1_500),
        };
        Ok(SqlSession::new(self.database(&settings, &self.url)?))
    }

    fn session(&self) -> Result<SqlSession, String> {
        self.session_with(2)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Err(e) = self.admin(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema)) {
            eprintln!("dropping test schema {}: {e}", self.schema);
        }
    }
}

fn ok<T>(result: Result<T, SqlErrorKind>) -> Result<T, String> {
    result.map_err(|e| format!("{e:?}"))
}

fn int(i: i64) -> Value {
    Value::Integer(i)
}

fn text(s: &str) -> Value {
    Value::Text(s.to_owned())
}

#[test]
fn values_round_trip_by_parameter_type_and_misfits_name_the_parameter() -> Res {
    let Some(db) = Scratch::new() else { return Ok(()) };
    let mut s = db.session()?;
    ok(s.execute(
        "CREATE TABLE v (a int2, b int4, c int8, d float4, e float8, f text, g bytea, h boolean, i numeric, \
         j jsonb, k uuid, l timestamptz, m varchar(3))",
        &[],
    ))?;
    let insert = "INSERT INTO v VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)";
    let row = vec![
        int(-32_768),
        int(2_147_483_647),
        int(i64::MIN),
        Value::Real(0.5),
        Value::Real(-1e300),
        text("héllo"),
        Value::Blob(vec![0, 255, 1]),
        int(1),
        int(12_345_678_901_234),
        text(r#"{"a": [1, 2]}"#),
        text("A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"),
        text("2024-02-29 12:34:56.5+02"),
        text("abc"),
    ];
    assert_eq!(ok(s.execute(insert, &row))?, 1);
    let rows = ok(s.query("SELECT * FROM v", &[]))?;
    assert_eq!(rows.columns[0], "a");
    assert_eq!(
        rows.rows,
        vec![vec![
            int(-32_768),
            int(2_147_483_647),
            int(i64::MIN),
            Value::Real(0.5),
            Value::Real(-1e300),
            text("héllo"),
            Value::Blob(vec![0, 255, 1]),
            int(1),
            text("12345678901234"),
            text(r#"{"a": [1, 2]}"#),
            text("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
            text("2024-02-29 10:34:56.5+00"),
            text("abc"),
        ]]
    );
    for (index, misfit) in [(0, int(32_768)), (1, int(1 << 31)), (7, int(2)), (6, text("x")), (0, Value::Real(1.0))] {
        let mut values = row.clone();
        values[index] = misfit.clone();
        match s.execute(insert, &values) {
            Err(SqlErrorKind::InvalidStatement(m)) => assert!(m.contains(&format!("${}", index + 1)), "{m}"),
            other => panic!("{misfit:?} in parameter {}: {other:?}", index + 1),
        }
    }
    // A value the server refuses to parse, or one too long for its column.
    let mut bad = row.clone();
    bad[10] = text("not-a-uuid");
    assert!(matches!(s.execute(insert, &bad), Err(SqlErrorKind::InvalidStatement(_))));
    bad = row.clone();
    bad[12] = text("abcd");
    assert!(matches!(s.execute(insert, &bad), Err(SqlErrorKind::InvalidStatement(_))));
    assert_eq!(ok(s.query("SELECT count(*) FROM v", &[]))?.rows, vec![vec![int(1)]], "no misfit was stored");
    Ok(())
}

#[test]
fn text_forms_match_the_server_for_numeric_dates_times_and_more() -> Res {
    let Some(db) = Scratch::new() else { return Ok(()) };
    let mut s = db.session()?;
    let expressions = [
        "0::numeric",
        "-0.000120::numeric",
        "123456789.98765::numeric",
        "1e-20::numeric",
        "'NaN'::numeric",
        "'-Infinity'::numeric",
        "10000::numeric(20,3)",
        "'2000-01-01'::date",
        "'0044-03-15 BC'::date",
        "'infinity'::date",
        "'1999-12-31 23:59:59.000001'::timestamp",
        "'2262-04-11 23:47:16.854775'::timestamp",
        "'1970-01-01 00:00:00+05:30'::timestamptz",
        "'-infinity'::timestamptz",
        "'13:14:15.1'::time",
        "'01:02:03-05:30'::timetz",
        "'1 year -2 mons 3 days -04:05:06.7'::interval",
        "'-1 day'::interval",
        "'0'::interval",
        "'192.168.0.1/24'::inet",
        "'192.168.0.1'::inet",
        "'10.0.0.0/8'::cidr",
        "'::ffff:1.2.3.4'::inet",
        "'x'::\"char\"",
        "'{\"b\": 1}'::json",
        "'ab'::name",
        "'<a/>'::xml",
    ];
    // The server's own text form: the simple protocol's answer, in UTC.
    db.admin("SET TimeZone = 'UTC'")?;
    for expression in expressions {
        let rows = ok(s.query(&format!("SELECT {expression}"), &[]))?;
        let theirs = db.admin_value(&format!("SELECT {expression}"))?;
        assert_eq!(rows.rows[0][0], text(&theirs), "{expression}");
    }
    let rows = ok(s.query("SELECT true, 1.5::float4, 7::oid, pg_sleep(0)", &[]))?;
    assert_eq!(rows.rows[0], vec![int(1), Value::Real(1.5), int(7), Value::Null]);
    match s.query("SELECT ARRAY[1, 2] AS pair", &[]) {
        Err(SqlErrorKind::InvalidStatement(m)) => assert!(m.contains("pair") && m.contains("::text"), "{m}"),
        other => panic!("an array column: {other:?}"),
    }
    Ok(())
}

#[test]
fn server_errors_map_to_the_contract() -> Res {
    let Some(db) = Scratch::new() else { return Ok(()) };
    let mut s = db.session()?;
    ok(s.execute("CREATE TABLE p (id int8 PRIMARY KEY, n int4 CHECK (n >= 0))", &[]))?;
    ok(s.execute("CREATE TABLE c (p int8 NOT NULL REFERENCES p (id))", &[]))?;
    ok(s.execute("INSERT INTO p VALUES (1, 1)", &[]))?;
    type Expect = fn(&SqlErrorKind) -> bool;
    let cases: [(&str, Expect); 7] = [
        ("INSERT INTO p VALUES (1, 1)", |e| matches!(e, SqlErrorKind::Constraint(m) if m.contains("p_pkey"))),
        ("INSERT INTO p VALUES (2, -1)", |e| matches!(e, SqlErrorKind::Constraint(_))),
        ("INSERT INTO c VALUES (9)", |e| matches!(e, SqlErrorKind::Constraint(_))),
        ("INSERT INTO c VALUES (NULL)", |e| matches!(e, SqlErrorKind::Constraint(_))),
        ("SELEC 1", |e| matches!(e, SqlErrorKind::InvalidStatement(_))),
        ("SELECT * FROM missing", |e| matches!(e, SqlErrorKind::InvalidStatement(_))),
        ("SELECT 1/0", |e| matches!(e, SqlErrorKind::InvalidStatement(_))),
    ];
    for (sql, expected) in cases {
        let result = s.query(sql, &[]);
        assert!(result.as_ref().err().is_some_and(expected), "{sql}: {result:?}");
    }
    // The call's deadline as statement_timeout: `io`, saying so.
    match s.query("SELECT pg_sleep(5)", &[]) {
        Err(SqlErrorKind::Io(m)) => assert!(m.contains("statement_timeout"), "{m}"),
        other => panic!("a statement past the deadline: {other:?}"),
    }
    // A row lock held past the busy timeout: `busy`.
    let mut holder = db.session()?;
    ok(holder.begin())?;
    ok(holder.query("SELECT * FROM p WHERE id = 1 FOR UPDATE", &[]))?;
    assert!(matches!(s.query("SELECT * FROM p WHERE id = 1 FOR UPDATE", &[]), Err(SqlErrorKind::Busy)));
    ok(holder.rollback())?;
    // Statements the host keeps for itself.
    assert!(matches!(s.execute("COMMIT", &[]), Err(SqlErrorKind::Transaction(_))));
    assert!(matches!(s.execute("SET search_path = public", &[]), Err(SqlErrorKind::AccessDenied(_))));
    Ok(())
}

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
    for n in 0..(super::ops::STATEMENT_CACHE + 40) {
        ok(s.query(&format!("SELECT {n}"), &[]))?;
    }
    let held = ok(s.query("SELECT count(*) FROM pg_prepared_statements", &[]))?.rows;
    let [Value::Integer(held)] = held[0][..] else { panic!("{held:?}") };
    assert!(held as usize <= super::ops::STATEMENT_CACHE + 1, "{held} statements prepared");
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
