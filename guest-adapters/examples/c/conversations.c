// `conversation-store`: message histories in SQL.
//
// A conversation is one row of `example_conversations` (its version, last seq
// and meta) plus one row per message in `example_messages`. Every write runs
// in one transaction (`db_begin` ... `db_finish`): SQLite's `begin` takes the
// database's write lock, so the checks the contract orders (not-found,
// already-stored, conflict, out-of-sequence) and the write that follows them
// see the same data, and a failure anywhere leaves nothing behind.
#include <stdlib.h>
#include <string.h>

#include "store.h"

typedef exports_stowage_store_conversation_store_conversation_info_t info_t;
typedef exports_stowage_store_conversation_store_conversation_meta_t meta_t;
typedef exports_stowage_store_conversation_store_list_stored_message_t messages_t;
typedef stowage_store_types_stored_message_t stored_message_t;
typedef exports_stowage_store_conversation_store_append_outcome_t append_outcome_t;
typedef exports_stowage_store_conversation_store_indexed_seq_t indexed_seq_t;

#define KEY_WHERE "tenant = ?1 AND scope_user = ?2"
#define INFO_COLUMNS "id, tenant, scope_user, meta_content, meta_tag, created_at, updated_at, last_seq, version"
#define MESSAGE_COLUMNS "seq, id, role, created_at, content, tag"
#define MESSAGES_OF "FROM example_messages WHERE " KEY_WHERE " AND conversation_id = ?3"

static void key_params(value_t key[3], const scope_t *scope, const string_t *id) {
    key[0] = v_text(&scope->tenant);
    key[1] = v_text(&scope->user);
    key[2] = v_text(id);
}

static void free_key(scope_t *scope, string_t *id) {
    stowage_store_types_scope_free(scope);
    sql_adapter_string_free(id);
}

// Moves the columns of INFO_COLUMNS into `info`.
static void info_from_row(row_t *row, info_t *info) {
    info->id = col_take_text(row, 0);
    info->scope.tenant = col_take_text(row, 1);
    info->scope.user = col_take_text(row, 2);
    info->meta.content = col_take_blob(row, 3);
    info->meta.tag = col_take_blob(row, 4);
    info->created_at = col_int(row, 5);
    info->updated_at = col_int(row, 6);
    info->last_seq = info->message_count = (uint64_t)col_int(row, 7);  // seqs are contiguous from 1
    info->version = (uint64_t)col_int(row, 8);
}

// The conversation's info; `found` says whether it exists.
static bool read_info(value_t key[3], info_t *info, bool *found, store_error_t *err) {
    rows_t rows;
    if (!db_query("SELECT " INFO_COLUMNS " FROM example_conversations WHERE " KEY_WHERE " AND id = ?3", key, 3, &rows,
                  err)) {
        return false;
    }
    *found = rows.rows.len > 0;
    if (*found) info_from_row(&rows.rows.ptr[0], info);
    rows_free(&rows);
    return true;
}

// The conversation's version and last seq, or `not-found`.
static bool read_history(value_t key[3], uint64_t *version, uint64_t *last_seq, store_error_t *err) {
    rows_t rows;
    if (!db_query("SELECT version, last_seq FROM example_conversations WHERE " KEY_WHERE " AND id = ?3", key, 3, &rows,
                  err)) {
        return false;
    }
    bool found = rows.rows.len > 0;
    if (found) {
        *version = (uint64_t)col_int(&rows.rows.ptr[0], 0);
        *last_seq = (uint64_t)col_int(&rows.rows.ptr[0], 1);
    }
    rows_free(&rows);
    return found || fail_not_found(err);
}

static uint64_t message_seq(const void *items, size_t i) { return ((const stored_message_t *)items)[i].seq; }

