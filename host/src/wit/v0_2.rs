//! `stowage:store@0.2.0` (the latest): bindings of world `sql-adapter`, a superset of
//! `adapter`.

wasmtime::component::bindgen!({
    path: "../wit/v0.2.0",
    world: "stowage:store/sql-adapter",
    imports: { "stowage:store/sql": trappable },
    trappable_error_type: { "stowage:store/sql.error" => super::SqlFailure },
});

pub use self::exports::stowage::store::{conversation_store, display_store};
pub use self::stowage::store::{log, sql, types};

pub const CONVERSATION_STORE: &str = "stowage:store/conversation-store@0.2.0";
pub const DISPLAY_STORE: &str = "stowage:store/display-store@0.2.0";
pub const REQUIRED_EXPORTS: [&str; 2] = [CONVERSATION_STORE, DISPLAY_STORE];

impl From<super::SqlErrorKind> for sql::Error {
    fn from(kind: super::SqlErrorKind) -> Self {
        use super::SqlErrorKind as K;
        match kind {
            K::AccessDenied(m) => sql::Error::AccessDenied(m),
            K::Constraint(m) => sql::Error::Constraint(m),
            K::Busy => sql::Error::Busy,
            K::TooLarge(m) => sql::Error::TooLarge(m),
            K::InvalidStatement(m) => sql::Error::InvalidStatement(m),
            K::Transaction(m) => sql::Error::Transaction(m),
            K::Io(m) => sql::Error::Io(m),
        }
    }
}
