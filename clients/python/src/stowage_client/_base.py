"""What the sync and async clients share: configuration, request building
(one :class:`Call` per API operation), answer parsing and the retry policy."""

from __future__ import annotations

import json
import os
import random
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Union
from urllib.parse import quote

import httpx

from ._version import __version__
from .errors import (
    APIError,
    ClientTimeout,
    GatewayTimeout,
    ProtocolError,
    RateLimited,
    TransportError,
    Unavailable,
    error_from_response,
)
from .models import (
    FORMATS,
    AppendOutcome,
    ConversationInfo,
    ConversationMeta,
    ConversationPage,
    DisplayPage,
    DisplayRecord,
    Health,
    MessageList,
    Page,
    ToolUpdate,
    TruncateOutcome,
    message_to_dict,
)

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RETRIES = 2
#: Read timeout of event streams: the server sends a keep-alive every 15 s.
DEFAULT_STREAM_READ_TIMEOUT = 60.0
USER_AGENT = f"stowage-client-python/{__version__}"

TimeoutTypes = Union[float, httpx.Timeout, None]
MetaLike = Union[ConversationMeta, Mapping[str, Any], None]

_NO_BODY = object()


class _Unset:
    """The type of :data:`UNSET`."""

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


#: The default of :meth:`~stowage_client.StowageClient.update_conversation`'s
#: fields: not given, so the stored value stays (``None`` clears it).
UNSET: Any = _Unset()


class Retry:
    """How a call may be retried after a failure whose outcome is unknown."""

    #: Safe to repeat (reads, idempotent writes): retried after any transport
    #: error, 429, 503 and 504.
    IDEMPOTENT = "idempotent"
    #: Not safe to repeat (pop, saving display records): retried only when the
    #: server certainly did not act (connection never made, 429, 503).
    UNSAFE = "unsafe"


@dataclass
class Call:
    """One API request and how to read its answer."""

    method: str
    path: str
    parse: Callable[[Any], Any]
    params: Optional[Dict[str, Any]] = None
    body: Any = _NO_BODY
    headers: Dict[str, str] = field(default_factory=dict)
    retry: str = Retry.IDEMPOTENT
    #: The answer is not JSON (``/metrics``): parse gets the text.
    text: bool = False


def path(*segments: str) -> str:
    """``/v1/...`` with every dynamic segment percent-encoded (``/`` included)."""
    out = []
    for s in segments:
        if not isinstance(s, str):
            raise TypeError(f"a path segment must be a string, not {type(s).__name__}")
        encoded = quote(s, safe="")
        if encoded in (".", ".."):
            # Dot segments would be removed by URL normalisation: encode the dots.
            encoded = encoded.replace(".", "%2E")
        out.append(encoded)
    return "/" + "/".join(out)


def conversation_path(conversation: str, *rest: str) -> str:
    """The path of a conversation (``/v1/conversations/{id}/...``)."""
    if not isinstance(conversation, str) or conversation == "":
        raise ValueError("a conversation id must be a non-empty string")
    return path("v1", "conversations", conversation) + "".join("/" + r for r in rest)


def _params(**kwargs: Any) -> Dict[str, Any]:
    return {k: v for k, v in kwargs.items() if v is not None}


def _check_format(format: Optional[str]) -> Optional[str]:
    # Unknown names are left to the server (400 unsupported_format names the
    # known ones), so a newer server's formats work with this client.
    if format is not None and not isinstance(format, str):
        raise TypeError("format must be a string")
    return format


def _typed(format: Optional[str]) -> bool:
    return format is None or format == "stowage"


def _meta_dict(meta: MetaLike, **fields: Any) -> Optional[Dict[str, Any]]:
    out: Dict[str, Any] = {}
    if isinstance(meta, ConversationMeta):
        out.update(meta.to_dict())
    elif meta is not None:
        out.update({k: v for k, v in dict(meta).items() if v is not None})
    out.update({k: v for k, v in fields.items() if v is not None})
    return out or None


def _messages(messages: Iterable[Any]) -> List[Dict[str, Any]]:
    if isinstance(messages, (str, bytes, Mapping)):
        raise TypeError("messages must be a list of messages, not a single value")
    return [message_to_dict(m) for m in messages]


def _all_have_ids(bodies: Sequence[Mapping[str, Any]]) -> bool:
    return all(isinstance(b.get("id"), str) and b.get("id") for b in bodies)


def new_idempotency_key() -> str:
    """A fresh random ``Idempotency-Key``."""
    return "py-" + uuid.uuid4().hex