// Stores `messages` (after deleting the whole history first when `replace`)
// and sets the conversation's version, last seq and updated-at, in one batch.
static bool write_history(value_t key[3], const messages_t *messages, bool replace, uint64_t version,
                          uint64_t last_seq, int64_t now, store_error_t *err) {
    static const char INSERT[] =
        "INSERT INTO example_messages (tenant, scope_user, conversation_id, " MESSAGE_COLUMNS ")"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
    static const char DELETE_ALL[] = "DELETE " MESSAGES_OF;
    static const char UPDATE[] = "UPDATE example_conversations SET version = ?4, last_seq = ?5, updated_at = ?6"
                                 " WHERE " KEY_WHERE " AND id = ?3";
    size_t n = messages->len;
    statement_t *statements = calloc(n + 2, sizeof *statements);
    value_t *params = calloc(n * 9 + 6, sizeof *params);
    if (statements == NULL || params == NULL) {
        free(statements);
        free(params);
        return fail_storage(err, "out of memory", NULL);
    }
    size_t count = 0;
    if (replace) {
        sql_adapter_string_set(&statements[count].sql, DELETE_ALL);
        statements[count++].params = (stowage_store_sql_list_value_t){key, 3};
    }
    for (size_t i = 0; i < n; i++) {
        const stowage_store_types_message_t *m = &messages->ptr[i].message;
        value_t *p = &params[i * 9];
        memcpy(p, key, 3 * sizeof *p);
        p[3] = v_u64(messages->ptr[i].seq);
        p[4] = v_text(&m->id);
        p[5] = v_int(m->role);
        p[6] = v_int(m->created_at);
        p[7] = v_blob(&m->content);
        p[8] = v_blob(&m->tag);
        sql_adapter_string_set(&statements[count].sql, INSERT);
        statements[count++].params = (stowage_store_sql_list_value_t){p, 9};
    }
    value_t *u = &params[n * 9];
    memcpy(u, key, 3 * sizeof *u);
    u[3] = v_u64(version);
    u[4] = v_u64(last_seq);
    u[5] = v_int(now);
    sql_adapter_string_set(&statements[count].sql, UPDATE);
    statements[count++].params = (stowage_store_sql_list_value_t){u, 6};
    bool ok = db_batch(statements, count, err);
    free(statements);
    free(params);
    return ok;
}

// Which messages of the batch are stored already, with their seqs, in batch
// order; `found` is empty (NULL, 0) when none is.
static bool find_stored(value_t key[3], const messages_t *messages,
                        exports_stowage_store_conversation_store_list_indexed_seq_t *found, store_error_t *err) {
    *found = (exports_stowage_store_conversation_store_list_indexed_seq_t){NULL, 0};
    for (size_t i = 0; i < messages->len; i++) {
        value_t params[4] = {key[0], key[1], key[2], v_text(&messages->ptr[i].message.id)};
        rows_t rows;
        if (!db_query("SELECT seq " MESSAGES_OF " AND id = ?4", params, 4, &rows, err)) {
            free(found->ptr);
            return false;
        }
        if (rows.rows.len > 0) {
            indexed_seq_t *grown = realloc(found->ptr, (found->len + 1) * sizeof *grown);
            if (grown == NULL) {
                rows_free(&rows);
                free(found->ptr);
                return fail_storage(err, "out of memory", NULL);
            }
            found->ptr = grown;
            found->ptr[found->len++] = (indexed_seq_t){(uint32_t)i, (uint64_t)col_int(&rows.rows.ptr[0], 0)};
        }
        rows_free(&rows);
    }
    return true;
}

// `append` inside its transaction: the contract's checks in order, then the write.
static bool append_locked(value_t key[3], const messages_t *messages, const uint64_t *expected, int64_t now,
                          append_outcome_t *ret, store_error_t *err) {
    uint64_t version, last_seq;
    if (!read_history(key, &version, &last_seq, err)) return false;
    exports_stowage_store_conversation_store_list_indexed_seq_t stored;
    if (!find_stored(key, messages, &stored, err)) return false;
    if (stored.len > 0) {
        ret->tag = EXPORTS_STOWAGE_STORE_CONVERSATION_STORE_APPEND_OUTCOME_ALREADY_STORED;
        ret->val.already_stored.seqs = stored;
        ret->val.already_stored.version = version;
        return true;
    }
    if (expected != NULL && *expected != version) return fail_conflict(err, *expected, version);
    if (messages->len == 0) {  // nothing to store: the version stays
        ret->tag = EXPORTS_STOWAGE_STORE_CONVERSATION_STORE_APPEND_OUTCOME_STORED;
        ret->val.stored = version;
        return true;
    }
    if (messages->ptr[0].seq != last_seq + 1) {
        ret->tag = EXPORTS_STOWAGE_STORE_CONVERSATION_STORE_APPEND_OUTCOME_OUT_OF_SEQUENCE;
        ret->val.out_of_sequence = last_seq;
        return true;
    }
    uint64_t new_last = messages->ptr[messages->len - 1].seq;
    if (!write_history(key, messages, false, version + 1, new_last, now, err)) return false;
    ret->tag = EXPORTS_STOWAGE_STORE_CONVERSATION_STORE_APPEND_OUTCOME_STORED;
    ret->val.stored = version + 1;
    return true;
}

