// `display-store`: display records in SQL, one row each in `example_display`,
// stored verbatim at the seqs the host gives them. Records may exist for a
// conversation that has no history, so nothing here looks at
// `example_conversations`.
#include <stdlib.h>
#include <string.h>

#include "store.h"

typedef exports_stowage_store_display_store_display_record_t record_t;
typedef exports_stowage_store_display_store_stored_display_record_t stored_record_t;
typedef exports_stowage_store_display_store_list_stored_display_record_t records_t;

#define KEY_WHERE "tenant = ?1 AND scope_user = ?2 AND conversation_id = ?3"
#define RECORD_COLUMNS \
    "seq, message_id, message_type, content_type, tool_call_id, status, created_at, updated_at, body, tag"

static void key_params(value_t key[3], const scope_t *scope, const string_t *id) {
    key[0] = v_text(&scope->tenant);
    key[1] = v_text(&scope->user);
    key[2] = v_text(id);
}

static void free_key(scope_t *scope, string_t *id) {
    stowage_store_types_scope_free(scope);
    sql_adapter_string_free(id);
}

// The ten RECORD_COLUMNS parameters of `stored`, after the key in p[0..3].
static void record_params(value_t p[13], const stored_record_t *stored) {
    const record_t *r = &stored->record;
    p[3] = v_u64(stored->seq);
    p[4] = v_opt_text(&r->message_id);
    p[5] = v_text(&r->message_type);
    p[6] = v_text(&r->content_type);
    p[7] = v_opt_text(&r->tool_call_id);
    p[8] = v_opt_text(&r->status);
    p[9] = v_int(r->created_at);
    p[10] = v_int(r->updated_at);
    p[11] = v_blob(&r->body);
    p[12] = v_blob(&r->tag);
}

// Moves RECORD_COLUMNS, starting at column `at`, into `out`.
static void record_from_row(row_t *row, size_t at, stored_record_t *out) {
    out->seq = (uint64_t)col_int(row, at);
    out->record.message_id = col_take_opt_text(row, at + 1);
    out->record.message_type = col_take_text(row, at + 2);
    out->record.content_type = col_take_text(row, at + 3);
    out->record.tool_call_id = col_take_opt_text(row, at + 4);
    out->record.status = col_take_opt_text(row, at + 5);
    out->record.created_at = col_int(row, at + 6);
    out->record.updated_at = col_int(row, at + 7);
    out->record.body = col_take_blob(row, at + 8);
    out->record.tag = col_take_blob(row, at + 9);
}

// Runs a query of RECORD_COLUMNS rows and moves them into `ret`.
static bool query_records(const char *sql, value_t *params, size_t count, records_t *ret, store_error_t *err) {
    rows_t rows;
    *ret = (records_t){NULL, 0};
    if (!db_query(sql, params, count, &rows, err)) return false;
    size_t n = rows.rows.len;
    if (n > 0 && (ret->ptr = calloc(n, sizeof *ret->ptr)) == NULL) {
        rows_free(&rows);
        return fail_storage(err, "out of memory", NULL);
    }
    ret->len = n;
    for (size_t i = 0; i < n; i++) record_from_row(&rows.rows.ptr[i], 0, &ret->ptr[i]);
    rows_free(&rows);
    return true;
}

static uint64_t record_seq(const void *items, size_t i) { return ((const stored_record_t *)items)[i].seq; }

