"""The Python example adapter (world `adapter`, stowage:store@0.2.0), built with
componentize-py. It keeps each conversation in one file under /data (see
files.py for the layout and what is durable when) and follows the contract's
rules here: the check order of `append`, versions, seqs, paging.

Every export runs through `guarded`: an exception that is not a contract error
(a bug, a damaged file) becomes a `storage` error that says what happened, and
is logged through the host's `log` import (stdout and stderr go nowhere).
"""

import functools
from typing import Callable, List, Optional

import wit_world
from componentize_py_types import Err
from wit_world.exports import conversation_store as cs
from wit_world.exports import display_store as ds
from wit_world.imports import types
from wit_world.imports.log import Level, log

import files
from state import Conversation, Header, decode, encode, stored_records

FILES = files.Files(decode, encode)


def guarded(method: Callable) -> Callable:
    @functools.wraps(method)
    def call(*args):
        try:
            return method(*args)
        except Err:
            raise
        except Exception as e:  # anything else would trap the instance
            reason = f"{method.__name__}: {type(e).__name__}: {e}"
            log(Level.WARN, f"python example adapter: {reason}")
            raise Err(types.Error_Storage(reason))

    return call


def not_found() -> Err:
    return Err(types.Error_NotFound())


def invalid(reason: str) -> Err:
    return Err(types.Error_InvalidInput(reason))


def path_of(scope: types.Scope, conversation_id: str) -> str:
    return files.conversation_path(scope.tenant, scope.user, conversation_id)


def load(scope: types.Scope, conversation_id: str) -> Conversation:
    """The conversation's state; an empty one (no header, nothing stored) if it has no file."""
    state = FILES.load(path_of(scope, conversation_id))
    return state if state is not None else Conversation(scope.tenant, scope.user, conversation_id)


def save(c: Conversation) -> None:
    FILES.save(files.conversation_path(c.tenant, c.user, c.id), c)


def existing(scope: types.Scope, conversation_id: str) -> Conversation:
    """The conversation's state, or `not-found` if it was never opened."""
    c = load(scope, conversation_id)
    if c.header is None:
        raise not_found()
    return c


def check_contiguous(what: str, seqs: List[int]) -> None:
    for i in range(1, len(seqs)):
        if seqs[i] != seqs[i - 1] + 1:
            raise invalid(f"{what}: seqs are not contiguous: item {i} has seq {seqs[i]} after {seqs[i - 1]}")


def check_version(expected: Optional[int], actual: int) -> None:
    if expected is not None and expected != actual:
        raise Err(types.Error_Conflict(types.Conflict(expected, actual)))


def mutate(c: Conversation, change: Callable[[], None]) -> None:
    """Applies `change` to the cached state and saves it; if saving fails, the
    cache is dropped (files.Files.save does that), so memory never runs ahead
    of the file."""
    change()
    c.reindex()
    save(c)


