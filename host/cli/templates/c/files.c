// Conversation files: /data/conversations/<hash of (tenant, user, id)>.conv,
// holding the conversation's fields in a fixed order (numbers little-endian,
// strings and bytes prefixed with their u32 length; opaque content and tags
// copied verbatim). The real scope and id are inside the file: a file that
// belongs to another key (a hash collision) is refused, never mixed up.
//
// Durability: `save` writes a temporary file, fsyncs it, renames it over the
// target and syncs the directory where WASI allows it (see sync_dir), so a crash
// mid-write leaves the previous file or the new one, never a mix. The host serialises writers
// of one conversation within its process; two hosts sharing one store are not
// supported.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapter.h"

#define DIR_PATH "/data/conversations"
#define MAGIC "stowage1"

// --- errors -------------------------------------------------------------------

bool fail(store_error_t *err, const char *format, ...) {
    char text[512];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    err->tag = STOWAGE_STORE_TYPES_ERROR_STORAGE;
    adapter_world_string_dup(&err->val.storage, text);
    return false;
}

bool fail_invalid(store_error_t *err, const char *text) {
    err->tag = STOWAGE_STORE_TYPES_ERROR_INVALID_INPUT;
    adapter_world_string_dup(&err->val.invalid_input, text);
    return false;
}

bool fail_not_found(store_error_t *err) {
    err->tag = STOWAGE_STORE_TYPES_ERROR_NOT_FOUND;
    return false;
}

string_t copy_string(const string_t *s) {
    string_t copy = {NULL, 0};
    adapter_world_string_dup_n(&copy, (const char *)s->ptr, s->len);
    return copy;
}

stowage_store_types_opaque_t copy_bytes(const stowage_store_types_opaque_t *b) {
    stowage_store_types_opaque_t copy = {b->len > 0 ? malloc(b->len) : NULL, b->len};
    if (copy.ptr == NULL) copy.len = 0;  // out of memory: empty (the host's checks will notice)
    if (copy.len > 0) memcpy(copy.ptr, b->ptr, b->len);
    return copy;
}

void conversation_free(conversation_t *c) {
    stowage_store_types_scope_free(&c->scope);
    adapter_world_string_free(&c->id);
    stowage_store_types_conversation_meta_free(&c->meta);
    for (size_t i = 0; i < c->message_count; i++) stowage_store_types_message_free(&c->messages[i]);
    for (size_t i = 0; i < c->display_count; i++) exports_stowage_store_display_store_display_record_free(&c->display[i]);
    free(c->messages);
    free(c->display);
    *c = (conversation_t){0};
}

// --- encoding -------------------------------------------------------------------

typedef struct {
    uint8_t *ptr;
    size_t len, cap;
    bool failed;
} writer_t;

static void put(writer_t *w, const void *bytes, size_t len) {
    if (w->failed) return;
    if (w->len + len > w->cap) {
        size_t cap = (w->len + len) * 2;
        uint8_t *grown = realloc(w->ptr, cap);
        if (grown == NULL) {
            w->failed = true;
            return;
        }
        w->ptr = grown;
        w->cap = cap;
    }
    if (len > 0) memcpy(w->ptr + w->len, bytes, len);
    w->len += len;
}

static void put_u8(writer_t *w, uint8_t v) { put(w, &v, 1); }
static void put_u32(writer_t *w, uint32_t v) { put(w, &v, 4); }  // wasm32 is little-endian
static void put_u64(writer_t *w, uint64_t v) { put(w, &v, 8); }
static void put_bytes(writer_t *w, const uint8_t *p, size_t len) {
    put_u32(w, (uint32_t)len);
    put(w, p, len);
}
static void put_str(writer_t *w, const string_t *s) { put_bytes(w, s->ptr, s->len); }
static void put_opt(writer_t *w, const adapter_world_option_string_t *s) {
    put_u8(w, s->is_some);
    if (s->is_some) put_str(w, &s->val);
}

static void encode(writer_t *w, const conversation_t *c) {
    put(w, MAGIC, 8);
    put_str(w, &c->scope.tenant);
    put_str(w, &c->scope.user);
    put_str(w, &c->id);
    put_u8(w, c->has_header);
    if (c->has_header) {
        put_bytes(w, c->meta.content.ptr, c->meta.content.len);
        put_bytes(w, c->meta.tag.ptr, c->meta.tag.len);
        put_u64(w, (uint64_t)c->created_at);
        put_u64(w, (uint64_t)c->updated_at);
        put_u64(w, c->version);
    }
    put_u32(w, (uint32_t)c->message_count);
    for (size_t i = 0; i < c->message_count; i++) {
        const message_t *m = &c->messages[i];
        put_str(w, &m->id);
        put_u8(w, m->role);
        put_u64(w, (uint64_t)m->created_at);
        put_bytes(w, m->content.ptr, m->content.len);
        put_bytes(w, m->tag.ptr, m->tag.len);
    }
    put_u32(w, (uint32_t)c->display_count);
    for (size_t i = 0; i < c->display_count; i++) {
        const record_t *r = &c->display[i];
        put_opt(w, &r->message_id);
        put_str(w, &r->message_type);
        put_str(w, &r->content_type);
        put_opt(w, &r->tool_call_id);
        put_opt(w, &r->status);
        put_u64(w, (uint64_t)r->created_at);
        put_u64(w, (uint64_t)r->updated_at);
        put_bytes(w, r->body.ptr, r->body.len);
        put_bytes(w, r->tag.ptr, r->tag.len);
    }
}