class Ops:
    """Builds the :class:`Call` of every operation (shared by both clients).

    Each method takes the arguments of the client method of the same name (see
    :class:`~stowage_client.StowageClient` for their documentation).
    """

    def __init__(self, auto_idempotency_keys: bool) -> None:
        self.auto_idempotency_keys = auto_idempotency_keys

    # ------------------------------------------------------------ public routes

    @staticmethod
    def health() -> Call:
        # 503 answers carry a Health body too: parse it instead of raising.
        return Call("GET", "/healthz", Health.from_dict)

    @staticmethod
    def openapi() -> Call:
        return Call("GET", "/v1/openapi.json", lambda d: d)

    @staticmethod
    def metrics() -> Call:
        return Call("GET", "/metrics", lambda t: t, text=True)

    # ------------------------------------------------------------ conversations

    @staticmethod
    def list_conversations(limit: Optional[int], cursor: Optional[str]) -> Call:
        return Call("GET", "/v1/conversations", ConversationPage.from_dict, params=_params(limit=limit, cursor=cursor))

    @staticmethod
    def open_conversation(conversation: str, meta: MetaLike, fields: Dict[str, Any]) -> Call:
        body = _meta_dict(meta, **fields)
        return Call(
            "PUT",
            conversation_path(conversation),
            ConversationInfo.from_dict,
            body=body if body is not None else _NO_BODY,
        )

    @staticmethod
    def update_conversation(conversation: str, fields: Dict[str, Any]) -> Call:
        body = {k: v for k, v in fields.items() if v is not UNSET}
        return Call("PATCH", conversation_path(conversation), ConversationInfo.from_dict, body=body)

    @staticmethod
    def get_conversation(conversation: str) -> Call:
        return Call("GET", conversation_path(conversation), ConversationInfo.from_dict)

    @staticmethod
    def delete_conversation(conversation: str) -> Call:
        return Call("DELETE", conversation_path(conversation), lambda d: bool(d["deleted"]))

    # ------------------------------------------------------------ messages

    def _idempotency(self, bodies: Sequence[Mapping[str, Any]], key: Optional[str]) -> Dict[str, str]:
        if key is not None:
            return {"Idempotency-Key": key}
        if self.auto_idempotency_keys and not _all_have_ids(bodies):
            return {"Idempotency-Key": new_idempotency_key()}
        return {}

    def append(
        self,
        conversation: str,
        messages: Iterable[Any],
        *,
        format: Optional[str],
        expected_version: Optional[int],
        create_if_missing: bool,
        meta: MetaLike,
        idempotency_key: Optional[str],
    ) -> Call:
        bodies = _messages(messages)
        body: Dict[str, Any] = {"messages": bodies}
        if expected_version is not None:
            body["expected_version"] = expected_version
        if create_if_missing:
            body["create_if_missing"] = True
        meta_body = _meta_dict(meta)
        if meta_body is not None:
            body["meta"] = meta_body
        typed = _typed(format)
        headers = self._idempotency(bodies if typed else [{}], idempotency_key)
        # With a key (or ids on every message) a retry stores nothing twice.
        retry = Retry.IDEMPOTENT if headers or (typed and _all_have_ids(bodies)) else Retry.UNSAFE
        return Call(
            "POST",
            conversation_path(conversation, "messages"),
            AppendOutcome.from_dict,
            params=_params(format=_check_format(format)),
            body=body,
            headers=headers,
            retry=retry,
        )

    def replace(
        self,
        conversation: str,
        messages: Iterable[Any],
        *,
        format: Optional[str],
        expected_version: Optional[int],
        idempotency_key: Optional[str],
    ) -> Call:
        bodies = _messages(messages)
        body: Dict[str, Any] = {"messages": bodies}
        if expected_version is not None:
            body["expected_version"] = expected_version
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key is not None else {}
        return Call(
            "PUT",
            conversation_path(conversation, "messages"),
            lambda d: int(d["version"]),
            params=_params(format=_check_format(format)),
            body=body,
            headers=headers,
        )

    @staticmethod
    def load(
        conversation: str,
        *,
        limit: Optional[int],
        after: Optional[int],
        before: Optional[int],
        cursor: Optional[str],
        orphans: Optional[str],
        format: Optional[str],
        mode: Optional[str],
    ) -> Call:
        given = [name for name, v in (("after", after), ("before", before), ("cursor", cursor)) if v is not None]
        if len(given) > 1:
            raise ValueError(f"give at most one of after, before and cursor (got {', '.join(given)})")
        typed = _typed(format)
        return Call(
            "GET",
            conversation_path(conversation, "messages"),
            lambda d: Page.from_dict(d, typed=typed),
            params=_params(
                limit=limit, after=after, before=before, cursor=cursor, orphans=orphans,
                format=_check_format(format), mode=mode,
            ),
        )

    @staticmethod
    def load_all(conversation: str, *, format: Optional[str], mode: Optional[str]) -> Call:
        typed = _typed(format)
        return Call(
            "GET",
            conversation_path(conversation, "messages", "all"),
            lambda d: MessageList.from_dict(d, typed=typed),
            params=_params(format=_check_format(format), mode=mode),
        )

    @staticmethod
    def truncate(conversation: str, after: int, expected_version: Optional[int]) -> Call:
        if not isinstance(after, int) or isinstance(after, bool) or after < 0:
            raise ValueError("after must be a seq (an integer >= 0; 0 removes every message)")
        return Call(
            "DELETE",
            conversation_path(conversation, "messages"),
            TruncateOutcome.from_dict,
            params=_params(after=after, expected_version=expected_version),
        )

    @staticmethod
    def pop(conversation: str, *, format: Optional[str], mode: Optional[str]) -> Call:
        typed = _typed(format)
        return Call(
            "POST",
            conversation_path(conversation, "messages", "pop"),
            lambda d: MessageList.from_dict(d, typed=typed),
            params=_params(format=_check_format(format), mode=mode),
            retry=Retry.UNSAFE,
        )

    # ------------------------------------------------------------ display

    @staticmethod
    def list_display(conversation: str, after: Optional[int], limit: Optional[int]) -> Call:
        return Call(
            "GET",
            conversation_path(conversation, "display"),
            DisplayPage.from_dict,
            params=_params(after=after, limit=limit),
        )

    @staticmethod
    def save_display_message(
        conversation: str, message: Any, *, agent_id: Optional[str], format: Optional[str]
    ) -> Call:
        body: Dict[str, Any] = {"message": message_to_dict(message)}
        if agent_id is not None:
            body["agent_id"] = agent_id
        return Call(
            "POST",
            conversation_path(conversation, "display", "messages"),
            lambda d: [DisplayRecord.from_dict(r) for r in d.get("records") or []],
            params=_params(format=_check_format(format)),
            body=body,
            retry=Retry.UNSAFE,
        )

    @staticmethod
    def save_synthetic(
        conversation: str,
        *,
        message_type: str,
        content_type: str,
        content: Any,
        metadata: Optional[Mapping[str, Any]],
        agent_id: Optional[str],
    ) -> Call:
        body: Dict[str, Any] = {"message_type": message_type, "content_type": content_type, "content": content}
        if metadata is not None:
            body["metadata"] = dict(metadata)
        if agent_id is not None:
            body["agent_id"] = agent_id
        return Call(
            "POST",
            conversation_path(conversation, "display", "synthetic"),
            DisplayRecord.from_dict,
            body=body,
            retry=Retry.UNSAFE,
        )

    @staticmethod
    def restore_display(conversation: str, records: Iterable[Any]) -> Call:
        items = []
        for r in records:
            d = r.to_dict() if isinstance(r, DisplayRecord) else dict(r)
            for place in ("scope", "conversation_id", "seq"):
                d.pop(place, None)  # ignored by the server; left out to keep bodies small
            items.append(d)
        return Call(
            "POST",
            conversation_path(conversation, "display", "restore"),
            lambda d: [DisplayRecord.from_dict(r) for r in d.get("records") or []],
            body={"records": items},
            retry=Retry.UNSAFE,
        )

    @staticmethod
    def update_tool_status(
        conversation: str,
        call_id: str,
        status: str,
        *,
        name: Optional[str],
        display_text: Optional[str],
        result: Optional[str],
        error: Optional[str],
        metadata: Optional[Mapping[str, Any]],
        agent_id: Optional[str],
    ) -> Call:
        body = _params(
            status=status, name=name, display_text=display_text, result=result, error=error,
            metadata=dict(metadata) if metadata is not None else None, agent_id=agent_id,
        )
        return Call(
            "POST",
            conversation_path(conversation, "display", "tools", path(call_id)[1:], "status"),
            ToolUpdate.from_dict,
            body=body,
        )

    @staticmethod
    def resolve_tool_result(conversation: str, call_id: str, content: str, agent_id: Optional[str]) -> Call:
        body = _params(content=content, agent_id=agent_id)
        return Call(
            "POST",
            conversation_path(conversation, "display", "tools", path(call_id)[1:], "result"),
            ToolUpdate.from_dict,
            body=body,
        )