bool exports_stowage_store_conversation_store_open(scope_t *scope, string_t *conversation_id, meta_t *meta, int64_t now,
                                                   info_t *ret, store_error_t *err) {
    value_t key[3];
    key_params(key, scope, conversation_id);
    bool found = false;
    bool ok = db_ready(err) && read_info(key, ret, &found, err);
    if (ok && !found) {
        // Create it; a concurrent open of the same id makes this a no-op.
        value_t params[6] = {key[0], key[1], key[2], v_int(now), v_blob(&meta->content), v_blob(&meta->tag)};
        ok = db_execute("INSERT INTO example_conversations (tenant, scope_user, id, created_at, updated_at, version,"
                        " last_seq, meta_content, meta_tag) VALUES (?1, ?2, ?3, ?4, ?4, 0, 0, ?5, ?6)"
                        " ON CONFLICT DO NOTHING",
                        params, 6, NULL, err) &&
             read_info(key, ret, &found, err);
        if (ok && !found) ok = fail_storage(err, "open", "the conversation is missing right after it was created");
    }
    free_key(scope, conversation_id);
    stowage_store_types_conversation_meta_free(meta);
    return ok;
}

bool exports_stowage_store_conversation_store_info(scope_t *scope, string_t *conversation_id, info_t *ret,
                                                   store_error_t *err) {
    value_t key[3];
    key_params(key, scope, conversation_id);
    bool found = false;
    bool ok = db_ready(err) && read_info(key, ret, &found, err) && (found || fail_not_found(err));
    free_key(scope, conversation_id);
    return ok;
}

bool exports_stowage_store_conversation_store_update_meta(scope_t *scope, string_t *conversation_id, meta_t *meta,
                                                          store_error_t *err) {
    value_t params[5];
    key_params(params, scope, conversation_id);
    params[3] = v_blob(&meta->content);
    params[4] = v_blob(&meta->tag);
    uint64_t changed = 0;
    bool ok = db_ready(err) &&
              db_execute("UPDATE example_conversations SET meta_content = ?4, meta_tag = ?5 WHERE " KEY_WHERE
                         " AND id = ?3",
                         params, 5, &changed, err) &&
              (changed > 0 || fail_not_found(err));
    free_key(scope, conversation_id);
    stowage_store_types_conversation_meta_free(meta);
    return ok;
}

bool exports_stowage_store_conversation_store_append(scope_t *scope, string_t *conversation_id, messages_t *messages,
                                                     uint64_t *expected_version, int64_t now, append_outcome_t *ret,
                                                     store_error_t *err) {
    value_t key[3];
    key_params(key, scope, conversation_id);
    *ret = (append_outcome_t){0};
    bool ok = check_contiguous(messages->ptr, messages->len, message_seq, "append", err) && db_ready(err) &&
              db_begin(err) && db_finish(append_locked(key, messages, expected_version, now, ret, err), err);
    if (!ok) exports_stowage_store_conversation_store_append_outcome_free(ret);  // a list made before a failure
    free_key(scope, conversation_id);
    exports_stowage_store_conversation_store_list_stored_message_free(messages);
    return ok;
}

static bool replace_locked(value_t key[3], const messages_t *messages, const uint64_t *expected, int64_t now,
                           uint64_t *ret, store_error_t *err) {
    uint64_t version, last_seq;
    if (!read_history(key, &version, &last_seq, err)) return false;
    if (expected != NULL && *expected != version) return fail_conflict(err, *expected, version);
    if (!write_history(key, messages, true, version + 1, messages->len, now, err)) return false;
    *ret = version + 1;
    return true;
}

