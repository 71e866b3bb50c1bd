"""Typed models of the API's JSON (``components.schemas`` of ``/v1/openapi.json``).

Every model is a dataclass with ``from_dict`` (tolerant: unknown members are
ignored, so a newer server does not break an older client) and ``to_dict``
(members that are None are left out, as the server does). JSON-valued fields
(``metadata``, ``extra``, display ``content``, provider ``value``) hold the
parsed JSON value (dicts, lists, strings, numbers…).

Timestamps (``created_at``, ``updated_at``) are milliseconds since the Unix epoch
(UTC), informational: order by ``seq``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Generic, Iterator, List, Literal, Mapping, Optional, TypeVar, Union

__all__ = [
    "Role",
    "ToolStatus",
    "Format",
    "Mode",
    "OrphanPolicy",
    "FORMATS",
    "Scope",
    "ConversationMeta",
    "ConversationInfo",
    "ConversationPage",
    "TextPart",
    "ThinkingPart",
    "ToolCallPart",
    "ToolResultPart",
    "MediaPart",
    "ProviderPart",
    "UnknownPart",
    "Part",
    "Usage",
    "NewMessage",
    "Message",
    "AppendOutcome",
    "OrphanedCall",
    "RepairReport",
    "Dropped",
    "Page",
    "MessageList",
    "TruncateOutcome",
    "DisplayRecord",
    "DisplayPage",
    "ToolUpdate",
    "AdapterHealth",
    "Health",
    "part_from_dict",
    "message_to_dict",
]

#: Message roles.
Role = Literal["system", "developer", "user", "assistant", "tool"]
#: Tool-card statuses of display records.
ToolStatus = Literal["pending", "executing", "completed", "failed", "interrupted", "cancelled"]
#: Transcript formats of ``?format=`` (docs/formats.md).
Format = Literal["stowage", "openai", "anthropic", "openai-responses", "ai-sdk-ui"]
#: ``?mode=``: ``keep`` (lossless, ``x_stowage`` where a format has no slot) or
#: ``pure`` (only what the provider accepts; refused for ``stowage``).
Mode = Literal["keep", "pure"]
#: ``?orphans=`` of a load: tool calls without a result are kept, stripped, or
#: answered with a synthesized "interrupted" result (a view; storage is unchanged).
OrphanPolicy = Literal["keep", "strip", "synthesize"]

#: Every format the server knows.
FORMATS = ("stowage", "openai", "anthropic", "openai-responses", "ai-sdk-ui")

JSON = Any
T = TypeVar("T")


def _drop_none(d: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


# ---------------------------------------------------------------- conversations


@dataclass
class Scope:
    """Tenant (from the token) and user (from the ``Stowage-User`` header)."""

    tenant: str
    user: str = ""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Scope":
        """Parses the JSON object."""
        return cls(tenant=d.get("tenant", ""), user=d.get("user", ""))

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object."""
        return {"tenant": self.tenant, "user": self.user}


