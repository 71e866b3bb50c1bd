"""OpenAI Agents SDK sessions stored in Stowage.

:class:`StowageSession` implements the SDK's session protocol
(``agents.memory.session.Session``: ``session_id``, ``session_settings``,
``get_items``, ``add_items``, ``pop_item``, ``clear_session``), so it can be
passed as ``Runner.run(agent, input, session=StowageSession(...))``.

Storage mapping: the session id is the conversation id, and every item is sent
as one message in the ``openai-responses`` transcript format (Responses input
items — what the Agents SDK stores). The server models what it can (text,
reasoning, function calls and outputs…) and keeps everything else verbatim
(residues in ``extra``, unknown items as opaque provider parts), so:

* items come back exactly as added (the server's ``x_stowage`` bookkeeping
  member is removed on the way out);
* the same conversation can be read in any other format (``openai``,
  ``anthropic``, ``ai-sdk-ui``, ``stowage``) and rendered by display persistence.

``pop_item`` pops the newest message. The server refuses to pop a tool result
whose call stays (it will not separate a call from its result); the session then
removes the item with a version-checked replace of the history instead, so
``pop_item`` always removes exactly the newest item, as the protocol requires.

``add_items`` sends an ``Idempotency-Key`` per call, so the client's automatic
retries never store an item twice.
"""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List, Mapping, Optional, Union

from .._base import new_idempotency_key
from ..async_client import AsyncStowageClient
from ..client import StowageClient
from ..errors import Conflict, InvalidInput, NotFound
from ..models import ConversationMeta

try:  # pragma: no cover - exercised when the SDK is installed
    from agents.memory.session_settings import SessionSettings, resolve_session_limit
except ImportError:  # pragma: no cover
    SessionSettings = None  # type: ignore[assignment,misc]

    def resolve_session_limit(explicit_limit: Optional[int], settings: Any) -> Optional[int]:  # type: ignore[misc]
        if explicit_limit is not None:
            return explicit_limit
        return getattr(settings, "limit", None) if settings is not None else None


__all__ = ["StowageSession", "FORMAT"]

#: The transcript format items are stored in.
FORMAT = "openai-responses"
#: The server's largest page (``max_page_size`` default).
_MAX_PAGE = 1000
#: The member the server adds to every item in keep mode.
_X_STOWAGE = "x_stowage"
#: Attempts of a replace-based pop that meets concurrent writers.
_POP_ATTEMPTS = 8

ClientLike = Union[StowageClient, AsyncStowageClient]


def _strip(item: Any) -> Any:
    if isinstance(item, dict) and _X_STOWAGE in item:
        item = dict(item)
        item.pop(_X_STOWAGE, None)
    return item


def _plain(item: Any) -> Any:
    """A JSON-ready item (pydantic models, as the SDK's output types, are dumped)."""
    if isinstance(item, Mapping):
        return dict(item)
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        return dump(exclude_unset=True, mode="json")
    raise TypeError(f"a session item must be a dict (a Responses input item), not {type(item).__name__}")


