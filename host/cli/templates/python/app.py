"""{{name}}: a Stowage storage adapter in Python (contract stowage:store@0.2.0,
world `adapter`), scaffolded by `stowage new-adapter` for componentize-py. It
passes `stowage check` as it is; change it from there.

The in-memory-plus-/data pattern: each conversation (its header, messages and
display records) is one JSON file under /data, the store's directory. A call
reads the file into memory, works on it there, and if it changed anything
writes it back whole and durably: a temporary file, fsync, rename over the old
one, fsync of the directory. An acknowledged write survives a crash; a crash
mid-write leaves the previous file. The host numbers messages and display
records from 1, so both are lists at index seq - 1. Content and tags are opaque
bytes, stored base64-encoded and returned exactly.
"""

import base64
import functools
import hashlib
import json
import os

import wit_world
from componentize_py_types import Err
from wit_world.exports import conversation_store as cs
from wit_world.exports import display_store as ds
from wit_world.imports import types
from wit_world.imports.log import Level, log

DIR = "/data/conversations"


def guarded(method):
    """Turns any exception that is not a contract error into a `storage` error
    (anything else would trap the instance), and logs it through the host."""

    @functools.wraps(method)
    def call(*args):
        try:
            return method(*args)
        except Err:
            raise
        except Exception as e:
            log(Level.WARN, f"{method.__name__}: {type(e).__name__}: {e}")
            raise Err(types.Error_Storage(f"{method.__name__}: {type(e).__name__}: {e}"))

    return call


# --- files: one per conversation, named by the hash of its key -------------------


def path_of(tenant, user, conversation_id):
    key = json.dumps([tenant, user, conversation_id]).encode("utf-8")
    return f"{DIR}/{hashlib.sha256(key).hexdigest()}.json"


def b64(data):
    return base64.b64encode(data).decode("ascii")


def read(path):
    """The conversation stored in `path` (a dict), or None if there is none."""
    try:
        with open(path, "rb") as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def load(scope, conversation_id):
    doc = read(path_of(scope.tenant, scope.user, conversation_id))
    return doc or {"scope": [scope.tenant, scope.user], "id": conversation_id, "header": None, "messages": [], "display": []}


def save(doc):
    path = path_of(*doc["scope"], doc["id"])
    os.makedirs(DIR, exist_ok=True)
    with open(path + ".tmp", "wb") as f:
        f.write(json.dumps(doc).encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)
    sync_dir()


