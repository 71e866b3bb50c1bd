// {{name}}: a Stowage storage adapter in C (contract stowage:store@0.2.0, world
// `adapter`), scaffolded by `stowage new-adapter`. It passes `stowage check` as
// it is; change it from there.
//
// The in-memory-plus-/data pattern: each conversation — header, messages and
// display records — is one file under /data (files.c). A call loads the file
// into a conversation_t, works on it in memory, and if it changed anything
// writes it back whole and durably. Content and tags are opaque bytes: stored
// and returned exactly, never interpreted.
#include <stdlib.h>
#include <string.h>

#include "adapter.h"

typedef exports_stowage_store_conversation_store_list_stored_message_t messages_t;
typedef exports_stowage_store_display_store_stored_display_record_t stored_record_t;
typedef exports_stowage_store_display_store_list_stored_display_record_t records_t;
typedef exports_stowage_store_conversation_store_conversation_info_t info_t;

// --- helpers ------------------------------------------------------------------------

// The conversation's info, with copies of its strings and bytes.
static void info_of(const conversation_t *c, info_t *info) {
    info->id = copy_string(&c->id);
    info->scope.tenant = copy_string(&c->scope.tenant);
    info->scope.user = copy_string(&c->scope.user);
    info->meta.content = copy_bytes(&c->meta.content);
    info->meta.tag = copy_bytes(&c->meta.tag);
    info->created_at = c->created_at;
    info->updated_at = c->updated_at;
    info->message_count = info->last_seq = c->message_count;
    info->version = c->version;
}

static bool check_contiguous(const messages_t *m, store_error_t *err) {
    for (size_t i = 1; i < m->len; i++) {
        if (m->ptr[i].seq != m->ptr[i - 1].seq + 1) return fail_invalid(err, "seqs are not contiguous");
    }
    return true;
}

static bool check_version(const uint64_t *expected, uint64_t actual, store_error_t *err) {
    if (expected == NULL || *expected == actual) return true;
    err->tag = STOWAGE_STORE_TYPES_ERROR_CONFLICT;
    err->val.conflict = (stowage_store_types_conflict_t){*expected, actual};
    return false;
}

// Appends `count` messages (moved out of `from`) to the conversation.
static bool add_messages(conversation_t *c, messages_t *from, store_error_t *err) {
    message_t *grown = realloc(c->messages, (c->message_count + from->len + 1) * sizeof *grown);
    if (grown == NULL) return fail(err, "out of memory");
    c->messages = grown;
    for (size_t i = 0; i < from->len; i++) {
        c->messages[c->message_count++] = from->ptr[i].message;
        from->ptr[i].message = (message_t){0};
    }
    return true;
}

// Loads the conversation; `not-found` unless it was opened.
static bool load_opened(const scope_t *scope, const string_t *id, conversation_t *c, store_error_t *err) {
    if (!load(scope, id, c, err)) return false;
    if (c->has_header) return true;
    conversation_free(c);
    return fail_not_found(err);
}

// --- conversation-store ------------------------------------------------------------

bool exports_stowage_store_conversation_store_open(scope_t *scope, string_t *id, meta_t *meta, int64_t now, info_t *ret,
                                                   store_error_t *err) {
    conversation_t c;
    bool ok = load(scope, id, &c, err);
    if (ok && !c.has_header) {
        c.has_header = true;
        c.meta = *meta;  // moved
        *meta = (meta_t){0};
        c.created_at = c.updated_at = now;
        ok = save(&c, err);
    }
    if (ok) info_of(&c, ret);
    conversation_free(&c);  // `load` leaves `c` freeable even when it fails
    stowage_store_types_scope_free(scope);
    adapter_world_string_free(id);
    stowage_store_types_conversation_meta_free(meta);
    return ok;
}

bool exports_stowage_store_conversation_store_info(scope_t *scope, string_t *id, info_t *ret, store_error_t *err) {
    conversation_t c;
    bool ok = load_opened(scope, id, &c, err);
    if (ok) {
        info_of(&c, ret);
        conversation_free(&c);
    }
    stowage_store_types_scope_free(scope);
    adapter_world_string_free(id);
    return ok;
}

bool exports_stowage_store_conversation_store_update_meta(scope_t *scope, string_t *id, meta_t *meta,
                                                          store_error_t *err) {
    conversation_t c;
    bool ok = load_opened(scope, id, &c, err);
    if (ok) {
        stowage_store_types_conversation_meta_free(&c.meta);
        c.meta = *meta;
        *meta = (meta_t){0};
        ok = save(&c, err);
        conversation_free(&c);
    }
    stowage_store_types_scope_free(scope);
    adapter_world_string_free(id);
    stowage_store_types_conversation_meta_free(meta);
    return ok;
}

