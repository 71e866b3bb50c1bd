"""The synchronous client: :class:`StowageClient`."""

from __future__ import annotations

import time
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Union, overload

import httpx

from ._base import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_STREAM_READ_TIMEOUT,
    DEFAULT_TIMEOUT,
    Call,
    Config,
    MetaLike,
    Ops,
    UNSET,
    TimeoutTypes,
    build_request,
    map_transport_error,
    parse_answer,
    retry_delay,
    should_retry,
)
from .errors import StowageError
from .events import EventStream
from .models import (
    AppendOutcome,
    ConversationInfo,
    ConversationPage,
    DisplayPage,
    DisplayRecord,
    Format,
    Health,
    Message,
    MessageList,
    Mode,
    NewMessage,
    OrphanPolicy,
    Page,
    ToolStatus,
    ToolUpdate,
    TruncateOutcome,
)

__all__ = ["StowageClient"]

MessageLike = Union[NewMessage, Message, Mapping[str, Any]]


class StowageClient:
    """Synchronous client of a ``stowage serve`` server.

    Args:
        base_url: The server's URL, e.g. ``"http://127.0.0.1:7373"``
            (default: ``$STOWAGE_URL``).
        token: The bearer token; it selects the tenant (default: ``$STOWAGE_TOKEN``).
        user: The user within the tenant, sent as ``Stowage-User`` (default: the
            empty user). See :meth:`with_options` to act for several users.
        timeout: Seconds (or an ``httpx.Timeout``) per request attempt.
        max_retries: Retries after a failure that is safe to retry: 429 and 503
            (after ``Retry-After``), and — for idempotent operations only —
            transport errors and 504. 0 disables retries.
        headers: Extra headers for every request.
        auto_idempotency_keys: Give every append whose messages lack ids a fresh
            ``Idempotency-Key``, so retries (this client's or yours, with the same
            key) never store a message twice.
        stream_read_timeout: Read timeout of event streams (None: wait forever);
            the server sends a keep-alive every 15 s.
        http_client: An ``httpx.Client`` to use (its base URL is not used; this
            client does not close it).

    Use it as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        token: Optional[str] = None,
        *,
        user: Optional[str] = None,
        timeout: TimeoutTypes = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        headers: Optional[Mapping[str, str]] = None,
        auto_idempotency_keys: bool = True,
        stream_read_timeout: Optional[float] = DEFAULT_STREAM_READ_TIMEOUT,
        http_client: Optional[httpx.Client] = None,
    ) -> None:
        self._config = Config(
            base_url,
            token,
            user=user,
            timeout=timeout,
            max_retries=max_retries,
            headers=headers,
            auto_idempotency_keys=auto_idempotency_keys,
            stream_read_timeout=stream_read_timeout,
        )
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.Client()
        self._ops = Ops(auto_idempotency_keys)

    # ------------------------------------------------------------ lifecycle

    @property
    def base_url(self) -> str:
        """The server's URL."""
        return self._config.base_url

    @property
    def user(self) -> Optional[str]:
        """The ``Stowage-User`` this client sends (None: the empty user)."""
        return self._config.user

    def with_options(
        self,
        *,
        user: Optional[str] = None,
        token: Optional[str] = None,
        timeout: TimeoutTypes = None,
        max_retries: Optional[int] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> "StowageClient":
        """A client with some settings changed that shares this one's connections.

        Typical use: one client per process, ``client.with_options(user=user_id)``
        per request. Closing the copy does not close the connections.
        """
        changes: Dict[str, Any] = {}
        if user is not None:
            changes["user"] = user
        if token is not None:
            changes["token"] = token
        if timeout is not None:
            changes["timeout"] = timeout
        if max_retries is not None:
            changes["max_retries"] = max_retries
        if headers is not None:
            changes["headers"] = headers
        clone = StowageClient.__new__(StowageClient)
        clone._config = self._config.copy(**changes)
        clone._http = self._http
        clone._owns_http = False
        clone._ops = Ops(clone._config.auto_idempotency_keys)
        return clone

    def close(self) -> None:
        """Closes the connections (when this client created them)."""
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> "StowageClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"StowageClient(base_url={self._config.base_url!r}, user={self._config.user!r})"

    def _run(self, call: Call) -> Any:
        attempt = 0
        while True:
            request = build_request(self._http, self._config, call)
            try:
                try:
                    response = self._http.send(request)
                except httpx.HTTPError as e:
                    raise map_transport_error(e) from e
                return parse_answer(call, response)
            except StowageError as error:
                if not should_retry(call, error, attempt, self._config.max_retries):
                    raise
                time.sleep(retry_delay(error, attempt))
                attempt += 1

    # ------------------------------------------------------------ server

    def health(self) -> Health:
        """``GET /healthz``: whether the store takes calls (no token needed).

        Returns the health also when the server answers 503 (unhealthy or
        shutting down); check :attr:`Health.ok`.
        """
        return self._run(self._ops.health())

    def openapi(self) -> Dict[str, Any]:
        """``GET /v1/openapi.json``: the server's OpenAPI document."""
        return self._run(self._ops.openapi())

    def metrics(self) -> str:
        """``GET /metrics``: the server's OpenMetrics text."""
        return self._run(self._ops.metrics())

    # ------------------------------------------------------------ conversations

    def list_conversations(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> ConversationPage:
        """One page of the scope's conversations, ordered by id.

        Args:
            limit: Page size (server default 100, at most the store's page limit).
            cursor: ``next_cursor`` of the previous page.
        """
        return self._run(self._ops.list_conversations(limit, cursor))

    def iter_conversations(self, *, page_size: Optional[int] = None) -> Iterator[ConversationInfo]:
        """Every conversation of the scope, ordered by id, fetched page by page."""
        cursor: Optional[str] = None
        while True:
            page = self.list_conversations(limit=page_size, cursor=cursor)
            yield from page.conversations
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def open_conversation(
        self,
        conversation: str,
        *,
        agent_id: Optional[str] = None,
        title: Optional[str] = None,
        metadata: Any = None,
        extra: Optional[Mapping[str, Any]] = None,
        meta: MetaLike = None,
    ) -> ConversationInfo:
        """Finds or creates a conversation (``PUT /v1/conversations/{id}``).

        Idempotent: an existing conversation is returned unchanged and the meta is
        ignored (change it with :meth:`update_conversation`).

        Args:
            conversation: The conversation id (any string up to 512 bytes without
                control characters; encoded in the URL by this client).
            agent_id, title, metadata, extra: The meta of a new conversation
                (``metadata`` any JSON value; ``extra`` a JSON object keyed by
                format name whose members are objects).
            meta: The same as a :class:`ConversationMeta` or dict (keyword
                arguments win).
        """
        fields = {"agent_id": agent_id, "title": title, "metadata": metadata, "extra": extra}
        return self._run(self._ops.open_conversation(conversation, meta, fields))

    create_conversation = open_conversation

    def update_conversation(
        self,
        conversation: str,
        *,
        agent_id: Optional[str] = UNSET,
        title: Optional[str] = UNSET,
        metadata: Any = UNSET,
        extra: Optional[Mapping[str, Any]] = UNSET,
    ) -> ConversationInfo:
        """Changes some of a conversation's meta (``PATCH /v1/conversations/{id}``).

        Only the fields given change; ``None`` clears one, a field left out keeps
        its stored value. ``metadata`` and ``extra`` are replaced whole. The
        history, ``version`` and ``updated_at`` stay.

        Args:
            conversation: The conversation id.
            agent_id, title, metadata, extra: The new values (``metadata`` any
                JSON value; ``extra`` a JSON object keyed by format name).

        Returns:
            The conversation with its new meta.

        Raises:
            NotFound: no such conversation in this scope.
            InvalidInput: ``extra`` is not a JSON object.
        """
        fields = {"agent_id": agent_id, "title": title, "metadata": metadata, "extra": extra}
        return self._run(self._ops.update_conversation(conversation, fields))

    def get_conversation(self, conversation: str) -> ConversationInfo:
        """The conversation without its messages.

        Raises:
            NotFound: no such conversation in this scope.
        """
        return self._run(self._ops.get_conversation(conversation))

    def delete_conversation(self, conversation: str) -> bool:
        """Deletes a conversation with its messages and display records.

        Idempotent: returns False when nothing existed (in this scope).
        """
        return self._run(self._ops.delete_conversation(conversation))

    # ------------------------------------------------------------ messages

    def append(
        self,
        conversation: str,
        messages: Iterable[MessageLike],
        *,
        format: Optional[Format] = None,
        expected_version: Optional[int] = None,
        create_if_missing: bool = False,
        meta: MetaLike = None,
        idempotency_key: Optional[str] = None,
    ) -> AppendOutcome:
        """Appends messages atomically (``POST …/messages``).

        Appends are idempotent by message id: a message whose id is already
        stored is not stored again and keeps its seq.

        Args:
            conversation: The conversation id.
            messages: :class:`NewMessage` objects or dicts, in ``format``.
            format: The messages' transcript format (default ``stowage``):
                ``openai``, ``anthropic``, ``openai-responses``, ``ai-sdk-ui``.
                Each item converts on its own.
            expected_version: Fail with :class:`Conflict` unless the
                conversation is at this version.
            create_if_missing: Create the conversation (with ``meta``) if it
                does not exist. Excludes ``expected_version``.
            meta: The meta of a conversation this append creates.
            idempotency_key: Derive the ids of messages without one from this key
                (1–255 visible ASCII characters): resending the same batch with
                the same key stores nothing twice. Default: a fresh key per call
                when ``auto_idempotency_keys`` is on.

        Raises:
            NotFound: the conversation does not exist (and ``create_if_missing`` is False).
            Conflict: ``expected_version`` did not match.
            InvalidInput: a message was refused (the message names it).
        """
        return self._run(
            self._ops.append(
                conversation,
                messages,
                format=format,
                expected_version=expected_version,
                create_if_missing=create_if_missing,
                meta=meta,
                idempotency_key=idempotency_key,
            )
        )

    def replace(
        self,
        conversation: str,
        messages: Iterable[MessageLike],
        *,
        format: Optional[Format] = None,
        expected_version: Optional[int] = None,
        idempotency_key: Optional[str] = None,
    ) -> int:
        """Replaces the whole history atomically (renumbered from seq 1).

        Returns:
            The conversation's new version.
        """
        return self._run(
            self._ops.replace(
                conversation, messages, format=format, expected_version=expected_version,
                idempotency_key=idempotency_key,
            )
        )

    @overload
    def load(
        self,
        conversation: str,
        *,
        limit: Optional[int] = ...,
        after: Optional[int] = ...,
        before: Optional[int] = ...,
        cursor: Optional[str] = ...,
        orphans: Optional[OrphanPolicy] = ...,
        format: None = ...,
        mode: Optional[Mode] = ...,
    ) -> Page[Message]: ...

    @overload
    def load(
        self,
        conversation: str,
        *,
        limit: Optional[int] = ...,
        after: Optional[int] = ...,
        before: Optional[int] = ...,
        cursor: Optional[str] = ...,
        orphans: Optional[OrphanPolicy] = ...,
        format: Format,
        mode: Optional[Mode] = ...,
    ) -> Page[Any]: ...

    def load(
        self,
        conversation: str,
        *,
        limit: Optional[int] = None,
        after: Optional[int] = None,
        before: Optional[int] = None,
        cursor: Optional[str] = None,
        orphans: Optional[OrphanPolicy] = None,
        format: Optional[Format] = None,
        mode: Optional[Mode] = None,
    ) -> Page[Any]:
        """One page of messages, ascending by seq (``GET …/messages``).

        Without ``after``/``before``/``cursor`` the page holds the newest
        messages. Give at most one of them.

        Args:
            limit: Page size (server default 50).
            after: Messages after this seq (paging forward).
            before: Messages before this seq (paging backward).
            cursor: ``next_cursor`` of the previous page (continues in its direction).
            orphans: ``keep`` (default), ``strip`` or ``synthesize`` tool calls
                without a result (a view: storage is not changed).
            format: Transcript format of the answer (default ``stowage``: typed
                :class:`Message` objects; other formats: dicts).
            mode: ``keep`` (lossless) or ``pure`` (only what the provider accepts).

        Raises:
            NotFound: no such conversation.
        """
        return self._run(
            self._ops.load(
                conversation, limit=limit, after=after, before=before, cursor=cursor, orphans=orphans,
                format=format, mode=mode,
            )
        )

    def iter_messages(
        self,
        conversation: str,
        *,
        after: int = 0,
        page_size: Optional[int] = None,
        format: Optional[Format] = None,
        mode: Optional[Mode] = None,
    ) -> Iterator[Any]:
        """Every message after seq ``after``, oldest first, fetched page by page."""
        page = self.load(conversation, after=after, limit=page_size, format=format, mode=mode)  # type: ignore[call-overload]
        while True:
            yield from page.messages
            if not page.next_cursor:
                return
            page = self.load(conversation, cursor=page.next_cursor, limit=page_size, format=format, mode=mode)  # type: ignore[call-overload]

    @overload
    def load_all(self, conversation: str, *, format: None = ..., mode: Optional[Mode] = ...) -> MessageList[Message]: ...

    @overload
    def load_all(self, conversation: str, *, format: Format, mode: Optional[Mode] = ...) -> MessageList[Any]: ...

    def load_all(
        self, conversation: str, *, format: Optional[Format] = None, mode: Optional[Mode] = None
    ) -> MessageList[Any]:
        """The whole history, oldest first (``GET …/messages/all``).

        Raises:
            NotFound: no such conversation.
        """
        return self._run(self._ops.load_all(conversation, format=format, mode=mode))

    def truncate(self, conversation: str, after: int, *, expected_version: Optional[int] = None) -> TruncateOutcome:
        """Removes every message after seq ``after`` (``0`` empties the history).

        A cut that would keep a tool call and drop its result is refused
        (:class:`InvalidInput` naming the seqs to cut at instead).
        """
        return self._run(self._ops.truncate(conversation, after, expected_version))

    @overload
    def pop(self, conversation: str, *, format: None = ..., mode: Optional[Mode] = ...) -> MessageList[Message]: ...

    @overload
    def pop(self, conversation: str, *, format: Format, mode: Optional[Mode] = ...) -> MessageList[Any]: ...

    def pop(self, conversation: str, *, format: Optional[Format] = None, mode: Optional[Mode] = None) -> MessageList[Any]:
        """Removes and returns the newest message (empty when there is none).

        In a provider format one message may render as several items. Not
        idempotent: never retried after an ambiguous failure.

        Raises:
            NotFound: no such conversation.
            InvalidInput: popping would separate a tool call from its result.
        """
        return self._run(self._ops.pop(conversation, format=format, mode=mode))

    # ------------------------------------------------------------ display

    def list_display(
        self, conversation: str, *, after: Optional[int] = None, limit: Optional[int] = None
    ) -> DisplayPage:
        """One page of display records after seq ``after``, ascending (server default limit 100)."""
        return self._run(self._ops.list_display(conversation, after, limit))

    def iter_display(self, conversation: str, *, after: int = 0, page_size: Optional[int] = None) -> Iterator[DisplayRecord]:
        """Every display record after seq ``after``, fetched page by page."""
        cursor: Optional[int] = after
        while cursor is not None:
            page = self.list_display(conversation, after=cursor, limit=page_size)
            yield from page.records
            cursor = page.next_after

    def save_display_message(
        self,
        conversation: str,
        message: MessageLike,
        *,
        agent_id: Optional[str] = None,
        format: Optional[Format] = None,
    ) -> List[DisplayRecord]:
        """Saves a message as display records: one per part; tool calls become ``pending`` cards.

        Args:
            message: One message in ``format`` (a stored :class:`Message` works too).
            agent_id: The agent, passed on to the events.
        """
        return self._run(self._ops.save_display_message(conversation, message, agent_id=agent_id, format=format))

    def save_synthetic(
        self,
        conversation: str,
        *,
        message_type: str,
        content_type: str,
        content: Any,
        metadata: Optional[Mapping[str, Any]] = None,
        agent_id: Optional[str] = None,
    ) -> DisplayRecord:
        """Saves one record the integrator originates (a notice, a divider, …).

        Args:
            message_type: e.g. ``"system"``.
            content_type: e.g. ``"notice"``.
            content: Any JSON value.
            metadata: A JSON object.
        """
        return self._run(
            self._ops.save_synthetic(
                conversation, message_type=message_type, content_type=content_type, content=content,
                metadata=metadata, agent_id=agent_id,
            )
        )

    def restore_display(
        self, conversation: str, records: Iterable[Union[DisplayRecord, Mapping[str, Any]]]
    ) -> List[DisplayRecord]:
        """Stores exported records verbatim (import, migration); seqs continue after the last record.

        Records from another conversation may be passed as they are: their scope,
        conversation id and seq are ignored.
        """
        return self._run(self._ops.restore_display(conversation, records))

    def update_tool_status(
        self,
        conversation: str,
        call_id: str,
        status: ToolStatus,
        *,
        name: Optional[str] = None,
        display_text: Optional[str] = None,
        result: Optional[str] = None,
        error: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        agent_id: Optional[str] = None,
    ) -> ToolUpdate:
        """Moves a tool card to ``status`` (validated transitions).

        Repeating the current status answers ``changed=False`` (no event).

        Raises:
            NotFound: no card for ``call_id`` (a normal outcome for Sagents).
            InvalidTransition: the card cannot move to ``status``.
        """
        return self._run(
            self._ops.update_tool_status(
                conversation, call_id, status, name=name, display_text=display_text, result=result, error=error,
                metadata=metadata, agent_id=agent_id,
            )
        )

    def resolve_tool_result(
        self, conversation: str, call_id: str, content: str, *, agent_id: Optional[str] = None
    ) -> ToolUpdate:
        """Resolves an ``interrupted`` tool card with the tool's real result.

        Resolving a card that is already completed answers ``changed=False``.

        Raises:
            NotFound: no card for ``call_id``.
            InvalidTransition: the card is not interrupted.
        """
        return self._run(self._ops.resolve_tool_result(conversation, call_id, content, agent_id))

    # ------------------------------------------------------------ events

    def events(
        self,
        conversation: Optional[str] = None,
        *,
        last_event_id: Optional[str] = None,
        reconnect: bool = False,
        max_reconnects: Optional[int] = None,
    ) -> EventStream:
        """A display event stream (SSE): one conversation's, or the whole scope's.

        The stream connects on ``with`` (or :meth:`EventStream.connect`, or the
        first iteration) and yields :class:`DisplayEvent` and
        :class:`EventsLost` objects.

        Args:
            conversation: Only this conversation's events (None: the scope's).
            last_event_id: Resume after this event id (sent as ``Last-Event-ID``).
            reconnect: Reconnect after a dropped connection or a server shutdown,
                resuming from the last id seen.
            max_reconnects: Give up after this many consecutive failed
                reconnections (None: never).
        """
        return EventStream(
            self._http, self._config, conversation, last_event_id=last_event_id, reconnect=reconnect,
            max_reconnects=max_reconnects,
        )
