"""LangChain chat message history stored in Stowage.

:class:`StowageChatMessageHistory` is a
``langchain_core.chat_history.BaseChatMessageHistory`` (``messages``,
``add_messages``, ``clear`` and the async ``aget_messages``, ``aadd_messages``,
``aclear``) whose messages live in a Stowage conversation (the session id).

Storage mapping: each LangChain message is one Stowage message whose role and
parts say what it is — ``human`` → ``user`` text, ``ai`` → ``assistant`` text
and ``tool_call`` parts (``arguments``: the JSON of ``args``), ``tool`` →
``tool`` with a ``tool_result`` part, ``system`` → ``system`` (``developer``
when LangChain marks it so) — so the conversation reads naturally in every
transcript format and in display persistence. The message's own
``langchain_core.messages.message_to_dict`` form is kept in the Stowage
message's ``metadata`` (``{"langchain": {...}}``, stored verbatim), and is what
``messages`` returns, so every field round-trips: ``id``, ``name``,
``additional_kwargs``, ``response_metadata``, ``tool_calls``,
``invalid_tool_calls``, ``usage_metadata``, ``tool_call_id``, ``artifact``,
``status``, content blocks.

Messages written by other clients (another format, the Agents SDK session) have
no such metadata; they are converted from their parts.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)

from ..async_client import AsyncStowageClient
from ..client import StowageClient
from ..errors import NotFound
from ..models import (
    ConversationMeta,
    Message,
    NewMessage,
    Part,
    ProviderPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)

__all__ = ["StowageChatMessageHistory", "to_stowage_message", "from_stowage_message", "METADATA_KEY"]

#: The key of the LangChain form in a Stowage message's metadata.
METADATA_KEY = "langchain"
#: The provider-part format of content blocks Stowage does not model.
PROVIDER_FORMAT = "langchain"

_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool"}
_CHAT_ROLES = {"system", "developer", "user", "assistant", "tool"}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for block in content:
            if isinstance(block, str):
                texts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            else:
                return json.dumps(content, ensure_ascii=False)
        return "".join(texts)
    return json.dumps(content, ensure_ascii=False)


def _content_parts(content: Any) -> List[Part]:
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    parts: List[Part] = []
    for block in content or []:
        if isinstance(block, str):
            parts.append(TextPart(block))
        elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(TextPart(block["text"]))
        elif isinstance(block, dict) and block.get("type") == "thinking" and isinstance(block.get("thinking"), str):
            parts.append(ThinkingPart(block["thinking"], signature=block.get("signature")))
        elif isinstance(block, dict) and block.get("type") == "reasoning" and isinstance(block.get("reasoning"), str):
            parts.append(ThinkingPart(block["reasoning"]))
        else:
            parts.append(ProviderPart(PROVIDER_FORMAT, block))
    return parts


def _role(message: BaseMessage) -> str:
    if isinstance(message, ChatMessage):
        return message.role if message.role in _CHAT_ROLES else "user"
    if isinstance(message, SystemMessage) and message.additional_kwargs.get("__openai_role__") == "developer":
        return "developer"
    return _ROLES.get(message.type.replace("MessageChunk", "").lower(), "user")


def to_stowage_message(message: BaseMessage) -> Dict[str, Any]:
    """The Stowage message (JSON) that stores ``message``.

    Raises:
        TypeError: the message holds something JSON cannot carry (an ``artifact``
            that is not JSON, say).
    """
    if not isinstance(message, BaseMessage):
        raise TypeError(f"expected a langchain BaseMessage, got {type(message).__name__}")
    form = message_to_dict(message)
    try:
        json.dumps(form)
    except (TypeError, ValueError) as e:
        raise TypeError(f"the {message.type} message is not JSON-serialisable: {e}") from None
    role = _role(message)
    parts: List[Part] = []
    if isinstance(message, ToolMessage):
        if message.tool_call_id:
            parts.append(
                ToolResultPart(message.tool_call_id, _text_of(message.content), is_error=message.status == "error")
            )
        else:
            parts.extend(_content_parts(message.content))
    elif isinstance(message, FunctionMessage):
        parts.append(ProviderPart(PROVIDER_FORMAT, form))
    else:
        parts.extend(_content_parts(message.content))
    usage: Optional[Usage] = None
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            if call.get("id"):
                parts.append(
                    ToolCallPart(call["id"], call["name"], json.dumps(call.get("args", {}), ensure_ascii=False))
                )
            else:
                parts.append(ProviderPart(PROVIDER_FORMAT, dict(call)))
        if message.usage_metadata:
            u = message.usage_metadata
            cached = (u.get("input_token_details") or {}).get("cache_read") or 0
            usage = Usage(
                input_tokens=int(u.get("input_tokens") or 0),
                output_tokens=int(u.get("output_tokens") or 0),
                cached_tokens=int(cached),
            )
    if not parts:
        parts.append(TextPart(""))
    return NewMessage(role=role, parts=parts, usage=usage, metadata={METADATA_KEY: form}).to_dict()  # type: ignore[arg-type]


def _args(arguments: str) -> Dict[str, Any]:
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        return {"__raw__": arguments}
    return value if isinstance(value, dict) else {"__value__": value}


def from_stowage_message(message: Message) -> List[BaseMessage]:
    """The LangChain message(s) of a stored Stowage message.

    A message this integration wrote comes back exactly (one message); others
    are converted from their parts (a ``tool`` message with several results
    becomes several ``ToolMessage`` objects).
    """
    meta = message.metadata
    if isinstance(meta, dict) and isinstance(meta.get(METADATA_KEY), dict):
        form = meta[METADATA_KEY]
        if "type" in form and "data" in form:
            return messages_from_dict([form])
    text = "".join(p.text for p in message.parts if isinstance(p, TextPart))
    if message.role == "user":
        return [HumanMessage(content=text, id=message.id)]
    if message.role == "system":
        return [SystemMessage(content=text, id=message.id)]
    if message.role == "developer":
        return [SystemMessage(content=text, id=message.id, additional_kwargs={"__openai_role__": "developer"})]
    if message.role == "tool":
        results = [p for p in message.parts if isinstance(p, ToolResultPart)]
        if not results:
            return [ToolMessage(content=text, tool_call_id="", id=message.id)]
        return [
            ToolMessage(
                content=r.content, tool_call_id=r.call_id, status="error" if r.is_error else "success",
                id=message.id if len(results) == 1 else f"{message.id}~{i}",
            )
            for i, r in enumerate(results)
        ]
    calls = [
        {"name": p.name, "args": _args(p.arguments), "id": p.id, "type": "tool_call"}
        for p in message.parts
        if isinstance(p, ToolCallPart)
    ]
    ai = AIMessage(content=text, tool_calls=calls, id=message.id)
    if message.usage is not None:
        ai.usage_metadata = {
            "input_tokens": message.usage.input_tokens,
            "output_tokens": message.usage.output_tokens,
            "total_tokens": message.usage.input_tokens + message.usage.output_tokens,
        }
    return [ai]


class StowageChatMessageHistory(BaseChatMessageHistory):
    """A LangChain chat message history in a Stowage conversation.

    Args:
        session_id: The conversation id.
        client: A :class:`StowageClient` for the sync methods.
        async_client: A :class:`AsyncStowageClient` for the async methods.
            Either may be left out: the other's settings are used to build it.
            Without both, they are built from ``base_url``/``token``/``user``
            (default ``$STOWAGE_URL``/``$STOWAGE_TOKEN``).
        agent_id, title, metadata: The meta of the conversation, when the first
            :meth:`add_messages` creates it.

    Example::

        history = StowageChatMessageHistory("chat-42", client=StowageClient(url, token))
        history.add_messages([HumanMessage("hi"), AIMessage("hello")])
        history.messages
    """

    def __init__(
        self,
        session_id: str,
        client: Optional[StowageClient] = None,
        *,
        async_client: Optional[AsyncStowageClient] = None,
        base_url: Optional[str] = None,
        token: Optional[str] = None,
        user: Optional[str] = None,
        agent_id: Optional[str] = None,
        title: Optional[str] = None,
        metadata: Any = None,
    ) -> None:
        super().__init__()
        if not isinstance(session_id, str) or not session_id:
            raise ValueError("session_id must be a non-empty string")
        self.session_id = session_id
        self._client = client
        self._async_client = async_client
        self._settings = dict(base_url=base_url, token=token, user=user)
        meta = ConversationMeta(agent_id=agent_id, title=title, metadata=metadata)
        self._meta = meta.to_dict() or None

    def _sync(self) -> StowageClient:
        if self._client is None:
            if self._async_client is not None:
                config = self._async_client._config
                self._client = StowageClient(
                    config.base_url, config.token, user=config.user, timeout=config.timeout,
                    max_retries=config.max_retries, headers=config.headers,
                )
            else:
                self._client = StowageClient(**self._settings)  # type: ignore[arg-type]
        return self._client

    def _async(self) -> AsyncStowageClient:
        if self._async_client is None:
            if self._client is not None:
                config = self._client._config
                self._async_client = AsyncStowageClient(
                    config.base_url, config.token, user=config.user, timeout=config.timeout,
                    max_retries=config.max_retries, headers=config.headers,
                )
            else:
                self._async_client = AsyncStowageClient(**self._settings)  # type: ignore[arg-type]
        return self._async_client

    @staticmethod
    def _convert(stored: Sequence[Message]) -> List[BaseMessage]:
        out: List[BaseMessage] = []
        for m in stored:
            out.extend(from_stowage_message(m))
        return out

    # ------------------------------------------------------------ sync

    @property
    def messages(self) -> List[BaseMessage]:  # type: ignore[override]
        """Every message, oldest first (empty when the conversation does not exist)."""
        try:
            stored = self._sync().load_all(self.session_id).messages
        except NotFound:
            return []
        return self._convert(stored)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Appends messages atomically (creating the conversation on first use)."""
        bodies = [to_stowage_message(m) for m in messages]
        if not bodies:
            return
        self._sync().append(self.session_id, bodies, create_if_missing=True, meta=self._meta)

    def clear(self) -> None:
        """Removes every message (the conversation, its meta and display records stay)."""
        try:
            self._sync().truncate(self.session_id, 0)
        except NotFound:
            pass

    # ------------------------------------------------------------ async

    async def aget_messages(self) -> List[BaseMessage]:
        """Every message, oldest first (async)."""
        try:
            stored = (await self._async().load_all(self.session_id)).messages
        except NotFound:
            return []
        return self._convert(stored)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Appends messages atomically (async)."""
        bodies = [to_stowage_message(m) for m in messages]
        if not bodies:
            return
        await self._async().append(self.session_id, bodies, create_if_missing=True, meta=self._meta)

    async def aclear(self) -> None:
        """Removes every message (async)."""
        try:
            await self._async().truncate(self.session_id, 0)
        except NotFound:
            pass