static bool append(conversation_t *c, messages_t *messages, uint64_t *expected, int64_t now,
                   exports_stowage_store_conversation_store_append_outcome_t *ret, store_error_t *err) {
    // The contract's order after not-found: already-stored, conflict, out-of-sequence.
    exports_stowage_store_conversation_store_list_indexed_seq_t found = {NULL, 0};
    for (size_t i = 0; i < messages->len; i++) {
        for (size_t s = 0; s < c->message_count; s++) {
            string_t *a = &messages->ptr[i].message.id, *b = &c->messages[s].id;
            if (a->len != b->len || memcmp(a->ptr, b->ptr, a->len) != 0) continue;
            void *grown = realloc(found.ptr, (found.len + 1) * sizeof *found.ptr);
            if (grown == NULL) {
                free(found.ptr);
                return fail(err, "out of memory");
            }
            found.ptr = grown;
            found.ptr[found.len++] = (exports_stowage_store_conversation_store_indexed_seq_t){(uint32_t)i, s + 1};
        }
    }
    if (found.len > 0) {
        ret->tag = EXPORTS_STOWAGE_STORE_CONVERSATION_STORE_APPEND_OUTCOME_ALREADY_STORED;
        ret->val.already_stored = (exports_stowage_store_conversation_store_already_stored_t){found, c->version};
        return true;
    }
    if (!check_version(expected, c->version, err)) return false;
    ret->tag = EXPORTS_STOWAGE_STORE_CONVERSATION_STORE_APPEND_OUTCOME_STORED;
    ret->val.stored = c->version;
    if (messages->len == 0) return true;
    if (messages->ptr[0].seq != c->message_count + 1) {
        ret->tag = EXPORTS_STOWAGE_STORE_CONVERSATION_STORE_APPEND_OUTCOME_OUT_OF_SEQUENCE;
        ret->val.out_of_sequence = c->message_count;
        return true;
    }
    if (!add_messages(c, messages, err)) return false;
    c->version++;
    c->updated_at = now;
    ret->val.stored = c->version;
    return save(c, err);
}

bool exports_stowage_store_conversation_store_append(
    scope_t *scope, string_t *id, messages_t *messages, uint64_t *expected, int64_t now,
    exports_stowage_store_conversation_store_append_outcome_t *ret, store_error_t *err) {
    conversation_t c;
    bool ok = check_contiguous(messages, err) &&
              load_opened(scope, id, &c, err);
    if (ok) {
        ok = append(&c, messages, expected, now, ret, err);
        conversation_free(&c);
    }
    stowage_store_types_scope_free(scope);
    adapter_world_string_free(id);
    exports_stowage_store_conversation_store_list_stored_message_free(messages);
    return ok;
}

bool exports_stowage_store_conversation_store_replace(scope_t *scope, string_t *id, messages_t *messages,
                                                      uint64_t *expected, int64_t now, uint64_t *ret,
                                                      store_error_t *err) {
    conversation_t c;
    bool ok = check_contiguous(messages, err) &&
              (messages->len == 0 || messages->ptr[0].seq == 1 || fail_invalid(err, "replace: number from seq 1")) &&
              load_opened(scope, id, &c, err);
    if (ok) {
        ok = check_version(expected, c.version, err);
        if (ok) {
            for (size_t i = 0; i < c.message_count; i++) stowage_store_types_message_free(&c.messages[i]);
            c.message_count = 0;
            ok = add_messages(&c, messages, err);
        }
        if (ok) {
            *ret = ++c.version;
            c.updated_at = now;
            ok = save(&c, err);
        }
        conversation_free(&c);
    }
    stowage_store_types_scope_free(scope);
    adapter_world_string_free(id);
    exports_stowage_store_conversation_store_list_stored_message_free(messages);
    return ok;
}