class StowageSession:
    """An Agents SDK session whose history lives in a Stowage conversation.

    Args:
        session_id: The session (conversation) id.
        client: A :class:`AsyncStowageClient` (preferred) or a
            :class:`StowageClient` (its calls then run in a worker thread).
            Without one, a client is built from ``base_url``/``token``/``user``
            (default: ``$STOWAGE_URL``/``$STOWAGE_TOKEN``) and closed by :meth:`close`.
        session_settings: The SDK's ``SessionSettings`` (``limit``: the
            default number of items :meth:`get_items` returns).
        agent_id, title, metadata: The meta of the conversation, when the first
            :meth:`add_items` creates it.

    Example::

        session = StowageSession("chat-42", client=AsyncStowageClient(url, token))
        result = await Runner.run(agent, "Hello", session=session)
    """

    session_settings: Any = None

    def __init__(
        self,
        session_id: str,
        client: Optional[ClientLike] = None,
        *,
        base_url: Optional[str] = None,
        token: Optional[str] = None,
        user: Optional[str] = None,
        session_settings: Any = None,
        agent_id: Optional[str] = None,
        title: Optional[str] = None,
        metadata: Any = None,
    ) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise ValueError("session_id must be a non-empty string")
        self.session_id = session_id
        self._owns_client = client is None
        self._client: ClientLike = (
            client if client is not None else AsyncStowageClient(base_url, token, user=user)
        )
        if session_settings is None and SessionSettings is not None:
            session_settings = SessionSettings()
        elif isinstance(session_settings, dict) and SessionSettings is not None:
            session_settings = SessionSettings(**session_settings)
        self.session_settings = session_settings
        meta = ConversationMeta(agent_id=agent_id, title=title, metadata=metadata)
        self._meta: Optional[Dict[str, Any]] = meta.to_dict() or None

    @property
    def client(self) -> ClientLike:
        """The Stowage client the session uses."""
        return self._client

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        method = getattr(self._client, name)
        if isinstance(self._client, AsyncStowageClient):
            return await method(*args, **kwargs)
        return await asyncio.to_thread(method, *args, **kwargs)

    # ------------------------------------------------------------ the protocol

    async def get_items(self, limit: Optional[int] = None) -> List[Any]:
        """The session's items, oldest first.

        Args:
            limit: The newest ``limit`` items (in chronological order); None:
                ``session_settings.limit``, and when that is None too, every item.
                0 returns nothing; a negative limit returns everything (as
                ``SQLiteSession`` does).
        """
        limit = resolve_session_limit(limit, self.session_settings)
        if limit is not None and limit == 0:
            return []
        try:
            if limit is None or limit < 0 or limit > _MAX_PAGE:
                items = (await self._call("load_all", self.session_id, format=FORMAT)).messages
                if limit is not None and limit > 0:
                    items = items[-limit:]
            else:
                items = (await self._call("load", self.session_id, limit=limit, format=FORMAT)).messages
                # A message written by another client may render as several items.
                items = items[-limit:]
        except NotFound:
            return []
        return [_strip(item) for item in items]

    async def add_items(self, items: List[Any]) -> None:
        """Appends items (creating the conversation on the first call).

        The batch is atomic, and retried safely (one ``Idempotency-Key`` per call).
        """
        if not items:
            return
        await self._call(
            "append",
            self.session_id,
            [_plain(item) for item in items],
            format=FORMAT,
            create_if_missing=True,
            meta=self._meta,
            idempotency_key=new_idempotency_key(),
        )

    async def pop_item(self) -> Optional[Any]:
        """Removes and returns the newest item; None when the session is empty."""
        try:
            popped = await self._call("pop", self.session_id, format=FORMAT)
        except NotFound:
            return None
        except InvalidInput:
            # The server does not pop a tool result whose call stays: remove the
            # item with a version-checked replace instead.
            return await self._pop_by_replace()
        items = popped.messages
        if not items:
            return None
        if len(items) > 1:
            # A message written by another client rendered as several items: put
            # back all but the newest (their x_stowage keeps the message's id).
            await self._call(
                "append", self.session_id, items[:-1], format=FORMAT, idempotency_key=new_idempotency_key()
            )
        return _strip(items[-1])

    async def _pop_by_replace(self) -> Optional[Any]:
        last_error: Optional[Exception] = None
        for _ in range(_POP_ATTEMPTS):
            try:
                info = await self._call("get_conversation", self.session_id)
                if info.last_seq == 0:
                    return None
                # Keep mode: x_stowage carries each message's id and timestamp back.
                items = (await self._call("load_all", self.session_id, format=FORMAT)).messages
                if not items:
                    return None
                await self._call(
                    "replace", self.session_id, items[:-1], format=FORMAT, expected_version=info.version
                )
                return _strip(items[-1])
            except NotFound:
                return None
            except Conflict as e:  # another writer came first: read again
                last_error = e
        assert last_error is not None
        raise last_error

    async def clear_session(self) -> None:
        """Removes every item (the conversation itself, its meta and display records stay)."""
        try:
            await self._call("truncate", self.session_id, 0)
        except NotFound:
            pass

    # ------------------------------------------------------------ lifecycle

    async def close(self) -> None:
        """Closes the client if the session created it."""
        if self._owns_client:
            if isinstance(self._client, AsyncStowageClient):
                await self._client.aclose()
            else:
                self._client.close()

    def __repr__(self) -> str:
        return f"StowageSession(session_id={self.session_id!r})"
