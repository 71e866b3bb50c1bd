// {{name}}: the `display-store` exports. Display records live in the
// conversation's file beside its messages (see adapter.c), stored verbatim at
// the seqs the host gives them; they may exist before the conversation is opened.
#include <stdlib.h>
#include <string.h>

#include "adapter.h"

typedef exports_stowage_store_display_store_stored_display_record_t stored_record_t;
typedef exports_stowage_store_display_store_list_stored_display_record_t records_t;

static string_t copy_text(const string_t *s) { return copy_string(s); }

static adapter_world_option_string_t copy_opt(const adapter_world_option_string_t *s) {
    adapter_world_option_string_t copy = {s->is_some, {NULL, 0}};
    if (s->is_some) copy.val = copy_text(&s->val);
    return copy;
}

static record_t copy_record(const record_t *r) {
    record_t copy = *r;
    copy.message_id = copy_opt(&r->message_id);
    copy.message_type = copy_text(&r->message_type);
    copy.content_type = copy_text(&r->content_type);
    copy.tool_call_id = copy_opt(&r->tool_call_id);
    copy.status = copy_opt(&r->status);
    copy.body = copy_bytes(&r->body);
    copy.tag = copy_bytes(&r->tag);
    return copy;
}

static bool equal(const string_t *a, const string_t *b) {
    return a->len == b->len && (a->len == 0 || memcmp(a->ptr, b->ptr, a->len) == 0);
}

// Appends a copy of record `seq` of `c` to `out`.
static bool push(records_t *out, const conversation_t *c, uint64_t seq, store_error_t *err) {
    stored_record_t *grown = realloc(out->ptr, (out->len + 1) * sizeof *grown);
    if (grown == NULL) return fail(err, "out of memory");
    out->ptr = grown;
    out->ptr[out->len++] = (stored_record_t){seq, copy_record(&c->display[seq - 1])};
    return true;
}

bool exports_stowage_store_display_store_insert(scope_t *scope, string_t *id, records_t *records,
                                                exports_stowage_store_display_store_insert_outcome_t *ret,
                                                store_error_t *err) {
    bool ok = true;
    for (size_t i = 1; ok && i < records->len; i++) {
        if (records->ptr[i].seq != records->ptr[i - 1].seq + 1) ok = fail_invalid(err, "seqs are not contiguous");
    }
    ret->tag = EXPORTS_STOWAGE_STORE_DISPLAY_STORE_INSERT_OUTCOME_STORED;
    conversation_t c = {0};
    if (ok && records->len > 0 && (ok = load(scope, id, &c, err))) {
        if (records->ptr[0].seq != c.display_count + 1) {
            ret->tag = EXPORTS_STOWAGE_STORE_DISPLAY_STORE_INSERT_OUTCOME_OUT_OF_SEQUENCE;
            ret->val.out_of_sequence = c.display_count;
        } else {
            record_t *grown = realloc(c.display, (c.display_count + records->len) * sizeof *grown);
            ok = grown != NULL || fail(err, "out of memory");
            for (size_t i = 0; ok && i < records->len; i++) {  // moved from the arguments
                c.display = grown;
                c.display[c.display_count++] = records->ptr[i].record;
                records->ptr[i].record = (record_t){0};
            }
            ok = ok && save(&c, err);
        }
    }
    conversation_free(&c);
    stowage_store_types_scope_free(scope);
    adapter_world_string_free(id);
    exports_stowage_store_display_store_list_stored_display_record_free(records);
    return ok;
}

bool exports_stowage_store_display_store_by_tool_call_id(scope_t *scope, string_t *id, string_t *tool_call_id,
                                                         records_t *ret, store_error_t *err) {
    *ret = (records_t){NULL, 0};
    conversation_t c = {0};
    bool ok = load(scope, id, &c, err);
    for (size_t i = 0; ok && i < c.display_count; i++) {
        const adapter_world_option_string_t *call = &c.display[i].tool_call_id;
        if (call->is_some && equal(&call->val, tool_call_id)) ok = push(ret, &c, i + 1, err);
    }
    if (!ok) exports_stowage_store_display_store_list_stored_display_record_free(ret);
    conversation_free(&c);
    stowage_store_types_scope_free(scope);
    adapter_world_string_free(id);
    adapter_world_string_free(tool_call_id);
    return ok;
}

bool exports_stowage_store_display_store_update(scope_t *scope, string_t *id, stored_record_t *record,
                                                store_error_t *err) {
    conversation_t c = {0};
    bool ok = load(scope, id, &c, err);
    if (ok && (record->seq == 0 || record->seq > c.display_count)) ok = fail_not_found(err);
    if (ok) {
        exports_stowage_store_display_store_display_record_free(&c.display[record->seq - 1]);
        c.display[record->seq - 1] = record->record;  // moved from the argument
        record->record = (record_t){0};
        ok = save(&c, err);
    }
    conversation_free(&c);
    stowage_store_types_scope_free(scope);
    adapter_world_string_free(id);
    exports_stowage_store_display_store_stored_display_record_free(record);
    return ok;
}