@dataclass
class ConversationMeta:
    """What the caller says about a conversation when creating it."""

    agent_id: Optional[str] = None
    title: Optional[str] = None
    #: Any JSON value, stored and returned as given.
    metadata: JSON = None
    #: A JSON object keyed by format name, stored and returned as given.
    extra: Optional[Dict[str, Any]] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ConversationMeta":
        """Parses the JSON object."""
        return cls(agent_id=d.get("agent_id"), title=d.get("title"), metadata=d.get("metadata"), extra=d.get("extra"))

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object (None members left out)."""
        return _drop_none(
            {"agent_id": self.agent_id, "title": self.title, "metadata": self.metadata, "extra": self.extra}
        )


@dataclass
class ConversationInfo:
    """A conversation without its messages."""

    id: str
    scope: Scope
    created_at: int
    updated_at: int
    message_count: int
    #: Seq of the newest message; 0 when empty.
    last_seq: int
    #: Bumped by every change to the history: the ``expected_version`` token.
    version: int
    agent_id: Optional[str] = None
    title: Optional[str] = None
    metadata: JSON = None
    extra: Optional[Dict[str, Any]] = None

    @property
    def meta(self) -> ConversationMeta:
        """The conversation's meta (agent id, title, metadata, extra)."""
        return ConversationMeta(agent_id=self.agent_id, title=self.title, metadata=self.metadata, extra=self.extra)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ConversationInfo":
        """Parses the JSON object."""
        return cls(
            id=d["id"],
            scope=Scope.from_dict(d.get("scope") or {}),
            created_at=d.get("created_at", 0),
            updated_at=d.get("updated_at", 0),
            message_count=d.get("message_count", 0),
            last_seq=d.get("last_seq", 0),
            version=d.get("version", 0),
            agent_id=d.get("agent_id"),
            title=d.get("title"),
            metadata=d.get("metadata"),
            extra=d.get("extra"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object (None members left out)."""
        return _drop_none(
            {
                "id": self.id,
                "scope": self.scope.to_dict(),
                "agent_id": self.agent_id,
                "title": self.title,
                "metadata": self.metadata,
                "extra": self.extra,
                "created_at": self.created_at,
                "updated_at": self.updated_at,
                "message_count": self.message_count,
                "last_seq": self.last_seq,
                "version": self.version,
            }
        )


@dataclass
class ConversationPage:
    """One page of a conversation listing (ordered by id)."""

    conversations: List[ConversationInfo]
    #: Pass as ``cursor`` for the next page; None on the last page.
    next_cursor: Optional[str] = None

    def __iter__(self) -> Iterator[ConversationInfo]:
        return iter(self.conversations)

    def __len__(self) -> int:
        return len(self.conversations)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ConversationPage":
        """Parses the JSON object."""
        return cls(
            conversations=[ConversationInfo.from_dict(c) for c in d.get("conversations") or []],
            next_cursor=d.get("next_cursor"),
        )


# ---------------------------------------------------------------- messages


@dataclass
class TextPart:
    """Text the author wrote or the model produced."""

    text: str
    extra: Optional[Dict[str, Any]] = None
    type: Literal["text"] = field(default="text", init=False)

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object."""
        return _drop_none({"type": "text", "text": self.text, "extra": self.extra})


@dataclass
class ThinkingPart:
    """Model reasoning (``signature``: an Anthropic thinking signature)."""

    text: str
    signature: Optional[str] = None
    redacted: bool = False
    extra: Optional[Dict[str, Any]] = None
    type: Literal["thinking"] = field(default="thinking", init=False)

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object."""
        d: Dict[str, Any] = {"type": "thinking", "text": self.text}
        if self.signature is not None:
            d["signature"] = self.signature
        if self.redacted:
            d["redacted"] = True
        if self.extra is not None:
            d["extra"] = self.extra
        return d


@dataclass
class ToolCallPart:
    """A tool call the client executes; ``arguments`` is the exact text the model produced."""

    id: str
    name: str
    arguments: str
    extra: Optional[Dict[str, Any]] = None
    type: Literal["tool_call"] = field(default="tool_call", init=False)

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object."""
        return _drop_none(
            {"type": "tool_call", "id": self.id, "name": self.name, "arguments": self.arguments, "extra": self.extra}
        )


@dataclass
class ToolResultPart:
    """The client's result of a tool call."""

    call_id: str
    content: str
    is_error: bool = False
    extra: Optional[Dict[str, Any]] = None
    type: Literal["tool_result"] = field(default="tool_result", init=False)

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object."""
        d: Dict[str, Any] = {"type": "tool_result", "call_id": self.call_id, "content": self.content}
        if self.is_error:
            d["is_error"] = True
        if self.extra is not None:
            d["extra"] = self.extra
        return d


@dataclass
class MediaPart:
    """An image, audio clip or document, by URL or by inline bytes (exactly one)."""

    mime_type: str
    url: Optional[str] = None
    data: Optional[bytes] = None
    name: Optional[str] = None
    extra: Optional[Dict[str, Any]] = None
    type: Literal["media"] = field(default="media", init=False)

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object (inline bytes as a list of integers, as the API wants)."""
        if (self.url is None) == (self.data is None):
            raise ValueError("MediaPart needs exactly one of url and data")
        source: Dict[str, Any] = {"url": self.url} if self.url is not None else {"inline": list(self.data or b"")}
        return _drop_none(
            {"type": "media", "mime_type": self.mime_type, "source": source, "name": self.name, "extra": self.extra}
        )


@dataclass
class ProviderPart:
    """A block Stowage does not model, kept verbatim (``value`` is any JSON)."""

    format: str
    value: JSON
    extra: Optional[Dict[str, Any]] = None
    type: Literal["provider"] = field(default="provider", init=False)

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object."""
        d: Dict[str, Any] = {"type": "provider", "format": self.format, "value": self.value}
        if self.extra is not None:
            d["extra"] = self.extra
        return d


@dataclass
class UnknownPart:
    """A part type this client version does not know; kept as received."""

    data: Dict[str, Any]

    @property
    def type(self) -> str:
        """The part's ``type``."""
        return str(self.data.get("type", ""))

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object as received."""
        return dict(self.data)


Part = Union[TextPart, ThinkingPart, ToolCallPart, ToolResultPart, MediaPart, ProviderPart, UnknownPart]


def part_from_dict(d: Mapping[str, Any]) -> Part:
    """Parses one part (``{"type": ...}``); unknown types become :class:`UnknownPart`."""
    kind = d.get("type")
    if kind == "text":
        return TextPart(text=d.get("text", ""), extra=d.get("extra"))
    if kind == "thinking":
        return ThinkingPart(
            text=d.get("text", ""), signature=d.get("signature"), redacted=bool(d.get("redacted", False)),
            extra=d.get("extra"),
        )
    if kind == "tool_call":
        return ToolCallPart(id=d["id"], name=d["name"], arguments=d.get("arguments", ""), extra=d.get("extra"))
    if kind == "tool_result":
        return ToolResultPart(
            call_id=d["call_id"], content=d.get("content", ""), is_error=bool(d.get("is_error", False)),
            extra=d.get("extra"),
        )
    if kind == "media":
        source = d.get("source") or {}
        inline = source.get("inline")
        return MediaPart(
            mime_type=d.get("mime_type", ""),
            url=source.get("url"),
            data=bytes(inline) if inline is not None else None,
            name=d.get("name"),
            extra=d.get("extra"),
        )
    if kind == "provider":
        return ProviderPart(format=d.get("format", ""), value=d.get("value"), extra=d.get("extra"))
    return UnknownPart(dict(d))


def _part_to_dict(part: Union[Part, Mapping[str, Any]]) -> Dict[str, Any]:
    if isinstance(part, Mapping):
        return dict(part)
    return part.to_dict()


@dataclass
class Usage:
    """Token counts and cost of a model response."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost: Optional[float] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Usage":
        """Parses the JSON object."""
        return cls(
            input_tokens=d.get("input_tokens", 0),
            output_tokens=d.get("output_tokens", 0),
            cached_tokens=d.get("cached_tokens", 0),
            cost=d.get("cost"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object."""
        return _drop_none(
            {
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "cached_tokens": self.cached_tokens,
                "cost": self.cost,
            }
        )


def _parts_text(parts: List[Part]) -> str:
    return "".join(p.text for p in parts if isinstance(p, TextPart))


@dataclass
class NewMessage:
    """A message to append (Stowage format).

    ``id`` is the message's idempotency key: appending an id already stored in
    the conversation stores nothing and answers with its original seq. Without
    one, the server generates one (or derives it from ``Idempotency-Key``).
    """

    role: Role
    parts: List[Part] = field(default_factory=list)
    id: Optional[str] = None
    usage: Optional[Usage] = None
    stop_reason: Optional[str] = None
    created_at: Optional[int] = None
    metadata: JSON = None
    extra: Optional[Dict[str, Any]] = None

    @classmethod
    def text(cls, role: Role, text: str, **kwargs: Any) -> "NewMessage":
        """A message of one text part."""
        return cls(role=role, parts=[TextPart(text)], **kwargs)

    @classmethod
    def user(cls, text: str, **kwargs: Any) -> "NewMessage":
        """A user message of one text part."""
        return cls.text("user", text, **kwargs)

    @classmethod
    def assistant(cls, text: str, **kwargs: Any) -> "NewMessage":
        """An assistant message of one text part."""
        return cls.text("assistant", text, **kwargs)

    @classmethod
    def system(cls, text: str, **kwargs: Any) -> "NewMessage":
        """A system message of one text part."""
        return cls.text("system", text, **kwargs)

    @classmethod
    def tool_result(cls, call_id: str, content: str, *, is_error: bool = False, **kwargs: Any) -> "NewMessage":
        """A tool message answering the call ``call_id``."""
        return cls(role="tool", parts=[ToolResultPart(call_id, content, is_error=is_error)], **kwargs)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "NewMessage":
        """Parses the JSON object."""
        return cls(
            role=d["role"],
            parts=[part_from_dict(p) for p in d.get("parts") or []],
            id=d.get("id"),
            usage=Usage.from_dict(d["usage"]) if d.get("usage") is not None else None,
            stop_reason=d.get("stop_reason"),
            created_at=d.get("created_at"),
            metadata=d.get("metadata"),
            extra=d.get("extra"),
        )

    @property
    def content(self) -> str:
        """The concatenated text of the text parts."""
        return _parts_text(self.parts)

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object."""
        return _drop_none(
            {
                "id": self.id,
                "role": self.role,
                "parts": [_part_to_dict(p) for p in self.parts],
                "usage": self.usage.to_dict() if self.usage is not None else None,
                "stop_reason": self.stop_reason,
                "created_at": self.created_at,
                "metadata": self.metadata,
                "extra": self.extra,
            }
        )


@dataclass
class Message:
    """A stored message (Stowage format)."""

    id: str
    #: Per conversation, contiguous from 1; the only ordering key.
    seq: int
    role: Role
    parts: List[Part]
    created_at: int
    usage: Optional[Usage] = None
    stop_reason: Optional[str] = None
    metadata: JSON = None
    extra: Optional[Dict[str, Any]] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Message":
        """Parses the JSON object."""
        return cls(
            id=d["id"],
            seq=d["seq"],
            role=d["role"],
            parts=[part_from_dict(p) for p in d.get("parts") or []],
            created_at=d.get("created_at", 0),
            usage=Usage.from_dict(d["usage"]) if d.get("usage") is not None else None,
            stop_reason=d.get("stop_reason"),
            metadata=d.get("metadata"),
            extra=d.get("extra"),
        )

    @property
    def content(self) -> str:
        """The concatenated text of the text parts."""
        return _parts_text(self.parts)

    def to_new(self) -> NewMessage:
        """This message as a :class:`NewMessage` (same id), e.g. for a replace."""
        return NewMessage(
            role=self.role,
            parts=list(self.parts),
            id=self.id,
            usage=self.usage,
            stop_reason=self.stop_reason,
            created_at=self.created_at,
            metadata=self.metadata,
            extra=self.extra,
        )

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object."""
        return _drop_none(
            {
                "id": self.id,
                "seq": self.seq,
                "role": self.role,
                "parts": [_part_to_dict(p) for p in self.parts],
                "usage": self.usage.to_dict() if self.usage is not None else None,
                "stop_reason": self.stop_reason,
                "created_at": self.created_at,
                "metadata": self.metadata,
                "extra": self.extra,
            }
        )


def message_to_dict(message: Union[NewMessage, Message, Mapping[str, Any]]) -> Dict[str, Any]:
    """A message for a request body: models are converted, mappings sent as they are."""
    if isinstance(message, (NewMessage, Message)):
        return message.to_dict()
    if isinstance(message, Mapping):
        return dict(message)
    raise TypeError(f"a message must be a NewMessage, a Message or a dict, not {type(message).__name__}")


@dataclass
class AppendOutcome:
    """The answer of an append."""

    #: Per input message, in order.
    ids: List[str]
    #: Per input message, in order; the original seq for an id already stored.
    seqs: List[int]
    #: How many messages were newly stored (0 for a complete retry).
    stored: int
    version: int

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "AppendOutcome":
        """Parses the JSON object."""
        return cls(ids=list(d.get("ids") or []), seqs=list(d.get("seqs") or []), stored=d["stored"], version=d["version"])


@dataclass
class OrphanedCall:
    """A tool call without a result, as a load's repair report names it."""

    seq: int
    call_id: str
    name: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "OrphanedCall":
        """Parses the JSON object."""
        return cls(seq=d["seq"], call_id=d["call_id"], name=d.get("name", ""))


@dataclass
class RepairReport:
    """What a load's ``orphans=`` policy found and did."""

    policy: str
    orphaned_calls: List[OrphanedCall]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RepairReport":
        """Parses the JSON object."""
        return cls(policy=d["policy"], orphaned_calls=[OrphanedCall.from_dict(c) for c in d.get("orphaned_calls") or []])


@dataclass
class Dropped:
    """What ``mode=pure`` left out, by kind."""

    what: str
    count: int

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Dropped":
        """Parses the JSON object."""
        return cls(what=d["what"], count=d["count"])


@dataclass
class Page(Generic[T]):
    """One page of messages, ascending by seq.

    ``messages`` holds :class:`Message` objects for the ``stowage`` format and
    plain dicts (the provider's JSON) for the other formats.
    """

    messages: List[T]
    #: Continues in the request's direction (older for latest/before, newer for after).
    next_cursor: Optional[str] = None
    repairs: Optional[RepairReport] = None
    #: Seqs returned without an integrity tag.
    unverified: List[int] = field(default_factory=list)
    dropped: List[Dropped] = field(default_factory=list)

    def __iter__(self) -> Iterator[T]:
        return iter(self.messages)

    def __len__(self) -> int:
        return len(self.messages)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, typed: bool) -> "Page[Any]":
        """Parses the JSON object (``typed``: messages are Stowage messages)."""
        raw = d.get("messages") or []
        return cls(
            messages=[Message.from_dict(m) for m in raw] if typed else list(raw),
            next_cursor=d.get("next_cursor"),
            repairs=RepairReport.from_dict(d["repairs"]) if d.get("repairs") is not None else None,
            unverified=list(d.get("unverified") or []),
            dropped=[Dropped.from_dict(x) for x in d.get("dropped") or []],
        )


@dataclass
class MessageList(Generic[T]):
    """Messages of a load-all or a pop (Stowage :class:`Message` objects, or dicts in a provider format)."""

    messages: List[T]
    dropped: List[Dropped] = field(default_factory=list)

    def __iter__(self) -> Iterator[T]:
        return iter(self.messages)

    def __len__(self) -> int:
        return len(self.messages)

    def __getitem__(self, index: int) -> T:
        return self.messages[index]

    def __bool__(self) -> bool:
        return bool(self.messages)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, typed: bool) -> "MessageList[Any]":
        """Parses the JSON object (``typed``: messages are Stowage messages)."""
        raw = d.get("messages") or []
        return cls(
            messages=[Message.from_dict(m) for m in raw] if typed else list(raw),
            dropped=[Dropped.from_dict(x) for x in d.get("dropped") or []],
        )


@dataclass
class TruncateOutcome:
    """The answer of a truncate."""

    removed: int
    version: int

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "TruncateOutcome":
        """Parses the JSON object."""
        return cls(removed=d["removed"], version=d["version"])


# ---------------------------------------------------------------- display


@dataclass
class DisplayRecord:
    """One UI-ready record of a conversation (a message part, a tool card, or a synthetic record)."""

    scope: Scope
    conversation_id: str
    #: Per conversation, contiguous from 1 in save order.
    seq: int
    #: The message's role, or a synthetic type.
    message_type: str
    #: text, thinking, tool_call, tool_result, media, provider, or a synthetic content type.
    content_type: str
    content: JSON
    created_at: int
    updated_at: int
    message_id: Optional[str] = None
    tool_call_id: Optional[str] = None
    status: Optional[ToolStatus] = None
    metadata: Optional[Dict[str, Any]] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "DisplayRecord":
        """Parses the JSON object."""
        return cls(
            scope=Scope.from_dict(d.get("scope") or {}),
            conversation_id=d["conversation_id"],
            seq=d["seq"],
            message_type=d["message_type"],
            content_type=d["content_type"],
            content=d.get("content"),
            created_at=d.get("created_at", 0),
            updated_at=d.get("updated_at", 0),
            message_id=d.get("message_id"),
            tool_call_id=d.get("tool_call_id"),
            status=d.get("status"),
            metadata=d.get("metadata"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object (what an export holds; :meth:`StowageClient.restore_display` takes it)."""
        return _drop_none(
            {
                "scope": self.scope.to_dict(),
                "conversation_id": self.conversation_id,
                "seq": self.seq,
                "message_id": self.message_id,
                "message_type": self.message_type,
                "content_type": self.content_type,
                "tool_call_id": self.tool_call_id,
                "status": self.status,
                "content": self.content,
                "metadata": self.metadata,
                "created_at": self.created_at,
                "updated_at": self.updated_at,
            }
        )


@dataclass
class DisplayPage:
    """One page of display records, ascending by seq."""

    records: List[DisplayRecord]
    #: Pass as ``after`` for the next page; None on the last page.
    next_after: Optional[int] = None

    def __iter__(self) -> Iterator[DisplayRecord]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "DisplayPage":
        """Parses the JSON object."""
        return cls(records=[DisplayRecord.from_dict(r) for r in d.get("records") or []], next_after=d.get("next_after"))


@dataclass
class ToolUpdate:
    """The answer of a tool status update or result resolution."""

    card: DisplayRecord
    #: False when the call repeated the current status: nothing changed, no event.
    changed: bool

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ToolUpdate":
        """Parses the JSON object."""
        return cls(card=DisplayRecord.from_dict(d["card"]), changed=bool(d["changed"]))


# ---------------------------------------------------------------- health


@dataclass
class AdapterHealth:
    """The store adapter's health."""

    status: Literal["healthy", "degraded", "unhealthy"]
    consecutive_failures: Optional[int] = None
    last_error: Optional[str] = None
    retry_in_ms: Optional[int] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "AdapterHealth":
        """Parses the JSON object."""
        return cls(
            status=d.get("status", "unhealthy"),
            consecutive_failures=d.get("consecutive_failures"),
            last_error=d.get("last_error"),
            retry_in_ms=d.get("retry_in_ms"),
        )


@dataclass
class Health:
    """``GET /healthz``: whether the store takes calls."""

    status: Literal["ok", "unhealthy", "shutting_down"]
    store: str
    adapter: AdapterHealth
    contract_version: str

    @property
    def ok(self) -> bool:
        """True when the server takes calls."""
        return self.status == "ok"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Health":
        """Parses the JSON object."""
        return cls(
            status=d.get("status", "unhealthy"),
            store=d.get("store", ""),
            adapter=AdapterHealth.from_dict(d.get("adapter") or {}),
            contract_version=d.get("contract_version", ""),
        )