bool exports_stowage_store_conversation_store_replace(scope_t *scope, string_t *conversation_id, messages_t *messages,
                                                      uint64_t *expected_version, int64_t now, uint64_t *ret,
                                                      store_error_t *err) {
    value_t key[3];
    key_params(key, scope, conversation_id);
    bool ok = check_contiguous(messages->ptr, messages->len, message_seq, "replace", err) &&
              (messages->len == 0 || messages->ptr[0].seq == 1 ||
               fail_invalid(err, "replace", "messages must be numbered from seq 1")) &&
              db_ready(err) && db_begin(err) &&
              db_finish(replace_locked(key, messages, expected_version, now, ret, err), err);
    free_key(scope, conversation_id);
    exports_stowage_store_conversation_store_list_stored_message_free(messages);
    return ok;
}

static bool load_messages(value_t key[3], const exports_stowage_store_conversation_store_message_range_t *range,
                          uint32_t limit, messages_t *ret, store_error_t *err) {
    uint64_t version, last_seq;
    if (!read_history(key, &version, &last_seq, err)) return false;
    value_t params[5] = {key[0], key[1], key[2], v_int(limit), v_int(limit)};
    const char *sql = "SELECT " MESSAGE_COLUMNS " " MESSAGES_OF " ORDER BY seq DESC LIMIT ?4 + 0";
    bool newest_first = true;  // LATEST and BEFORE read backwards from the end
    if (range->tag == EXPORTS_STOWAGE_STORE_CONVERSATION_STORE_MESSAGE_RANGE_AFTER) {
        sql = "SELECT " MESSAGE_COLUMNS " " MESSAGES_OF " AND seq > ?4 ORDER BY seq LIMIT ?5 + 0";
        params[3] = v_u64(range->val.after);
        newest_first = false;
    } else if (range->tag == EXPORTS_STOWAGE_STORE_CONVERSATION_STORE_MESSAGE_RANGE_BEFORE) {
        sql = "SELECT " MESSAGE_COLUMNS " " MESSAGES_OF " AND seq < ?4 ORDER BY seq DESC LIMIT ?5 + 0";
        params[3] = v_u64(range->val.before);
    }
    rows_t rows;
    if (!db_query(sql, params, range->tag == EXPORTS_STOWAGE_STORE_CONVERSATION_STORE_MESSAGE_RANGE_LATEST ? 4 : 5,
                  &rows, err)) {
        return false;
    }
    size_t n = rows.rows.len;
    *ret = (messages_t){n > 0 ? calloc(n, sizeof *ret->ptr) : NULL, n};
    if (n > 0 && ret->ptr == NULL) {
        rows_free(&rows);
        *ret = (messages_t){NULL, 0};
        return fail_storage(err, "out of memory", NULL);
    }
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        row_t *row = &rows.rows.ptr[newest_first ? n - 1 - i : i];  // results go out oldest first
        stored_message_t *out = &ret->ptr[i];
        int64_t role = col_int(row, 2);
        out->seq = (uint64_t)col_int(row, 0);
        out->message.id = col_take_text(row, 1);
        out->message.role = (stowage_store_types_role_t)role;
        out->message.created_at = col_int(row, 3);
        out->message.content = col_take_blob(row, 4);
        out->message.tag = col_take_blob(row, 5);
        if (role < STOWAGE_STORE_TYPES_ROLE_SYSTEM || role > STOWAGE_STORE_TYPES_ROLE_TOOL) {
            ok = fail_storage(err, "load", "a stored message has an unknown role code");
        }
    }
    rows_free(&rows);
    if (!ok) exports_stowage_store_conversation_store_list_stored_message_free(ret);
    return ok;
}

bool exports_stowage_store_conversation_store_load(scope_t *scope, string_t *conversation_id,
                                                   exports_stowage_store_conversation_store_message_range_t *range,
                                                   uint32_t limit, messages_t *ret, store_error_t *err) {
    value_t key[3];
    key_params(key, scope, conversation_id);
    bool ok = db_ready(err) && load_messages(key, range, limit, ret, err);
    free_key(scope, conversation_id);
    return ok;
}

