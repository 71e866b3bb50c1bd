"""Display events over Server-Sent Events.

``GET /v1/events`` streams every display change in the caller's scope, ``GET
/v1/conversations/{id}/events`` one conversation's. Each event carries an id
(``EPOCH-N``); a stream opened with ``Last-Event-ID`` replays what came after
that id, then continues live. When the server cannot prove that nothing was
lost in between (it restarted, the id is older than its replay buffer) it sends
an ``events_lost`` event instead: reload the display list (``list_display``) and
carry on with the events that follow.

:class:`EventStream` (sync) and :class:`AsyncEventStream` parse the stream into
:class:`DisplayEvent` and :class:`EventsLost` objects (and
:class:`ServerSentEvent` for event names this client does not know), track
:attr:`~EventStream.last_event_id`, and with ``reconnect=True`` reconnect after a
dropped connection or a server shutdown, resuming from the last id seen.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any, AsyncIterator, Dict, Iterator, List, Literal, Optional, Union

import httpx

from ._base import Config, encode_headers, map_transport_error, retry_delay
from .errors import APIError, RateLimited, StowageError, TransportError, Unavailable, error_from_response
from .models import DisplayRecord

__all__ = [
    "ServerSentEvent",
    "DisplayEvent",
    "EventsLost",
    "StreamItem",
    "SSEDecoder",
    "EventStream",
    "AsyncEventStream",
]


@dataclass
class ServerSentEvent:
    """One raw SSE event."""

    event: str = "message"
    data: str = ""
    id: Optional[str] = None
    retry: Optional[int] = None

    def json(self) -> Any:
        """``data`` parsed as JSON."""
        return json.loads(self.data)


@dataclass
class DisplayEvent:
    """A display change: ``display_message_saved`` or ``display_message_updated``."""

    event: Literal["display_message_saved", "display_message_updated"]
    record: DisplayRecord
    agent_id: Optional[str]
    #: The SSE id (``EPOCH-N``): pass as ``last_event_id`` to resume after it.
    id: Optional[str]

    @property
    def conversation_id(self) -> str:
        """The conversation the record belongs to."""
        return self.record.conversation_id

    @classmethod
    def from_sse(cls, sse: ServerSentEvent) -> "DisplayEvent":
        """Parses the event's data."""
        d = sse.json()
        return cls(
            event=d.get("event", sse.event),
            record=DisplayRecord.from_dict(d["record"]),
            agent_id=d.get("agent_id"),
            id=sse.id,
        )


@dataclass
class EventsLost:
    """Events after ``last_event_id`` may be missing: reload the display list.

    ``id`` is where the stream continues (the stream's ``last_event_id`` moves to it).
    """

    message: str
    #: The id the client asked to resume after.
    last_event_id: Optional[str]
    #: This event's own SSE id.
    id: Optional[str]
    code: str = "events_lost"

    @classmethod
    def from_sse(cls, sse: ServerSentEvent) -> "EventsLost":
        """Parses the event's data."""
        try:
            d = sse.json()
        except ValueError:
            d = {}
        return cls(
            message=d.get("message", ""), last_event_id=d.get("last_event_id"), id=sse.id,
            code=d.get("code", "events_lost"),
        )


StreamItem = Union[DisplayEvent, EventsLost, ServerSentEvent]


def parse_event(sse: ServerSentEvent) -> StreamItem:
    """The typed form of a raw event (raw when the name is not known)."""
    if sse.event in ("display_message_saved", "display_message_updated"):
        return DisplayEvent.from_sse(sse)
    if sse.event == "events_lost":
        return EventsLost.from_sse(sse)
    return sse