bool exports_stowage_store_conversation_store_load(scope_t *scope, string_t *id,
                                                   exports_stowage_store_conversation_store_message_range_t *range,
                                                   uint32_t limit, messages_t *ret, store_error_t *err) {
    conversation_t c;
    bool ok = load_opened(scope, id, &c, err);
    if (ok) {
        uint64_t last = c.message_count, first, end;  // seqs first..=end
        if (range->tag == EXPORTS_STOWAGE_STORE_CONVERSATION_STORE_MESSAGE_RANGE_AFTER) {
            first = (range->val.after < last ? range->val.after : last) + 1;
            end = first - 1 + limit < last ? first - 1 + limit : last;
        } else {
            end = last;
            if (range->tag == EXPORTS_STOWAGE_STORE_CONVERSATION_STORE_MESSAGE_RANGE_BEFORE && range->val.before <= last)
                end = range->val.before == 0 ? 0 : range->val.before - 1;
            first = end > limit ? end - limit + 1 : 1;
        }
        size_t n = first <= end ? (size_t)(end - first + 1) : 0;
        *ret = (messages_t){n > 0 ? calloc(n, sizeof *ret->ptr) : NULL, n};
        if (n > 0 && ret->ptr == NULL) {
            *ret = (messages_t){NULL, 0};
            ok = fail(err, "out of memory");
        }
        for (size_t i = 0; i < ret->len; i++) {  // moved out of the state, which is dropped
            ret->ptr[i].seq = first + i;
            ret->ptr[i].message = c.messages[first - 1 + i];
            c.messages[first - 1 + i] = (message_t){0};
        }
        conversation_free(&c);
    }
    stowage_store_types_scope_free(scope);
    adapter_world_string_free(id);
    return ok;
}

bool exports_stowage_store_conversation_store_truncate_after(
    scope_t *scope, string_t *id, uint64_t seq, uint64_t *expected, int64_t now,
    exports_stowage_store_conversation_store_truncate_outcome_t *ret, store_error_t *err) {
    conversation_t c;
    bool ok = load_opened(scope, id, &c, err);
    if (ok) {
        ret->removed = 0;
        ret->version = c.version;
        if (seq < c.message_count) {
            ok = check_version(expected, c.version, err);
            if (ok) {
                ret->removed = c.message_count - seq;
                for (size_t i = seq; i < c.message_count; i++) stowage_store_types_message_free(&c.messages[i]);
                c.message_count = seq;
                ret->version = ++c.version;
                c.updated_at = now;
                ok = save(&c, err);
            }
        }
        conversation_free(&c);
    }
    stowage_store_types_scope_free(scope);
    adapter_world_string_free(id);
    return ok;
}

bool exports_stowage_store_conversation_store_delete(scope_t *scope, string_t *id, bool *ret, store_error_t *err) {
    bool ok = delete_file(scope, id, ret, err);
    stowage_store_types_scope_free(scope);
    adapter_world_string_free(id);
    return ok;
}

// --- listing: collect, sort, page ------------------------------------------------

typedef struct {
    const scope_t *scope;
    const string_t *after;
    exports_stowage_store_conversation_store_list_conversation_info_t *out;
} list_arg_t;

static int compare_strings(const string_t *a, const string_t *b) {
    size_t n = a->len < b->len ? a->len : b->len;
    int c = n > 0 ? memcmp(a->ptr, b->ptr, n) : 0;  // byte-wise UTF-8 order
    return c != 0 ? c : (a->len > b->len) - (a->len < b->len);
}

static bool same_scope(const scope_t *a, const scope_t *b) {
    return compare_strings(&a->tenant, &b->tenant) == 0 && compare_strings(&a->user, &b->user) == 0;
}

static bool collect_info(conversation_t *c, void *arg, store_error_t *err) {
    list_arg_t *l = arg;
    bool wanted = c->has_header && same_scope(&c->scope, l->scope) &&
                  (l->after == NULL || compare_strings(&c->id, l->after) > 0);
    if (wanted) {
        void *grown = realloc(l->out->ptr, (l->out->len + 1) * sizeof *l->out->ptr);
        if (grown == NULL) {
            conversation_free(c);
            return fail(err, "out of memory");
        }
        l->out->ptr = grown;
        info_of(c, &l->out->ptr[l->out->len++]);
    }
    conversation_free(c);
    return true;
}

static int by_id(const void *a, const void *b) { return compare_strings(&((const info_t *)a)->id, &((const info_t *)b)->id); }

bool exports_stowage_store_conversation_store_list(scope_t *scope, string_t *after, uint32_t limit,
                                                   exports_stowage_store_conversation_store_list_conversation_info_t *ret,
                                                   store_error_t *err) {
    *ret = (exports_stowage_store_conversation_store_list_conversation_info_t){NULL, 0};
    list_arg_t arg = {scope, after, ret};
    bool ok = for_each_conversation(collect_info, &arg, err);
    if (ok) {
        qsort(ret->ptr, ret->len, sizeof *ret->ptr, by_id);
        while (ret->len > limit) exports_stowage_store_conversation_store_conversation_info_free(&ret->ptr[--ret->len]);
    } else {
        exports_stowage_store_conversation_store_list_conversation_info_free(ret);
    }
    stowage_store_types_scope_free(scope);
    if (after != NULL) adapter_world_string_free(after);
    return ok;
}