class Config:
    """Client settings (immutable once built; ``with_options`` makes a copy)."""

    def __init__(
        self,
        base_url: Optional[str],
        token: Optional[str],
        *,
        user: Optional[str],
        timeout: TimeoutTypes,
        max_retries: int,
        headers: Optional[Mapping[str, str]],
        auto_idempotency_keys: bool,
        stream_read_timeout: Optional[float],
    ) -> None:
        base_url = base_url if base_url is not None else os.environ.get("STOWAGE_URL")
        if not base_url:
            raise ValueError("base_url is required (or set STOWAGE_URL)")
        self.base_url = base_url.rstrip("/")
        self.token = token if token is not None else os.environ.get("STOWAGE_TOKEN")
        self.user = user
        if user is not None and not isinstance(user, str):
            raise TypeError("user must be a string")
        self.timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.max_retries = max_retries
        self.headers = dict(headers or {})
        self.auto_idempotency_keys = auto_idempotency_keys
        self.stream_read_timeout = stream_read_timeout

    def copy(self, **changes: Any) -> "Config":
        """A copy with ``changes`` applied (``headers`` are merged)."""
        new = Config.__new__(Config)
        new.__dict__.update(self.__dict__)
        for key, value in changes.items():
            if key == "timeout" and not isinstance(value, httpx.Timeout):
                value = httpx.Timeout(value)
            if key == "headers":
                value = {**self.headers, **dict(value or {})}
            setattr(new, key, value)
        return new

    def request_headers(self, extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
        """Headers of every request: auth, user, the caller's, the call's own."""
        h: Dict[str, str] = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if self.token:
            h["Authorization"] = f"Bearer {self.token}"
        if self.user is not None:
            # httpx encodes header values as ASCII by default; the server takes UTF-8.
            h["Stowage-User"] = self.user
        h.update(self.headers)
        if extra:
            h.update(extra)
        return h

    def stream_timeout(self) -> httpx.Timeout:
        """The timeout of event streams (the read timeout is ``stream_read_timeout``)."""
        return httpx.Timeout(
            connect=self.timeout.connect,
            read=self.stream_read_timeout,
            write=self.timeout.write,
            pool=self.timeout.pool,
        )


def encode_headers(headers: Mapping[str, str]) -> List[tuple]:
    """Headers as bytes (UTF-8), so a non-ASCII ``Stowage-User`` is sent as the server expects."""
    return [(k.encode("ascii"), v.encode("utf-8")) for k, v in headers.items()]


def build_request(client: Union[httpx.Client, httpx.AsyncClient], config: Config, call: Call) -> httpx.Request:
    """The httpx request of ``call``."""
    headers = config.request_headers(call.headers)
    content: Optional[bytes] = None
    if call.body is not _NO_BODY:
        content = json.dumps(call.body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        headers["Content-Type"] = "application/json"
    return client.build_request(
        call.method,
        config.base_url + call.path,
        params=call.params or None,
        content=content,
        headers=encode_headers(headers),
        timeout=config.timeout,
    )


def parse_answer(call: Call, response: httpx.Response) -> Any:
    """The parsed answer of a successful response, or the mapped exception raised."""
    status = response.status_code
    if status >= 400 and not (call.path == "/healthz" and status == 503):
        raise error_from_response(status, response.content, response.headers)
    if call.text:
        return call.parse(response.text)
    try:
        data = response.json()
    except ValueError as e:
        raise ProtocolError(
            f"{call.method} {call.path}: the answer is not JSON ({e})", status=status, body=response.text[:500]
        ) from None
    try:
        return call.parse(data)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ProtocolError(
            f"{call.method} {call.path}: unexpected answer ({type(e).__name__}: {e})",
            status=status,
            body=response.text[:500],
        ) from None


def map_transport_error(e: httpx.HTTPError) -> TransportError:
    """An httpx transport failure as this client's exception."""
    sent = not isinstance(e, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout))
    if isinstance(e, httpx.TimeoutException):
        return ClientTimeout(f"{type(e).__name__}: {e}", sent=sent)
    return TransportError(f"{type(e).__name__}: {e}", sent=sent)


def should_retry(call: Call, error: Exception, attempt: int, max_retries: int) -> bool:
    """Whether ``call`` may be tried again after ``error`` (``attempt`` counts from 0)."""
    if attempt >= max_retries:
        return False
    if isinstance(error, (RateLimited, Unavailable)):
        # Refused before the operation ran.
        return True
    if isinstance(error, TransportError):
        return call.retry == Retry.IDEMPOTENT or not error.sent
    if isinstance(error, GatewayTimeout):
        return call.retry == Retry.IDEMPOTENT
    return False


def retry_delay(error: Exception, attempt: int) -> float:
    """Seconds to wait before the next attempt: the server's ``Retry-After``, else
    exponential back-off with jitter (0.25 s, 0.5 s, 1 s, … at most 8 s)."""
    if isinstance(error, APIError) and error.retry_after is not None:
        return min(error.retry_after, 30.0)
    base = min(0.25 * (2**attempt), 8.0)
    return base * (0.5 + random.random() / 2)


__all__ = ["Call", "Config", "Ops", "Retry", "DEFAULT_TIMEOUT", "DEFAULT_MAX_RETRIES", "FORMATS"]