static bool truncate_locked(value_t key[3], uint64_t seq, const uint64_t *expected, int64_t now,
                            exports_stowage_store_conversation_store_truncate_outcome_t *ret, store_error_t *err) {
    uint64_t version, last_seq;
    if (!read_history(key, &version, &last_seq, err)) return false;
    if (seq >= last_seq) {  // nothing to remove: no version bump
        *ret = (exports_stowage_store_conversation_store_truncate_outcome_t){0, version};
        return true;
    }
    if (expected != NULL && *expected != version) return fail_conflict(err, *expected, version);
    value_t params[6] = {key[0], key[1], key[2], v_u64(seq), v_u64(version + 1), v_int(now)};
    bool ok = db_execute("DELETE " MESSAGES_OF " AND seq > ?4", params, 4, NULL, err) &&
              db_execute("UPDATE example_conversations SET version = ?5, last_seq = ?4, updated_at = ?6"
                         " WHERE " KEY_WHERE " AND id = ?3",
                         params, 6, NULL, err);
    *ret = (exports_stowage_store_conversation_store_truncate_outcome_t){last_seq - seq, version + 1};
    return ok;
}

bool exports_stowage_store_conversation_store_truncate_after(
    scope_t *scope, string_t *conversation_id, uint64_t seq, uint64_t *expected_version, int64_t now,
    exports_stowage_store_conversation_store_truncate_outcome_t *ret, store_error_t *err) {
    value_t key[3];
    key_params(key, scope, conversation_id);
    bool ok = db_ready(err) && db_begin(err) &&
              db_finish(truncate_locked(key, seq, expected_version, now, ret, err), err);
    free_key(scope, conversation_id);
    return ok;
}

// Deletes the conversation row, its messages and its display records.
static bool delete_locked(value_t key[3], bool *deleted, store_error_t *err) {
    static const char *const DELETES[] = {
        "DELETE FROM example_conversations WHERE " KEY_WHERE " AND id = ?3",
        "DELETE " MESSAGES_OF,
        "DELETE FROM example_display WHERE " KEY_WHERE " AND conversation_id = ?3",
    };
    *deleted = false;
    for (size_t i = 0; i < sizeof DELETES / sizeof *DELETES; i++) {
        uint64_t changed = 0;
        if (!db_execute(DELETES[i], key, 3, &changed, err)) return false;
        *deleted = *deleted || changed > 0;
    }
    return true;
}

bool exports_stowage_store_conversation_store_delete(scope_t *scope, string_t *conversation_id, bool *ret,
                                                     store_error_t *err) {
    value_t key[3];
    key_params(key, scope, conversation_id);
    bool ok = db_ready(err) && db_begin(err) && db_finish(delete_locked(key, ret, err), err);
    free_key(scope, conversation_id);
    return ok;
}

bool exports_stowage_store_conversation_store_list(
    scope_t *scope, string_t *after, uint32_t limit,
    exports_stowage_store_conversation_store_list_conversation_info_t *ret, store_error_t *err) {
    value_t params[4] = {v_text(&scope->tenant), v_text(&scope->user), after ? v_text(after) : v_null(),
                         v_int(limit)};
    rows_t rows = {0};
    bool ok = db_ready(err) &&
              db_query("SELECT " INFO_COLUMNS " FROM example_conversations WHERE " KEY_WHERE
                       " AND (?3 IS NULL OR id > ?3) ORDER BY id LIMIT ?4 + 0",
                       params, 4, &rows, err);
    size_t n = ok ? rows.rows.len : 0;
    ret->ptr = n > 0 ? calloc(n, sizeof *ret->ptr) : NULL;
    ret->len = ret->ptr != NULL ? n : 0;
    if (ok && n > 0 && ret->ptr == NULL) ok = fail_storage(err, "out of memory", NULL);
    for (size_t i = 0; i < ret->len; i++) info_from_row(&rows.rows.ptr[i], &ret->ptr[i]);
    rows_free(&rows);
    stowage_store_types_scope_free(scope);
    if (after != NULL) sql_adapter_string_free(after);
    return ok;
}
