//! A PostgreSQL connection behind the adapter's [`Sql`] seam, binding values by
//! the prepared statement's parameter types with range checks, as the host does.

use std::cell::{Cell, RefCell};

use postgres::error::SqlState;
use postgres::types::{ToSql, Type};
use postgres::{Client, NoTls};

use crate::db::{Dialect, Sql};
use crate::stowage::store::sql::{Error as SqlError, Statement, Value};

pub struct Postgres {
    client: RefCell<Client>,
    in_transaction: Cell<bool>,
}

fn map_error(err: postgres::Error) -> SqlError {
    let Some(db) = err.as_db_error() else {
        return SqlError::Io(err.to_string());
    };
    let code = db.code();
    let message = db.message().to_owned();
    if *code == SqlState::T_R_SERIALIZATION_FAILURE || *code == SqlState::T_R_DEADLOCK_DETECTED {
        SqlError::Busy
    } else if code.code().starts_with("23") {
        SqlError::Constraint(message)
    } else if code.code().starts_with("25") {
        SqlError::Transaction(message)
    } else if code.code().starts_with("42") || code.code().starts_with("22") {
        SqlError::InvalidStatement(message)
    } else {
        SqlError::Io(message)
    }
}

type Param = Box<dyn ToSql + Sync>;

fn bind(value: &Value, ty: &Type) -> Result<Param, SqlError> {
    let out_of_range = || SqlError::InvalidStatement(format!("a value does not fit a {ty} parameter"));
    let text_like = [Type::TEXT, Type::VARCHAR, Type::NAME, Type::BPCHAR, Type::UNKNOWN];
    Ok(match value {
        Value::Null => match *ty {
            Type::INT2 => Box::new(None::<i16>),
            Type::INT4 => Box::new(None::<i32>),
            Type::INT8 => Box::new(None::<i64>),
            Type::BYTEA => Box::new(None::<Vec<u8>>),
            Type::FLOAT8 => Box::new(None::<f64>),
            Type::BOOL => Box::new(None::<bool>),
            _ => Box::new(None::<String>),
        },
        Value::Integer(i) => match *ty {
            Type::INT2 => Box::new(i16::try_from(*i).map_err(|_| out_of_range())?),
            Type::INT4 => Box::new(i32::try_from(*i).map_err(|_| out_of_range())?),
            Type::INT8 => Box::new(*i),
            Type::BOOL => Box::new(*i != 0),
            _ => return Err(out_of_range()),
        },
        Value::Real(r) if *ty == Type::FLOAT8 => Box::new(*r),
        Value::Text(s) if text_like.contains(ty) => Box::new(s.clone()),
        Value::Blob(b) if *ty == Type::BYTEA => Box::new(b.clone()),
        _ => return Err(SqlError::InvalidStatement(format!("cannot bind this value to a {ty} parameter"))),
    })
}

fn read(row: &postgres::Row, index: usize, ty: &Type) -> Result<Value, postgres::Error> {
    Ok(match *ty {
        Type::INT2 => row.try_get::<_, Option<i16>>(index)?.map_or(Value::Null, |v| Value::Integer(v.into())),
        Type::INT4 => row.try_get::<_, Option<i32>>(index)?.map_or(Value::Null, |v| Value::Integer(v.into())),
        Type::INT8 => row.try_get::<_, Option<i64>>(index)?.map_or(Value::Null, Value::Integer),
        Type::BOOL => row.try_get::<_, Option<bool>>(index)?.map_or(Value::Null, |v| Value::Integer(v.into())),
        Type::FLOAT8 => row.try_get::<_, Option<f64>>(index)?.map_or(Value::Null, Value::Real),
        Type::BYTEA => row.try_get::<_, Option<Vec<u8>>>(index)?.map_or(Value::Null, Value::Blob),
        _ => row.try_get::<_, Option<String>>(index)?.map_or(Value::Null, Value::Text),
    })
}

impl Postgres {
    /// A connection to `url` working in `schema`.
    pub fn connect(url: &str, schema: &str) -> Result<Self, postgres::Error> {
        let mut client = Client::connect(url, NoTls)?;
        client.batch_execute(&format!("SET search_path TO {schema}"))?;
        Ok(Postgres { client: RefCell::new(client), in_transaction: Cell::new(false) })
    }

    fn bound(&self, statement: &str, params: &[Value]) -> Result<(postgres::Statement, Vec<Param>), SqlError> {
        let prepared = self.client.borrow_mut().prepare(statement).map_err(map_error)?;
        if prepared.params().len() != params.len() {
            return Err(SqlError::InvalidStatement(format!(
                "{} parameters for {} placeholders",
                params.len(),
                prepared.params().len()
            )));
        }
        let bound = params.iter().zip(prepared.params()).map(|(v, ty)| bind(v, ty)).collect::<Result<_, _>>()?;
        Ok((prepared, bound))
    }

    fn run_all(&self, statements: &[Statement]) -> Result<Vec<u64>, SqlError> {
        statements.iter().map(|s| self.execute(&s.sql, &s.params)).collect()
    }
}

fn refs(params: &[Param]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p.as_ref()).collect()
}

impl Sql for Postgres {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn execute(&self, statement: &str, params: &[Value]) -> Result<u64, SqlError> {
        let (prepared, bound) = self.bound(statement, params)?;
        self.client.borrow_mut().execute(&prepared, &refs(&bound)).map_err(map_error)
    }

    fn query(&self, statement: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, SqlError> {
        let (prepared, bound) = self.bound(statement, params)?;
        let rows = self.client.borrow_mut().query(&prepared, &refs(&bound)).map_err(map_error)?;
        rows.iter()
            .map(|row| {
                row.columns()
                    .iter()
                    .enumerate()
                    .map(|(i, column)| read(row, i, column.type_()).map_err(map_error))
                    .collect()
            })
            .collect()
    }

    fn execute_batch(&self, statements: &[Statement]) -> Result<Vec<u64>, SqlError> {
        if self.in_transaction.get() {
            return self.run_all(statements);
        }
        self.begin()?;
        match self.run_all(statements) {
            Ok(counts) => self.commit().map(|()| counts),
            Err(e) => {
                let _ = self.rollback();
                Err(e)
            }
        }
    }

    fn begin(&self) -> Result<(), SqlError> {
        self.client.borrow_mut().batch_execute("BEGIN").map_err(map_error)?;
        self.in_transaction.set(true);
        Ok(())
    }

    fn commit(&self) -> Result<(), SqlError> {
        self.in_transaction.set(false);
        self.client.borrow_mut().batch_execute("COMMIT").map_err(map_error)
    }

    fn rollback(&self) -> Result<(), SqlError> {
        if !self.in_transaction.replace(false) {
            return Ok(());
        }
        self.client.borrow_mut().batch_execute("ROLLBACK").map_err(map_error)
    }
}
