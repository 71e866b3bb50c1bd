//! PostgreSQL tests of values and errors: values round-trip by parameter type
//! (misfits name their parameter), text forms match the server's own, and server
//! errors map to the contract.

use super::{Res, Scratch, int, ok, text};
use crate::capability::sql::Value;
use crate::wit::SqlErrorKind;

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