class SSEDecoder:
    """Incremental SSE parser (the WHATWG event-stream rules), fed one line at a time."""

    def __init__(self) -> None:
        self._event = ""
        self._data: List[str] = []
        self._id: Optional[str] = None
        self._retry: Optional[int] = None
        self._has_id = False

    def feed(self, line: str) -> Optional[ServerSentEvent]:
        """Feeds one line (without its terminator); returns an event at a blank line."""
        if line == "":
            if not self._data and not self._event and not self._has_id:
                return None
            sse = ServerSentEvent(
                event=self._event or "message",
                data="\n".join(self._data),
                id=self._id if self._has_id else None,
                retry=self._retry,
            )
            self._event, self._data, self._retry, self._has_id, self._id = "", [], None, False, None
            return sse
        if line.startswith(":"):
            return None  # a comment (keep-alive)
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            if "\0" not in value:
                self._id, self._has_id = value, True
        elif name == "retry":
            if value.isdigit():
                self._retry = int(value)
        return None


def _events_path(conversation: Optional[str]) -> str:
    from ._base import conversation_path

    return "/v1/events" if conversation is None else conversation_path(conversation, "events")


class _StreamBase:
    def __init__(
        self,
        config: Config,
        conversation: Optional[str],
        last_event_id: Optional[str],
        reconnect: bool,
        max_reconnects: Optional[int],
    ) -> None:
        self._config = config
        self._path = _events_path(conversation)
        self.conversation = conversation
        #: The id of the newest event received (or the one the stream was opened with).
        self.last_event_id: Optional[str] = last_event_id
        self.reconnect = reconnect
        self.max_reconnects = max_reconnects
        self._closed = False
        self._retry_ms: Optional[int] = None
        self._failures = 0

    def _request_headers(self) -> List[tuple]:
        extra: Dict[str, str] = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
        if self.last_event_id:
            extra["Last-Event-ID"] = self.last_event_id
        return encode_headers(self._config.request_headers(extra))

    def _note(self, item: StreamItem) -> None:
        item_id = item.id
        if item_id:
            self.last_event_id = item_id
        if isinstance(item, ServerSentEvent) and item.retry is not None:
            self._retry_ms = item.retry

    def _may_reconnect(self, error: Optional[BaseException]) -> bool:
        if self._closed or not self.reconnect:
            return False
        if error is not None and not isinstance(error, (TransportError, RateLimited, Unavailable)):
            return False
        if self.max_reconnects is not None and self._failures >= self.max_reconnects:
            return False
        return True

    def _delay(self, error: Optional[BaseException]) -> float:
        if isinstance(error, APIError) and error.retry_after is not None:
            return error.retry_after
        if self._retry_ms is not None and self._failures == 0:
            return self._retry_ms / 1000.0
        return retry_delay(error or Exception(), self._failures)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed


