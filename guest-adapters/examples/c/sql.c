// The host's SQL database (`stowage:store/sql`): parameter values, queries,
// write transactions, result columns, and the schema.
//
// SQLite only: the statements use `?N` placeholders and SQLite's
// `ON CONFLICT DO NOTHING`; on a PostgreSQL-backed store every call fails with
// `unsupported` (see README.md for what a PostgreSQL port changes).
#include <stdlib.h>
#include <string.h>

#include "store.h"

// Every key is (tenant, scope_user, conversation_id). Text compares byte-wise
// (SQLite's BINARY collation), which is the order `list` and `find-by-status`
// promise.
static const char *const SCHEMA[] = {
    "CREATE TABLE IF NOT EXISTS example_conversations ("
    " tenant TEXT NOT NULL, scope_user TEXT NOT NULL, id TEXT NOT NULL,"
    " created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,"
    " version INTEGER NOT NULL, last_seq INTEGER NOT NULL,"
    " meta_content BLOB NOT NULL, meta_tag BLOB NOT NULL,"
    " PRIMARY KEY (tenant, scope_user, id))",
    "CREATE TABLE IF NOT EXISTS example_messages ("
    " tenant TEXT NOT NULL, scope_user TEXT NOT NULL, conversation_id TEXT NOT NULL,"
    " seq INTEGER NOT NULL, id TEXT NOT NULL, role INTEGER NOT NULL, created_at INTEGER NOT NULL,"
    " content BLOB NOT NULL, tag BLOB NOT NULL,"
    " PRIMARY KEY (tenant, scope_user, conversation_id, seq),"
    " UNIQUE (tenant, scope_user, conversation_id, id))",
    "CREATE TABLE IF NOT EXISTS example_display ("
    " tenant TEXT NOT NULL, scope_user TEXT NOT NULL, conversation_id TEXT NOT NULL,"
    " seq INTEGER NOT NULL, message_id TEXT, message_type TEXT NOT NULL, content_type TEXT NOT NULL,"
    " tool_call_id TEXT, status TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,"
    " body BLOB NOT NULL, tag BLOB NOT NULL,"
    " PRIMARY KEY (tenant, scope_user, conversation_id, seq))",
    ("CREATE INDEX IF NOT EXISTS example_display_status"
     " ON example_display (status, tenant, scope_user, conversation_id, seq) WHERE status IS NOT NULL"),
};

value_t v_null(void) { return (value_t){.tag = STOWAGE_STORE_SQL_VALUE_NULL}; }

value_t v_int(int64_t i) { return (value_t){.tag = STOWAGE_STORE_SQL_VALUE_INTEGER, .val.integer = i}; }

value_t v_u64(uint64_t u) { return v_int(u > INT64_MAX ? INT64_MAX : (int64_t)u); }

value_t v_text(const string_t *s) { return (value_t){.tag = STOWAGE_STORE_SQL_VALUE_TEXT, .val.text = *s}; }

value_t v_opt_text(const sql_adapter_option_string_t *s) { return s->is_some ? v_text(&s->val) : v_null(); }

value_t v_blob(const bytes_t *b) {
    return (value_t){.tag = STOWAGE_STORE_SQL_VALUE_BLOB, .val.blob = {b->ptr, b->len}};
}

// Turns the database's error into a `storage` error that says what it was
// (including the host's text, e.g. "injected failure" in fault tests), and
// frees it.
static bool sql_failed(stowage_store_sql_error_t *e, store_error_t *err) {
    static const char *const KINDS[] = {"access denied", "constraint failed", "busy",       "result too large",
                                        "invalid statement", "transaction error", "I/O error"};
    buf_t b = {0};
    buf_add(&b, "database ");
    buf_add(&b, e->tag < sizeof KINDS / sizeof *KINDS ? KINDS[e->tag] : "error");
    if (e->tag != STOWAGE_STORE_SQL_ERROR_BUSY) {
        buf_add(&b, ": ");
        buf_add_n(&b, e->val.io.ptr, e->val.io.len);  // every other case carries a string here
    }
    stowage_store_sql_error_free(e);
    return fail_with(err, STOWAGE_STORE_TYPES_ERROR_STORAGE, &b);
}

