// Growing strings and the adapter's error values.
//
// Deliberately without <stdio.h>: any stdio use (even snprintf) links
// wasi-libc's FILE machinery, whose writes make the component import
// `wasi:filesystem`, a capability this adapter neither needs nor asks for.
#include <stdlib.h>
#include <string.h>

#include "store.h"

void buf_add_n(buf_t *b, const uint8_t *bytes, size_t len) {
    if (b->failed || len == 0) return;
    if (b->len + len > b->cap) {
        size_t cap = (b->len + len) * 2;
        char *grown = realloc(b->ptr, cap);
        if (grown == NULL) {
            b->failed = true;
            return;
        }
        b->ptr = grown;
        b->cap = cap;
    }
    memcpy(b->ptr + b->len, bytes, len);
    b->len += len;
}

void buf_add(buf_t *b, const char *text) { buf_add_n(b, (const uint8_t *)text, strlen(text)); }

void buf_add_u64(buf_t *b, uint64_t n) {
    char digits[20];
    size_t i = sizeof digits;
    do {
        digits[--i] = (char)('0' + n % 10);
        n /= 10;
    } while (n > 0);
    buf_add_n(b, (const uint8_t *)digits + i, sizeof digits - i);
}

void buf_free(buf_t *b) {
    free(b->ptr);
    *b = (buf_t){0};
}

bool fail_with(store_error_t *err, uint8_t tag, buf_t *b) {
    err->tag = tag;
    string_t text = {NULL, 0};
    if (!b->failed && b->len > 0) {
        text = (string_t){(uint8_t *)b->ptr, b->len};  // the post-return frees it
        *b = (buf_t){0};
    } else {
        buf_free(b);  // out of memory: an empty message
    }
    if (tag == STOWAGE_STORE_TYPES_ERROR_INVALID_INPUT) {
        err->val.invalid_input = text;
    } else if (tag == STOWAGE_STORE_TYPES_ERROR_UNSUPPORTED) {
        err->val.unsupported = text;
    } else {
        err->tag = STOWAGE_STORE_TYPES_ERROR_STORAGE;
        err->val.storage = text;
    }
    return false;
}

static bool fail_text(store_error_t *err, uint8_t tag, const char *what, const char *detail) {
    buf_t b = {0};
    buf_add(&b, what);
    if (detail != NULL) {
        buf_add(&b, ": ");
        buf_add(&b, detail);
    }
    return fail_with(err, tag, &b);
}

bool fail_not_found(store_error_t *err) {
    err->tag = STOWAGE_STORE_TYPES_ERROR_NOT_FOUND;
    return false;
}

bool fail_storage(store_error_t *err, const char *what, const char *detail) {
    return fail_text(err, STOWAGE_STORE_TYPES_ERROR_STORAGE, what, detail);
}

bool fail_invalid(store_error_t *err, const char *what, const char *detail) {
    return fail_text(err, STOWAGE_STORE_TYPES_ERROR_INVALID_INPUT, what, detail);
}

bool fail_unsupported(store_error_t *err, const char *what) {
    return fail_text(err, STOWAGE_STORE_TYPES_ERROR_UNSUPPORTED, what, NULL);
}

bool fail_conflict(store_error_t *err, uint64_t expected, uint64_t actual) {
    err->tag = STOWAGE_STORE_TYPES_ERROR_CONFLICT;
    err->val.conflict.expected_version = expected;
    err->val.conflict.actual_version = actual;
    return false;
}

bool check_contiguous(const void *items, size_t count, uint64_t (*seq_at)(const void *, size_t), const char *what,
                      store_error_t *err) {
    for (size_t i = 0; i < count; i++) {
        uint64_t seq = seq_at(items, i);
        bool follows = i == 0 || seq == seq_at(items, i - 1) + 1;
        if (!follows || seq > INT64_MAX) {
            buf_t b = {0};
            buf_add(&b, what);
            buf_add(&b, ": seqs must be contiguous and below 2^63, item ");
            buf_add_u64(&b, i);
            buf_add(&b, " has seq ");
            buf_add_u64(&b, seq);
            return fail_with(err, STOWAGE_STORE_TYPES_ERROR_INVALID_INPUT, &b);
        }
    }
    return true;
}
