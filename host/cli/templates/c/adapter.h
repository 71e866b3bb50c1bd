// {{name}}: a Stowage storage adapter in C (contract stowage:store@0.2.0, world
// `adapter`), scaffolded by `stowage new-adapter`. Shared declarations.
//
// Ownership rules of `wit-bindgen c`: an exported function owns its arguments
// and frees them; what it puts in `ret`/`err` must be heap-allocated (the
// generated post-return function frees it after the host copied it).
#ifndef ADAPTER_H
#define ADAPTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter_world.h"

typedef adapter_world_string_t string_t;
typedef stowage_store_types_scope_t scope_t;
typedef stowage_store_types_error_t store_error_t;
typedef stowage_store_types_message_t message_t;
typedef stowage_store_types_conversation_meta_t meta_t;
typedef exports_stowage_store_display_store_display_record_t record_t;

// One conversation's state, as in its file. Message `seq` is messages[seq - 1],
// display record `seq` is display[seq - 1].
typedef struct {
    scope_t scope;
    string_t id;
    bool has_header;  // false until `open`: display records may exist without a history
    meta_t meta;
    int64_t created_at, updated_at;
    uint64_t version;
    message_t *messages;
    size_t message_count;
    record_t *display;
    size_t display_count;
} conversation_t;

// files.c: one file per conversation under /data, written durably.
// `load` fills `c` (empty, with copies of scope and id, if there is no file).
bool load(const scope_t *scope, const string_t *id, conversation_t *c, store_error_t *err);
bool save(const conversation_t *c, store_error_t *err);
bool delete_file(const scope_t *scope, const string_t *id, bool *deleted, store_error_t *err);
// Calls `each` with every conversation of the store (which `each` must free
// with conversation_free); stops at the first failure.
bool for_each_conversation(bool (*each)(conversation_t *c, void *arg, store_error_t *err), void *arg,
                           store_error_t *err);
void conversation_free(conversation_t *c);

// Fills `err` with `storage` (printf-style text) or `invalid-input`; returns false.
bool fail(store_error_t *err, const char *format, ...);
bool fail_invalid(store_error_t *err, const char *text);
bool fail_not_found(store_error_t *err);
string_t copy_string(const string_t *s);
stowage_store_types_opaque_t copy_bytes(const stowage_store_types_opaque_t *b);

#endif