// --- decoding: every read checks the length left; `ok` turns false for good -------

typedef struct {
    const uint8_t *p;
    size_t left;
    bool ok;
} reader_t;

static const uint8_t *take(reader_t *r, size_t n) {
    if (!r->ok || n > r->left) {
        r->ok = false;
        return NULL;
    }
    const uint8_t *at = r->p;
    r->p += n;
    r->left -= n;
    return at;
}

static uint64_t get_n(reader_t *r, size_t n) {
    uint64_t v = 0;
    const uint8_t *p = take(r, n);
    if (p != NULL) memcpy(&v, p, n);
    return v;
}

// Heap copies (never NULL with a non-zero length), as the generated free functions expect.
static uint8_t *get_bytes(reader_t *r, size_t *len) {
    *len = (size_t)get_n(r, 4);
    const uint8_t *p = take(r, *len);
    uint8_t *copy = p != NULL && *len > 0 ? malloc(*len) : NULL;
    if (copy == NULL) {
        if (*len > 0) r->ok = false;
        *len = 0;
        return NULL;
    }
    memcpy(copy, p, *len);
    return copy;
}

static string_t get_str(reader_t *r) {
    string_t s;
    s.ptr = get_bytes(r, &s.len);
    return s;
}

static stowage_store_types_opaque_t get_opaque(reader_t *r) {
    stowage_store_types_opaque_t b;
    b.ptr = get_bytes(r, &b.len);
    return b;
}

static adapter_world_option_string_t get_opt(reader_t *r) {
    adapter_world_option_string_t s = {0};
    s.is_some = get_n(r, 1) != 0;
    if (s.is_some) s.val = get_str(r);
    return s;
}

static bool decode(reader_t *r, conversation_t *c) {
    const uint8_t *magic = take(r, 8);
    if (magic == NULL || memcmp(magic, MAGIC, 8) != 0) return false;
    c->scope.tenant = get_str(r);
    c->scope.user = get_str(r);
    c->id = get_str(r);
    c->has_header = get_n(r, 1) != 0;
    if (c->has_header) {
        c->meta.content = get_opaque(r);
        c->meta.tag = get_opaque(r);
        c->created_at = (int64_t)get_n(r, 8);
        c->updated_at = (int64_t)get_n(r, 8);
        c->version = get_n(r, 8);
    }
    size_t n = (size_t)get_n(r, 4);
    if (!r->ok || n > r->left) return false;  // each message takes bytes: a bound on the count
    c->messages = n > 0 ? calloc(n, sizeof *c->messages) : NULL;
    if (n > 0 && c->messages == NULL) return false;
    for (; c->message_count < n && r->ok; c->message_count++) {
        message_t *m = &c->messages[c->message_count];
        m->id = get_str(r);
        m->role = (uint8_t)get_n(r, 1);
        m->created_at = (int64_t)get_n(r, 8);
        m->content = get_opaque(r);
        m->tag = get_opaque(r);
        if (m->role > STOWAGE_STORE_TYPES_ROLE_TOOL) r->ok = false;
    }
    n = (size_t)get_n(r, 4);
    if (!r->ok || n > r->left) return false;
    c->display = n > 0 ? calloc(n, sizeof *c->display) : NULL;
    if (n > 0 && c->display == NULL) return false;
    for (; c->display_count < n && r->ok; c->display_count++) {
        record_t *d = &c->display[c->display_count];
        d->message_id = get_opt(r);
        d->message_type = get_str(r);
        d->content_type = get_str(r);
        d->tool_call_id = get_opt(r);
        d->status = get_opt(r);
        d->created_at = (int64_t)get_n(r, 8);
        d->updated_at = (int64_t)get_n(r, 8);
        d->body = get_opaque(r);
        d->tag = get_opaque(r);
    }
    return r->ok && r->left == 0;
}

// --- files ------------------------------------------------------------------------

static bool same(const string_t *a, const string_t *b) {
    return a->len == b->len && (a->len == 0 || memcmp(a->ptr, b->ptr, a->len) == 0);
}