class EventStream(_StreamBase):
    """A display event stream (sync). Iterate it; use it as a context manager.

    Example::

        with client.events("chat-1") as events:
            for event in events:
                if isinstance(event, EventsLost):
                    reload()
                else:
                    render(event.record)
    """

    def __init__(
        self,
        http: httpx.Client,
        config: Config,
        conversation: Optional[str] = None,
        *,
        last_event_id: Optional[str] = None,
        reconnect: bool = False,
        max_reconnects: Optional[int] = None,
    ) -> None:
        super().__init__(config, conversation, last_event_id, reconnect, max_reconnects)
        self._http = http
        self._response: Optional[httpx.Response] = None
        self._lines: Optional[Iterator[str]] = None

    def connect(self) -> "EventStream":
        """Opens the stream (if not open yet): returns once the server answered.

        Raises:
            Unauthorized, InvalidLastEventId, RateLimited, …: the server refused it.
            TransportError: no connection.
        """
        if self._closed:
            raise StowageError("the event stream is closed")
        if self._response is not None:
            return self
        request = self._http.build_request(
            "GET", self._config.base_url + self._path, headers=self._request_headers(),
            timeout=self._config.stream_timeout(),
        )
        try:
            response = self._http.send(request, stream=True)
        except httpx.HTTPError as e:
            raise map_transport_error(e) from e
        if response.status_code >= 400:
            try:
                body = response.read()
            finally:
                response.close()
            raise error_from_response(response.status_code, body, response.headers)
        self._response = response
        self._lines = response.iter_lines()
        return self

    def _drop(self) -> None:
        response, self._response, self._lines = self._response, None, None
        if response is not None:
            response.close()

    def __iter__(self) -> Iterator[StreamItem]:
        while not self._closed:
            error: Optional[BaseException] = None
            try:
                self.connect()
                decoder = SSEDecoder()
                assert self._lines is not None
                for line in self._lines:
                    sse = decoder.feed(line)
                    if sse is None:
                        continue
                    item = parse_event(sse)
                    self._note(item)
                    if isinstance(item, ServerSentEvent) and item.event == "message" and not item.data:
                        continue
                    self._failures = 0
                    yield item
                # The server ended the stream (shutdown).
            except httpx.HTTPError as e:
                if self._closed:
                    return
                error = map_transport_error(e)
            except (TransportError, RateLimited, Unavailable) as e:
                error = e
            finally:
                self._drop()
            if not self._may_reconnect(error):
                if error is not None and not self._closed:
                    raise error
                return
            delay = self._delay(error)
            self._failures += 1
            time.sleep(delay)

    def close(self) -> None:
        """Closes the stream; iteration ends."""
        self._closed = True
        self._drop()

    def __enter__(self) -> "EventStream":
        return self.connect()

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncEventStream(_StreamBase):
    """A display event stream (async). ``async for`` it; use it as an async context manager."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        config: Config,
        conversation: Optional[str] = None,
        *,
        last_event_id: Optional[str] = None,
        reconnect: bool = False,
        max_reconnects: Optional[int] = None,
    ) -> None:
        super().__init__(config, conversation, last_event_id, reconnect, max_reconnects)
        self._http = http
        self._response: Optional[httpx.Response] = None
        self._lines: Optional[AsyncIterator[str]] = None

    async def connect(self) -> "AsyncEventStream":
        """Opens the stream (if not open yet): returns once the server answered.

        Raises:
            Unauthorized, InvalidLastEventId, RateLimited, …: the server refused it.
            TransportError: no connection.
        """
        if self._closed:
            raise StowageError("the event stream is closed")
        if self._response is not None:
            return self
        request = self._http.build_request(
            "GET", self._config.base_url + self._path, headers=self._request_headers(),
            timeout=self._config.stream_timeout(),
        )
        try:
            response = await self._http.send(request, stream=True)
        except httpx.HTTPError as e:
            raise map_transport_error(e) from e
        if response.status_code >= 400:
            try:
                body = await response.aread()
            finally:
                await response.aclose()
            raise error_from_response(response.status_code, body, response.headers)
        self._response = response
        self._lines = response.aiter_lines()
        return self

    async def _drop(self) -> None:
        response, self._response, self._lines = self._response, None, None
        if response is not None:
            await response.aclose()

    async def __aiter__(self) -> AsyncIterator[StreamItem]:
        while not self._closed:
            error: Optional[BaseException] = None
            try:
                await self.connect()
                decoder = SSEDecoder()
                assert self._lines is not None
                async for line in self._lines:
                    sse = decoder.feed(line)
                    if sse is None:
                        continue
                    item = parse_event(sse)
                    self._note(item)
                    if isinstance(item, ServerSentEvent) and item.event == "message" and not item.data:
                        continue
                    self._failures = 0
                    yield item
            except httpx.HTTPError as e:
                if self._closed:
                    return
                error = map_transport_error(e)
            except (TransportError, RateLimited, Unavailable) as e:
                error = e
            finally:
                await self._drop()
            if not self._may_reconnect(error):
                if error is not None and not self._closed:
                    raise error
                return
            delay = self._delay(error)
            self._failures += 1
            await asyncio.sleep(delay)

    async def aclose(self) -> None:
        """Closes the stream; iteration ends."""
        self._closed = True
        await self._drop()

    async def __aenter__(self) -> "AsyncEventStream":
        return await self.connect()

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()
