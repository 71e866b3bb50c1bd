// The C example adapter (world `sql-adapter`, stowage:store@0.2.0): shared
// declarations. See README.md for the design; the files are
//
//   text.c           growing strings and the adapter's error values (no stdio)
//   sql.c            the host's SQL database: values, rows, transactions, schema
//   conversations.c  the `conversation-store` exports
//   display.c        the `display-store` exports
//
// Ownership rules of `wit-bindgen c` that every file follows:
// - an exported function owns its arguments and frees them before returning;
// - whatever it puts in `ret` or `err` must be heap-allocated: the generated
//   post-return function frees it after the host has copied it;
// - arguments passed to an imported function (the `sql` calls) stay ours, and
//   results an import returns are ours to free.
#ifndef STOWAGE_EXAMPLE_C_STORE_H
#define STOWAGE_EXAMPLE_C_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sql_adapter.h"

// Short names for the generated types this adapter uses most.
typedef sql_adapter_string_t string_t;
typedef stowage_store_types_opaque_t bytes_t;
typedef stowage_store_types_scope_t scope_t;
typedef stowage_store_types_error_t store_error_t;
typedef stowage_store_sql_value_t value_t;
typedef stowage_store_sql_statement_t statement_t;
typedef stowage_store_sql_query_result_t rows_t;
typedef stowage_store_sql_row_t row_t;

// --- text.c -------------------------------------------------------------------

// A growing heap string. On allocation failure it stays usable and `failed` is set.
typedef struct {
    char *ptr;
    size_t len, cap;
    bool failed;
} buf_t;

void buf_add(buf_t *b, const char *text);
void buf_add_n(buf_t *b, const uint8_t *bytes, size_t len);
void buf_add_u64(buf_t *b, uint64_t n);
void buf_free(buf_t *b);

// Each fills `err` and returns false (the error result), so a function can
// `return fail_storage(err, ...)`. Strings are copied.
bool fail_not_found(store_error_t *err);
bool fail_storage(store_error_t *err, const char *what, const char *detail);
bool fail_invalid(store_error_t *err, const char *what, const char *detail);
bool fail_unsupported(store_error_t *err, const char *what);
bool fail_conflict(store_error_t *err, uint64_t expected, uint64_t actual);
// `storage` or `invalid-input` with the text built in `b` (consumed).
bool fail_with(store_error_t *err, uint8_t tag, buf_t *b);

// Checks that `count` seqs, read with `seq_at`, are contiguous; fills `err`
// with `invalid-input` naming `what` otherwise. Seqs above INT64_MAX are refused
// too (SQLite integers are signed).
bool check_contiguous(const void *items, size_t count, uint64_t (*seq_at)(const void *, size_t), const char *what,
                      store_error_t *err);

// --- sql.c --------------------------------------------------------------------

// Parameter values. They borrow the string or bytes they point at.
value_t v_null(void);
value_t v_int(int64_t i);
value_t v_u64(uint64_t u);  // clamped to INT64_MAX
value_t v_text(const string_t *s);
value_t v_opt_text(const sql_adapter_option_string_t *s);
value_t v_blob(const bytes_t *b);

// The schema exists and the database speaks SQLite; once per instance.
bool db_ready(store_error_t *err);
// One statement; `changed` (may be NULL) gets the rows it changed.
bool db_execute(const char *sql, value_t *params, size_t count, uint64_t *changed, store_error_t *err);
// One query; the caller frees `rows` with `rows_free` (also after a failure).
bool db_query(const char *sql, value_t *params, size_t count, rows_t *rows, store_error_t *err);
void rows_free(rows_t *rows);
// Statements in one host call; all take effect or none does. `sql` of each
// statement points at a constant string; params are borrowed.
bool db_batch(statement_t *statements, size_t count, store_error_t *err);
// A write transaction: `db_begin`, the work, then `db_finish(ok, err)`, which
// commits when `ok` and rolls back otherwise (returning false).
bool db_begin(store_error_t *err);
bool db_finish(bool ok, store_error_t *err);

// Column readers. The `take_` ones move the value out of the row (the row keeps
// an empty value), so results can be handed to the host without copying. A
// column of an unexpected type reads as 0 / empty: the adapter wrote every row
// itself, with the types of the schema.
int64_t col_int(row_t *row, size_t column);
string_t col_take_text(row_t *row, size_t column);
sql_adapter_option_string_t col_take_opt_text(row_t *row, size_t column);
bytes_t col_take_blob(row_t *row, size_t column);

#endif