// The file of (scope, id): a 64-bit FNV-1a hash of the length-prefixed key.
// Replace it with a cryptographic hash (SHA-256) if ids may be chosen to collide.
static void path_of(const scope_t *scope, const string_t *id, char path[64]) {
    const string_t *parts[3] = {&scope->tenant, &scope->user, id};
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < 3; i++) {
        uint64_t len = parts[i]->len;
        for (size_t j = 0; j < 8; j++) h = (h ^ ((len >> (8 * j)) & 0xff)) * 1099511628211ull;
        for (size_t j = 0; j < parts[i]->len; j++) h = (h ^ parts[i]->ptr[j]) * 1099511628211ull;
    }
    snprintf(path, 64, DIR_PATH "/%016llx.conv", (unsigned long long)h);
}

static bool read_file(const char *path, conversation_t *c, bool *exists, store_error_t *err) {
    *c = (conversation_t){0};
    int fd = open(path, O_RDONLY);
    *exists = fd >= 0;
    if (fd < 0) return errno == ENOENT || fail(err, "opening %s: %s", path, strerror(errno));
    struct stat st;
    uint8_t *data = fstat(fd, &st) == 0 ? malloc((size_t)st.st_size + 1) : NULL;
    size_t got = 0;
    while (data != NULL && got < (size_t)st.st_size) {
        ssize_t n = read(fd, data + got, (size_t)st.st_size - got);
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    if (data == NULL || got != (size_t)st.st_size) {
        free(data);
        return fail(err, "reading %s: %s", path, strerror(errno));
    }
    reader_t r = {data, got, true};
    bool ok = decode(&r, c);
    free(data);
    if (!ok) {
        conversation_free(c);
        return fail(err, "%s is damaged", path);
    }
    return true;
}

bool load(const scope_t *scope, const string_t *id, conversation_t *c, store_error_t *err) {
    char path[64];
    path_of(scope, id, path);
    bool exists;
    if (!read_file(path, c, &exists, err)) return false;
    if (exists && !(same(&c->scope.tenant, &scope->tenant) && same(&c->scope.user, &scope->user) && same(&c->id, id))) {
        conversation_free(c);
        return fail(err, "%s belongs to another conversation (hash collision)", path);
    }
    if (!exists) {
        c->scope.tenant = copy_string(&scope->tenant);
        c->scope.user = copy_string(&scope->user);
        c->id = copy_string(id);
    }
    return true;
}

// Makes a directory's entries (a rename, a new file) durable. The WASI
// preview-1 adapter (the route for wasi-libc builds) cannot sync a directory and
// answers EBADF: then a rename is durable once the host's filesystem commits
// its journal (seconds later), not when `save` returns. See README.md.
static bool sync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    bool ok = fd >= 0 && (fsync(fd) == 0 || errno == EBADF);
    if (fd >= 0) close(fd);
    return ok;
}

bool save(const conversation_t *c, store_error_t *err) {
    char path[64], tmp[72];
    path_of(&c->scope, &c->id, path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (mkdir(DIR_PATH, 0755) == 0 && !sync_dir("/data")) return fail(err, "creating %s: %s", DIR_PATH, strerror(errno));
    writer_t w = {0};
    encode(&w, c);
    if (w.failed) {
        free(w.ptr);
        return fail(err, "out of memory");
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    size_t done = 0;
    while (fd >= 0 && done < w.len) {
        ssize_t n = write(fd, w.ptr + done, w.len - done);
        if (n <= 0) break;
        done += (size_t)n;
    }
    free(w.ptr);
    bool ok = fd >= 0 && done == w.len && fsync(fd) == 0;
    if (fd >= 0) close(fd);
    ok = ok && rename(tmp, path) == 0 && sync_dir(DIR_PATH);
    if (!ok) {
        int e = errno;
        unlink(tmp);
        return fail(err, "writing %s: %s", path, strerror(e));
    }
    return true;
}

bool delete_file(const scope_t *scope, const string_t *id, bool *deleted, store_error_t *err) {
    char path[64];
    path_of(scope, id, path);
    *deleted = unlink(path) == 0;
    if (!*deleted && errno != ENOENT) return fail(err, "deleting %s: %s", path, strerror(errno));
    if (*deleted && !sync_dir(DIR_PATH)) return fail(err, "deleting %s: %s", path, strerror(errno));
    return true;
}

bool for_each_conversation(bool (*each)(conversation_t *c, void *arg, store_error_t *err), void *arg,
                           store_error_t *err) {
    DIR *dir = opendir(DIR_PATH);
    if (dir == NULL) return errno == ENOENT || fail(err, "listing %s: %s", DIR_PATH, strerror(errno));
    bool ok = true;
    struct dirent *entry;
    while (ok && (entry = readdir(dir)) != NULL) {
        size_t len = strlen(entry->d_name);
        if (len < 5 || strcmp(entry->d_name + len - 5, ".conv") != 0) continue;
        char path[300];
        snprintf(path, sizeof path, DIR_PATH "/%s", entry->d_name);
        conversation_t c;
        bool exists;
        ok = read_file(path, &c, &exists, err) && (!exists || each(&c, arg, err));
    }
    closedir(dir);
    return ok;
}