bool db_ready(store_error_t *err) {
    static bool ready = false;
    if (ready) return true;
    if (stowage_store_sql_get_dialect() != STOWAGE_STORE_SQL_DIALECT_SQLITE) {
        return fail_unsupported(err, "the C example adapter speaks SQLite only; this store's database is PostgreSQL");
    }
    for (size_t i = 0; i < sizeof SCHEMA / sizeof *SCHEMA; i++) {
        if (!db_execute(SCHEMA[i], NULL, 0, NULL, err)) return false;
    }
    ready = true;
    return true;
}

bool db_execute(const char *sql, value_t *params, size_t count, uint64_t *changed, store_error_t *err) {
    string_t text;
    sql_adapter_string_set(&text, sql);  // borrowed: imports never take ownership
    stowage_store_sql_list_value_t list = {params, count};
    uint64_t rows = 0;
    stowage_store_sql_error_t e;
    if (!stowage_store_sql_execute(&text, &list, &rows, &e)) return sql_failed(&e, err);
    if (changed != NULL) *changed = rows;
    return true;
}

bool db_query(const char *sql, value_t *params, size_t count, rows_t *rows, store_error_t *err) {
    string_t text;
    sql_adapter_string_set(&text, sql);
    stowage_store_sql_list_value_t list = {params, count};
    stowage_store_sql_error_t e;
    *rows = (rows_t){0};
    if (!stowage_store_sql_query(&text, &list, rows, &e)) {
        *rows = (rows_t){0};
        return sql_failed(&e, err);
    }
    return true;
}

void rows_free(rows_t *rows) {
    stowage_store_sql_query_result_free(rows);
    *rows = (rows_t){0};
}

bool db_batch(statement_t *statements, size_t count, store_error_t *err) {
    stowage_store_sql_list_statement_t list = {statements, count};
    sql_adapter_list_u64_t changed = {0};
    stowage_store_sql_error_t e;
    if (!stowage_store_sql_execute_batch(&list, &changed, &e)) return sql_failed(&e, err);
    sql_adapter_list_u64_free(&changed);
    return true;
}

bool db_begin(store_error_t *err) {
    stowage_store_sql_error_t e;
    return stowage_store_sql_begin(&e) || sql_failed(&e, err);
}

bool db_finish(bool ok, store_error_t *err) {
    stowage_store_sql_error_t e;
    if (ok && stowage_store_sql_commit(&e)) return true;
    if (ok) sql_failed(&e, err);  // the commit failed: report it, then roll back
    if (!stowage_store_sql_rollback(&e)) stowage_store_sql_error_free(&e);  // best effort: the host rolls back too
    return false;
}

static value_t *column(row_t *row, size_t i) { return i < row->values.len ? &row->values.ptr[i] : NULL; }

int64_t col_int(row_t *row, size_t i) {
    value_t *v = column(row, i);
    return v != NULL && v->tag == STOWAGE_STORE_SQL_VALUE_INTEGER ? v->val.integer : 0;
}

string_t col_take_text(row_t *row, size_t i) {
    value_t *v = column(row, i);
    if (v == NULL || v->tag != STOWAGE_STORE_SQL_VALUE_TEXT) return (string_t){NULL, 0};
    string_t taken = v->val.text;
    *v = v_null();
    return taken;
}

sql_adapter_option_string_t col_take_opt_text(row_t *row, size_t i) {
    value_t *v = column(row, i);
    bool present = v != NULL && v->tag == STOWAGE_STORE_SQL_VALUE_TEXT;
    return (sql_adapter_option_string_t){present, col_take_text(row, i)};
}

bytes_t col_take_blob(row_t *row, size_t i) {
    value_t *v = column(row, i);
    if (v == NULL || v->tag != STOWAGE_STORE_SQL_VALUE_BLOB) return (bytes_t){NULL, 0};
    bytes_t taken = {v->val.blob.ptr, v->val.blob.len};
    *v = v_null();
    return taken;
}