class ConversationStore(wit_world.exports.ConversationStore):
    @guarded
    def open(self, scope, conversation_id, meta, now):
        c = load(scope, conversation_id)
        if c.header is None:
            mutate(c, lambda: setattr(c, "header", Header(now, now, 0, meta)))
        return c.info()

    @guarded
    def info(self, scope, conversation_id):
        return existing(scope, conversation_id).info()

    @guarded
    def update_meta(self, scope, conversation_id, meta):
        c = existing(scope, conversation_id)
        mutate(c, lambda: setattr(c.header, "meta", meta))

    @guarded
    def append(self, scope, conversation_id, messages, expected_version, now):
        check_contiguous("append", [m.seq for m in messages])
        c = existing(scope, conversation_id)
        h = c.header
        stored = [cs.IndexedSeq(i, c.seq_of_id[m.message.id]) for i, m in enumerate(messages) if m.message.id in c.seq_of_id]
        if stored:
            return cs.AppendOutcome_AlreadyStored(cs.AlreadyStored(stored, h.version))
        check_version(expected_version, h.version)
        if not messages:
            return cs.AppendOutcome_Stored(h.version)
        if messages[0].seq != len(c.messages) + 1:
            return cs.AppendOutcome_OutOfSequence(len(c.messages))

        def change():
            c.messages.extend(m.message for m in messages)
            h.version += 1
            h.updated_at = now

        mutate(c, change)
        return cs.AppendOutcome_Stored(h.version)

    @guarded
    def replace(self, scope, conversation_id, messages, expected_version, now):
        check_contiguous("replace", [m.seq for m in messages])
        if messages and messages[0].seq != 1:
            raise invalid("replace: messages must be numbered from seq 1")
        c = existing(scope, conversation_id)
        h = c.header
        check_version(expected_version, h.version)

        def change():
            c.messages = [m.message for m in messages]
            h.version += 1
            h.updated_at = now

        mutate(c, change)
        return h.version

    @guarded
    def load(self, scope, conversation_id, range, limit):
        c = existing(scope, conversation_id)
        last = len(c.messages)
        if isinstance(range, cs.MessageRange_After):
            first = min(range.value, last) + 1
            end = min(first - 1 + limit, last)
        else:  # latest, or the newest before a seq
            end = last if isinstance(range, cs.MessageRange_Latest) else min(range.value - 1, last)
            first = max(end - limit + 1, 1)
        return [types.StoredMessage(seq, c.messages[seq - 1]) for seq in range_of(first, end)]

    @guarded
    def truncate_after(self, scope, conversation_id, seq, expected_version, now):
        c = existing(scope, conversation_id)
        h = c.header
        last = len(c.messages)
        if seq >= last:  # nothing to remove: no version bump
            return cs.TruncateOutcome(0, h.version)
        check_version(expected_version, h.version)

        def change():
            del c.messages[seq:]
            h.version += 1
            h.updated_at = now

        mutate(c, change)
        return cs.TruncateOutcome(last - seq, h.version)

    @guarded
    def delete(self, scope, conversation_id):
        return FILES.delete(path_of(scope, conversation_id))

    @guarded
    def list(self, scope, after, limit):
        found = []
        for path in FILES.paths(files.scope_dir(scope.tenant, scope.user)):
            c = FILES.load(path)
            # Python orders str by code point, which is UTF-8 byte order.
            if c is not None and c.header is not None and (after is None or c.id > after):
                found.append(c)
        found.sort(key=lambda c: c.id)
        return [c.info() for c in found[:limit]]


def range_of(first: int, last: int) -> range:
    return range(first, last + 1) if first <= last else range(0)


class DisplayStore(wit_world.exports.DisplayStore):
    @guarded
    def insert(self, scope, conversation_id, records):
        check_contiguous("display insert", [r.seq for r in records])
        if not records:
            return ds.InsertOutcome_Stored()
        c = load(scope, conversation_id)
        if records[0].seq != len(c.display) + 1:
            return ds.InsertOutcome_OutOfSequence(len(c.display))
        mutate(c, lambda: c.display.extend(r.record for r in records))
        return ds.InsertOutcome_Stored()

    @guarded
    def by_tool_call_id(self, scope, conversation_id, tool_call_id):
        c = load(scope, conversation_id)
        return [r for r in stored_records(c, 1, c.display) if r.record.tool_call_id == tool_call_id]

    @guarded
    def update(self, scope, conversation_id, record):
        c = load(scope, conversation_id)
        if not 1 <= record.seq <= len(c.display):
            raise not_found()
        mutate(c, lambda: c.display.__setitem__(record.seq - 1, record.record))

    @guarded
    def list(self, scope, conversation_id, after, limit):
        c = load(scope, conversation_id)
        start = min(after, len(c.display))
        return stored_records(c, start + 1, c.display[start : start + limit])

    @guarded
    def find_by_status(self, statuses, after, limit):
        # Scans every conversation of the store: fine for an example, linear in its size.
        wanted = set(statuses)
        position = None if after is None else (after.scope.tenant, after.scope.user, after.conversation_id, after.seq)
        found = []
        for directory in FILES.scope_dirs():
            for path in FILES.paths(directory):
                c = FILES.load(path)
                if c is None:
                    continue
                for r in stored_records(c, 1, c.display):
                    key = (c.tenant, c.user, c.id, r.seq)
                    if r.record.status in wanted and (position is None or key > position):
                        found.append((key, ds.LocatedDisplayRecord(types.Scope(c.tenant, c.user), c.id, r)))
        found.sort(key=lambda pair: pair[0])
        return [located for _, located in found[:limit]]