// `insert` inside its transaction: the batch must follow the last record.
static bool insert_locked(value_t key[3], const records_t *records,
                          exports_stowage_store_display_store_insert_outcome_t *ret, store_error_t *err) {
    rows_t rows;
    if (!db_query("SELECT COALESCE(MAX(seq), 0) FROM example_display WHERE " KEY_WHERE, key, 3, &rows, err)) {
        return false;
    }
    uint64_t last = rows.rows.len > 0 ? (uint64_t)col_int(&rows.rows.ptr[0], 0) : 0;
    rows_free(&rows);
    if (records->ptr[0].seq != last + 1) {
        ret->tag = EXPORTS_STOWAGE_STORE_DISPLAY_STORE_INSERT_OUTCOME_OUT_OF_SEQUENCE;
        ret->val.out_of_sequence = last;
        return true;
    }
    size_t n = records->len;
    statement_t *statements = calloc(n, sizeof *statements);
    value_t *params = calloc(n * 13, sizeof *params);
    bool ok = statements != NULL && params != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        value_t *p = &params[i * 13];
        memcpy(p, key, 3 * sizeof *p);
        record_params(p, &records->ptr[i]);
        sql_adapter_string_set(&statements[i].sql, "INSERT INTO example_display (tenant, scope_user, conversation_id, "
                                                   RECORD_COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9,"
                                                   " ?10, ?11, ?12, ?13)");
        statements[i].params = (stowage_store_sql_list_value_t){p, 13};
    }
    ok = ok ? db_batch(statements, n, err) : fail_storage(err, "out of memory", NULL);
    free(statements);
    free(params);
    ret->tag = EXPORTS_STOWAGE_STORE_DISPLAY_STORE_INSERT_OUTCOME_STORED;
    return ok;
}

bool exports_stowage_store_display_store_insert(scope_t *scope, string_t *conversation_id, records_t *records,
                                                exports_stowage_store_display_store_insert_outcome_t *ret,
                                                store_error_t *err) {
    value_t key[3];
    key_params(key, scope, conversation_id);
    ret->tag = EXPORTS_STOWAGE_STORE_DISPLAY_STORE_INSERT_OUTCOME_STORED;  // an empty batch stores nothing
    bool ok = check_contiguous(records->ptr, records->len, record_seq, "display insert", err) &&
              (records->len == 0 ||
               (db_ready(err) && db_begin(err) && db_finish(insert_locked(key, records, ret, err), err)));
    free_key(scope, conversation_id);
    exports_stowage_store_display_store_list_stored_display_record_free(records);
    return ok;
}

bool exports_stowage_store_display_store_by_tool_call_id(scope_t *scope, string_t *conversation_id,
                                                         string_t *tool_call_id, records_t *ret, store_error_t *err) {
    value_t params[4];
    key_params(params, scope, conversation_id);
    params[3] = v_text(tool_call_id);
    bool ok = db_ready(err) && query_records("SELECT " RECORD_COLUMNS " FROM example_display WHERE " KEY_WHERE
                                             " AND tool_call_id = ?4 ORDER BY seq",
                                             params, 4, ret, err);
    free_key(scope, conversation_id);
    sql_adapter_string_free(tool_call_id);
    return ok;
}

bool exports_stowage_store_display_store_update(scope_t *scope, string_t *conversation_id, stored_record_t *record,
                                                store_error_t *err) {
    value_t params[13];
    key_params(params, scope, conversation_id);
    record_params(params, record);
    uint64_t changed = 0;
    bool ok = db_ready(err) &&
              db_execute("UPDATE example_display SET message_id = ?5, message_type = ?6, content_type = ?7,"
                         " tool_call_id = ?8, status = ?9, created_at = ?10, updated_at = ?11, body = ?12, tag = ?13"
                         " WHERE " KEY_WHERE " AND seq = ?4",
                         params, 13, &changed, err) &&
              (changed > 0 || fail_not_found(err));
    free_key(scope, conversation_id);
    exports_stowage_store_display_store_stored_display_record_free(record);
    return ok;
}

bool exports_stowage_store_display_store_list(scope_t *scope, string_t *conversation_id, uint64_t after, uint32_t limit,
                                              records_t *ret, store_error_t *err) {
    value_t params[5];
    key_params(params, scope, conversation_id);
    params[3] = v_u64(after);
    params[4] = v_int(limit);
    bool ok = db_ready(err) && query_records("SELECT " RECORD_COLUMNS " FROM example_display WHERE " KEY_WHERE
                                             " AND seq > ?4 ORDER BY seq LIMIT ?5 + 0",
                                             params, 5, ret, err);
    free_key(scope, conversation_id);
    return ok;
}