def sync_dir():
    """Makes the directory's entries (a rename, a removal) durable."""
    fd = os.open(DIR, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def all_docs():
    if not os.path.isdir(DIR):
        return []
    docs = (read(f"{DIR}/{name}") for name in os.listdir(DIR) if name.endswith(".json"))
    return [doc for doc in docs if doc is not None]


# --- the records of a document, converted to and from the contract's types --------


def opened(scope, conversation_id):
    doc = load(scope, conversation_id)
    if doc["header"] is None:
        raise Err(types.Error_NotFound())
    return doc


def info(doc):
    h = doc["header"]
    meta = types.ConversationMeta(base64.b64decode(h["meta"][0]), base64.b64decode(h["meta"][1]))
    count = len(doc["messages"])
    return types.ConversationInfo(doc["id"], types.Scope(*doc["scope"]), meta, h["created"], h["updated"], count, count, h["version"])


def message(m):
    return [m.id, m.role.value, m.created_at, b64(m.content), b64(m.tag)]


def stored_message(seq, m):
    return types.StoredMessage(seq, types.Message(m[0], types.Role(m[1]), m[2], base64.b64decode(m[3]), base64.b64decode(m[4])))


def record(r):
    return [r.message_id, r.message_type, r.content_type, r.tool_call_id, r.status, r.created_at, r.updated_at, b64(r.body), b64(r.tag)]


def stored_record(seq, r):
    mid, mtype, ctype, call, status, created, updated, body, tag = r
    record = ds.DisplayRecord(mid, mtype, ctype, call, status, base64.b64decode(body), created, updated, base64.b64decode(tag))
    return ds.StoredDisplayRecord(seq, record)


def check_contiguous(seqs):
    if any(b != a + 1 for a, b in zip(seqs, seqs[1:])):
        raise Err(types.Error_InvalidInput("seqs are not contiguous"))


def check_version(expected, actual):
    if expected is not None and expected != actual:
        raise Err(types.Error_Conflict(types.Conflict(expected, actual)))


class ConversationStore(wit_world.exports.ConversationStore):
    @guarded
    def open(self, scope, conversation_id, meta, now):
        doc = load(scope, conversation_id)
        if doc["header"] is None:
            doc["header"] = {"meta": [b64(meta.content), b64(meta.tag)], "created": now, "updated": now, "version": 0}
            save(doc)
        return info(doc)

    @guarded
    def info(self, scope, conversation_id):
        return info(opened(scope, conversation_id))

    @guarded
    def update_meta(self, scope, conversation_id, meta):
        doc = opened(scope, conversation_id)
        doc["header"]["meta"] = [b64(meta.content), b64(meta.tag)]
        save(doc)

    @guarded
    def append(self, scope, conversation_id, messages, expected_version, now):
        check_contiguous([m.seq for m in messages])
        doc = opened(scope, conversation_id)
        h, stored = doc["header"], doc["messages"]
        # The contract's order: not-found (above), already-stored, conflict, out-of-sequence.
        seq_of = {m[0]: seq for seq, m in enumerate(stored, start=1)}
        known = [cs.IndexedSeq(i, seq_of[m.message.id]) for i, m in enumerate(messages) if m.message.id in seq_of]
        if known:
            return cs.AppendOutcome_AlreadyStored(cs.AlreadyStored(known, h["version"]))
        check_version(expected_version, h["version"])
        if not messages:
            return cs.AppendOutcome_Stored(h["version"])
        if messages[0].seq != len(stored) + 1:
            return cs.AppendOutcome_OutOfSequence(len(stored))
        stored.extend(message(m.message) for m in messages)
        h["version"] += 1
        h["updated"] = now
        save(doc)
        return cs.AppendOutcome_Stored(h["version"])

    @guarded
    def replace(self, scope, conversation_id, messages, expected_version, now):
        check_contiguous([m.seq for m in messages])
        if messages and messages[0].seq != 1:
            raise Err(types.Error_InvalidInput("replace: messages must be numbered from seq 1"))
        doc = opened(scope, conversation_id)
        h = doc["header"]
        check_version(expected_version, h["version"])
        doc["messages"] = [message(m.message) for m in messages]
        h["version"] += 1
        h["updated"] = now
        save(doc)
        return h["version"]

    @guarded
    def load(self, scope, conversation_id, range, limit):
        stored = opened(scope, conversation_id)["messages"]
        last = len(stored)
        if isinstance(range, cs.MessageRange_After):
            first = min(range.value, last) + 1
            end = min(first - 1 + limit, last)
        else:
            end = last if isinstance(range, cs.MessageRange_Latest) else min(range.value - 1, last)
            first = max(end - limit + 1, 1)
        return [stored_message(seq, stored[seq - 1]) for seq in seqs(first, end)]

    @guarded
    def truncate_after(self, scope, conversation_id, seq, expected_version, now):
        doc = opened(scope, conversation_id)
        h, last = doc["header"], len(doc["messages"])
        if seq >= last:
            return cs.TruncateOutcome(0, h["version"])
        check_version(expected_version, h["version"])
        del doc["messages"][seq:]
        h["version"] += 1
        h["updated"] = now
        save(doc)
        return cs.TruncateOutcome(last - seq, h["version"])

    @guarded
    def delete(self, scope, conversation_id):
        try:
            os.remove(path_of(scope.tenant, scope.user, conversation_id))
        except FileNotFoundError:
            return False
        sync_dir()
        return True

    @guarded
    def list(self, scope, after, limit):
        # Python orders str by code point: the byte-wise UTF-8 order the contract asks for.
        docs = [d for d in all_docs() if d["scope"] == [scope.tenant, scope.user] and d["header"] is not None]
        docs = sorted((d for d in docs if after is None or d["id"] > after), key=lambda d: d["id"])
        return [info(d) for d in docs[:limit]]


def seqs(first, last):
    return range(first, last + 1)


class DisplayStore(wit_world.exports.DisplayStore):
    @guarded
    def insert(self, scope, conversation_id, records):
        check_contiguous([r.seq for r in records])
        if not records:
            return ds.InsertOutcome_Stored()
        doc = load(scope, conversation_id)
        if records[0].seq != len(doc["display"]) + 1:
            return ds.InsertOutcome_OutOfSequence(len(doc["display"]))
        doc["display"].extend(record(r.record) for r in records)
        save(doc)
        return ds.InsertOutcome_Stored()

    @guarded
    def by_tool_call_id(self, scope, conversation_id, tool_call_id):
        display = load(scope, conversation_id)["display"]
        return [stored_record(seq, r) for seq, r in enumerate(display, start=1) if r[3] == tool_call_id]

    @guarded
    def update(self, scope, conversation_id, stored):
        doc = load(scope, conversation_id)
        if not 1 <= stored.seq <= len(doc["display"]):
            raise Err(types.Error_NotFound())
        doc["display"][stored.seq - 1] = record(stored.record)
        save(doc)

    @guarded
    def list(self, scope, conversation_id, after, limit):
        display = load(scope, conversation_id)["display"]
        return [stored_record(seq, display[seq - 1]) for seq in seqs(after + 1, min(after + limit, len(display)))]

    @guarded
    def find_by_status(self, statuses, after, limit):
        # Scans the whole store: simple, and linear in its size (the host calls this at start-up).
        position = None if after is None else (after.scope.tenant, after.scope.user, after.conversation_id, after.seq)
        found = []
        for doc in all_docs():
            for seq, r in enumerate(doc["display"], start=1):
                key = (*doc["scope"], doc["id"], seq)
                if r[4] in statuses and (position is None or key > position):
                    found.append((key, ds.LocatedDisplayRecord(types.Scope(*doc["scope"]), doc["id"], stored_record(seq, r))))
        found.sort(key=lambda pair: pair[0])
        return [located for _, located in found[:limit]]
