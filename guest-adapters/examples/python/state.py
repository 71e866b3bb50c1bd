"""One conversation's state, as kept in memory and in its file: the
conversation itself (absent when only display records exist), its messages
and its display records. Messages and records sit in lists at index seq - 1:
the host numbers both contiguously from 1.

Opaque bytes (content, tags) are stored base64-encoded and come back byte for
byte; the adapter never looks inside them.
"""

import base64
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from wit_world.exports.display_store import DisplayRecord, StoredDisplayRecord
from wit_world.imports import types


@dataclass
class Header:
    """What `conversation-info` says besides the counters (which derive from the messages)."""

    created_at: int
    updated_at: int
    version: int
    meta: types.ConversationMeta


@dataclass
class Conversation:
    tenant: str
    user: str
    id: str
    header: Optional[Header] = None  # None: display records only, no history
    messages: List[types.Message] = field(default_factory=list)
    display: List[DisplayRecord] = field(default_factory=list)
    seq_of_id: Dict[str, int] = field(default_factory=dict)  # message id -> seq, derived

    def info(self) -> types.ConversationInfo:
        assert self.header is not None
        h = self.header
        count = len(self.messages)
        return types.ConversationInfo(
            self.id, types.Scope(self.tenant, self.user), h.meta, h.created_at, h.updated_at, count, count, h.version
        )

    def reindex(self) -> None:
        self.seq_of_id = {m.id: seq for seq, m in enumerate(self.messages, start=1)}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _bytes(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


def encode(c: Conversation) -> dict:
    h = c.header
    return {
        "scope": [c.tenant, c.user],
        "id": c.id,
        "header": None
        if h is None
        else [h.created_at, h.updated_at, h.version, _b64(h.meta.content), _b64(h.meta.tag)],
        "messages": [[m.id, m.role.value, m.created_at, _b64(m.content), _b64(m.tag)] for m in c.messages],
        "display": [
            [r.message_id, r.message_type, r.content_type, r.tool_call_id, r.status, r.created_at, r.updated_at,
             _b64(r.body), _b64(r.tag)]
            for r in c.display
        ],
    }


def decode(doc: dict) -> Conversation:
    tenant, user = doc["scope"]
    c = Conversation(tenant, user, doc["id"])
    if doc["header"] is not None:
        created, updated, version, content, tag = doc["header"]
        c.header = Header(created, updated, version, types.ConversationMeta(_bytes(content), _bytes(tag)))
    c.messages = [
        types.Message(id, types.Role(role), created, _bytes(content), _bytes(tag))
        for id, role, created, content, tag in doc["messages"]
    ]
    c.display = [
        DisplayRecord(mid, mtype, ctype, call, status, _bytes(body), created, updated, _bytes(tag))
        for mid, mtype, ctype, call, status, created, updated, body, tag in doc["display"]
    ]
    c.reindex()
    return c


def stored_records(c: Conversation, first_seq: int, records: List[DisplayRecord]) -> List[StoredDisplayRecord]:
    return [StoredDisplayRecord(seq, r) for seq, r in enumerate(records, start=first_seq)]