bool exports_stowage_store_display_store_list(scope_t *scope, string_t *id, uint64_t after, uint32_t limit,
                                              records_t *ret, store_error_t *err) {
    *ret = (records_t){NULL, 0};
    conversation_t c = {0};
    bool ok = load(scope, id, &c, err);
    for (uint64_t seq = after + 1; ok && seq <= c.display_count && ret->len < limit; seq++) ok = push(ret, &c, seq, err);
    if (!ok) exports_stowage_store_display_store_list_stored_display_record_free(ret);
    conversation_free(&c);
    stowage_store_types_scope_free(scope);
    adapter_world_string_free(id);
    return ok;
}

// --- find-by-status: every matching record of the store, sorted, paged ------------------

typedef exports_stowage_store_display_store_located_display_record_t located_t;
typedef exports_stowage_store_display_store_list_located_display_record_t located_list_t;

typedef struct {
    const adapter_world_list_string_t *statuses;
    located_list_t *out;
} find_arg_t;

static int compare_strings(const string_t *a, const string_t *b) {
    size_t n = a->len < b->len ? a->len : b->len;
    int c = n > 0 ? memcmp(a->ptr, b->ptr, n) : 0;  // byte-wise UTF-8 order
    return c != 0 ? c : (a->len > b->len) - (a->len < b->len);
}

// Order of (tenant, user, conversation id, seq).
static int compare_position(const scope_t *scope_a, const string_t *id_a, uint64_t seq_a, const scope_t *scope_b,
                            const string_t *id_b, uint64_t seq_b) {
    int c = compare_strings(&scope_a->tenant, &scope_b->tenant);
    if (c == 0) c = compare_strings(&scope_a->user, &scope_b->user);
    if (c == 0) c = compare_strings(id_a, id_b);
    return c != 0 ? c : (seq_a > seq_b) - (seq_a < seq_b);
}

static int by_position(const void *a, const void *b) {
    const located_t *x = a, *y = b;
    return compare_position(&x->scope, &x->conversation_id, x->stored.seq, &y->scope, &y->conversation_id,
                            y->stored.seq);
}

static bool collect_status(conversation_t *c, void *arg, store_error_t *err) {
    find_arg_t *f = arg;
    bool ok = true;
    for (size_t i = 0; ok && i < c->display_count; i++) {
        const adapter_world_option_string_t *status = &c->display[i].status;
        bool wanted = false;
        for (size_t s = 0; status->is_some && !wanted && s < f->statuses->len; s++) {
            wanted = equal(&status->val, &f->statuses->ptr[s]);
        }
        if (!wanted) continue;
        located_t *grown = realloc(f->out->ptr, (f->out->len + 1) * sizeof *grown);
        if (grown == NULL) {
            ok = fail(err, "out of memory");
            break;
        }
        f->out->ptr = grown;
        located_t *l = &f->out->ptr[f->out->len++];
        l->scope.tenant = copy_string(&c->scope.tenant);
        l->scope.user = copy_string(&c->scope.user);
        l->conversation_id = copy_string(&c->id);
        l->stored = (stored_record_t){i + 1, copy_record(&c->display[i])};
    }
    conversation_free(c);
    return ok;
}

bool exports_stowage_store_display_store_find_by_status(adapter_world_list_string_t *statuses,
                                                        exports_stowage_store_display_store_display_position_t *after,
                                                        uint32_t limit, located_list_t *ret, store_error_t *err) {
    // Scans the whole store: simple, and linear in its size (the host calls this at start-up).
    located_list_t all = {NULL, 0};
    find_arg_t arg = {statuses, &all};
    bool ok = for_each_conversation(collect_status, &arg, err);
    *ret = (located_list_t){NULL, 0};
    if (ok) {
        qsort(all.ptr, all.len, sizeof *all.ptr, by_position);
        // Keep the first `limit` records strictly after `after`; free the rest.
        located_t *kept = all.len > 0 ? malloc(all.len * sizeof *kept) : NULL;
        for (size_t i = 0; i < all.len; i++) {
            located_t *l = &all.ptr[i];
            bool past = after == NULL || compare_position(&l->scope, &l->conversation_id, l->stored.seq, &after->scope,
                                                          &after->conversation_id, after->seq) > 0;
            if (kept != NULL && past && ret->len < limit) {
                kept[ret->len++] = *l;
            } else {
                exports_stowage_store_display_store_located_display_record_free(l);
            }
        }
        ret->ptr = kept;
        free(all.ptr);
        if (all.len > 0 && kept == NULL) ok = fail(err, "out of memory");
    } else {
        exports_stowage_store_display_store_list_located_display_record_free(&all);
    }
    adapter_world_list_string_free(statuses);
    if (after != NULL) exports_stowage_store_display_store_display_position_free(after);
    return ok;
}