// Builds: records whose status is one of `statuses` (parameters from ?6 on),
// strictly after (?2, ?3, ?4, ?5) when `after`, in key order, at most ?1 of them.
static void by_status_sql(buf_t *sql, size_t statuses, bool after) {
    buf_add(sql, "SELECT tenant, scope_user, conversation_id, " RECORD_COLUMNS
                 " FROM example_display WHERE status IN (");
    for (size_t i = 0; i < statuses; i++) {
        buf_add(sql, i == 0 ? "?" : ", ?");
        buf_add_u64(sql, 6 + i);
    }
    buf_add(sql, ")");
    if (after) buf_add(sql, " AND (tenant, scope_user, conversation_id, seq) > (?2, ?3, ?4, ?5)");
    buf_add(sql, " ORDER BY tenant, scope_user, conversation_id, seq LIMIT ?1 + 0");
    buf_add_n(sql, (const uint8_t *)"", 1);  // the terminating NUL
}

static bool find_by_status(sql_adapter_list_string_t *statuses,
                           exports_stowage_store_display_store_display_position_t *after, uint32_t limit,
                           exports_stowage_store_display_store_list_located_display_record_t *ret,
                           store_error_t *err) {
    *ret = (exports_stowage_store_display_store_list_located_display_record_t){NULL, 0};
    if (statuses->len == 0 || limit == 0) return true;
    value_t *params = calloc(5 + statuses->len, sizeof *params);
    buf_t sql = {0};
    by_status_sql(&sql, statuses->len, after != NULL);
    if (params == NULL || sql.failed) {
        free(params);
        buf_free(&sql);
        return fail_storage(err, "out of memory", NULL);
    }
    // ?2..?5 are unused (NULL) without `after`: SQLite allows gaps in ?N numbering.
    params[0] = v_int(limit);
    params[1] = after ? v_text(&after->scope.tenant) : v_null();
    params[2] = after ? v_text(&after->scope.user) : v_null();
    params[3] = after ? v_text(&after->conversation_id) : v_null();
    params[4] = after ? v_u64(after->seq) : v_null();
    for (size_t i = 0; i < statuses->len; i++) params[5 + i] = v_text(&statuses->ptr[i]);
    rows_t rows;
    bool ok = db_query(sql.ptr, params, 5 + statuses->len, &rows, err);
    free(params);
    buf_free(&sql);
    if (!ok) return false;
    size_t n = rows.rows.len;
    if (n > 0 && (ret->ptr = calloc(n, sizeof *ret->ptr)) == NULL) {
        rows_free(&rows);
        return fail_storage(err, "out of memory", NULL);
    }
    ret->len = n;
    for (size_t i = 0; i < n; i++) {
        row_t *row = &rows.rows.ptr[i];
        ret->ptr[i].scope.tenant = col_take_text(row, 0);
        ret->ptr[i].scope.user = col_take_text(row, 1);
        ret->ptr[i].conversation_id = col_take_text(row, 2);
        record_from_row(row, 3, &ret->ptr[i].stored);
    }
    rows_free(&rows);
    return true;
}

bool exports_stowage_store_display_store_find_by_status(
    sql_adapter_list_string_t *statuses, exports_stowage_store_display_store_display_position_t *after, uint32_t limit,
    exports_stowage_store_display_store_list_located_display_record_t *ret, store_error_t *err) {
    bool ok = db_ready(err) && find_by_status(statuses, after, limit, ret, err);
    sql_adapter_list_string_free(statuses);
    if (after != NULL) exports_stowage_store_display_store_display_position_free(after);
    return ok;
}
