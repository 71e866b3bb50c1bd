"""StowageChatMessageHistory against the real ``langchain-core`` package (fake chat models; no LLM)."""

from __future__ import annotations

import warnings
from typing import List

import pytest
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

from stowage_client import AsyncStowageClient, StowageClient, ToolCallPart, ToolResultPart
from stowage_client.integrations.langchain import StowageChatMessageHistory


def conversation() -> List[BaseMessage]:
    return [
        SystemMessage("You are terse."),
        SystemMessage("Prefer metric units.", additional_kwargs={"__openai_role__": "developer"}),
        HumanMessage("What's the weather in Paris? ☀️", id="human-1", name="alice"),
        AIMessage(
            "",
            id="run-1",
            tool_calls=[
                {"name": "get_weather", "args": {"city": "Paris", "units": ["c"]}, "id": "call_1", "type": "tool_call"},
                {"name": "get_time", "args": {}, "id": "call_2", "type": "tool_call"},
            ],
            usage_metadata={"input_tokens": 12, "output_tokens": 7, "total_tokens": 19,
                            "input_token_details": {"cache_read": 4}},
            response_metadata={"model_name": "fake", "finish_reason": "tool_calls"},
            additional_kwargs={"refusal": None},
        ),
        ToolMessage("18°C, sunny", tool_call_id="call_1", artifact={"raw": {"temp": 18.5, "ok": True}}),
        ToolMessage("clock is broken", tool_call_id="call_2", status="error"),
        AIMessage(
            [{"type": "text", "text": "It is 18°C."}, {"type": "text", "text": " Time unknown."}],
            invalid_tool_calls=[{"name": "x", "args": "{not json", "id": "bad_1", "error": "bad", "type": "invalid_tool_call"}],
        ),
        HumanMessage([{"type": "text", "text": "and this?"},
                      {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]),
        ChatMessage("a custom role", role="critic"),
        ChatMessage("an assistant via ChatMessage", role="assistant"),
        FunctionMessage("legacy result", name="legacy_fn"),
        AIMessage("", tool_calls=[{"name": "no_id", "args": {"a": 1}, "id": None, "type": "tool_call"}]),
    ]


@pytest.fixture
def history(client: StowageClient, conv: str) -> StowageChatMessageHistory:
    return StowageChatMessageHistory(conv, client=client, title="lc chat")


def test_it_is_a_base_chat_message_history(history: StowageChatMessageHistory) -> None:
    assert isinstance(history, BaseChatMessageHistory)
    assert history.messages == []


def test_every_message_type_round_trips(history: StowageChatMessageHistory, client: StowageClient, conv: str) -> None:
    sent = conversation()
    history.add_messages(sent[:4])
    history.add_messages(sent[4:])
    back = history.messages
    assert back == sent
    assert [type(m) for m in back] == [type(m) for m in sent]
    assert back[3].tool_calls == sent[3].tool_calls and back[3].usage_metadata == sent[3].usage_metadata
    assert back[4].artifact == {"raw": {"temp": 18.5, "ok": True}} and back[5].status == "error"
    assert client.get_conversation(conv).title == "lc chat"


def test_convenience_methods_and_clear(history: StowageChatMessageHistory, client: StowageClient, conv: str) -> None:
    history.add_user_message("hi")
    history.add_ai_message("hello")
    history.add_message(HumanMessage("bye"))
    assert [(m.type, m.content) for m in history.messages] == [("human", "hi"), ("ai", "hello"), ("human", "bye")]
    assert "Human: hi" in str(history)
    history.clear()
    assert history.messages == []
    assert client.get_conversation(conv).title == "lc chat"  # the conversation stays
    history.clear()  # idempotent
    StowageChatMessageHistory(conv + "-never", client=client).clear()  # no conversation: no error


def test_storage_is_modelled_so_other_formats_read_it(history: StowageChatMessageHistory, client: StowageClient,
                                                      conv: str) -> None:
    history.add_messages(conversation()[:6])
    stored = client.load_all(conv).messages
    assert [m.role for m in stored] == ["system", "developer", "user", "assistant", "tool", "tool"]
    calls = [p for p in stored[3].parts if isinstance(p, ToolCallPart)]
    assert [(c.id, c.name) for c in calls] == [("call_1", "get_weather"), ("call_2", "get_time")]
    assert stored[3].usage is not None and stored[3].usage.cached_tokens == 4
    result = stored[5].parts[0]
    assert isinstance(result, ToolResultPart) and result.is_error and result.content == "clock is broken"
    chat = client.load_all(conv, format="openai", mode="pure").messages
    assert chat[2] == {"role": "user", "content": "What's the weather in Paris? ☀️"}
    assert chat[3]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": '{"city": "Paris", "units": ["c"]}'}
    assert chat[4] == {"role": "tool", "tool_call_id": "call_1", "content": "18°C, sunny"}


def test_histories_written_by_others_are_converted(history: StowageChatMessageHistory, client: StowageClient,
                                                   conv: str) -> None:
    client.append(conv, [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": "checking",
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{\"city\":\"Oslo\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "cold"},
        {"role": "assistant", "content": "Cold."},
    ], format="openai", create_if_missing=True)
    messages = history.messages
    assert [type(m) for m in messages] == [SystemMessage, HumanMessage, AIMessage, ToolMessage, AIMessage]
    assert messages[2].content == "checking"
    assert messages[2].tool_calls == [{"name": "w", "args": {"city": "Oslo"}, "id": "c1", "type": "tool_call"}]
    assert (messages[3].tool_call_id, messages[3].content) == ("c1", "cold")
    assert messages[4].content == "Cold."
    # Appending LangChain messages after them keeps both kinds readable.
    history.add_messages([HumanMessage("thanks")])
    assert history.messages[-1] == HumanMessage("thanks")


async def test_async_variants(server, conv: str) -> None:
    async with AsyncStowageClient(server.url, server.token) as aclient:
        history = StowageChatMessageHistory(conv, async_client=aclient)
        assert await history.aget_messages() == []
        sent = conversation()
        await history.aadd_messages(sent)
        assert await history.aget_messages() == sent
        # The sync methods work from the async client's settings too.
        assert history.messages == sent
        await history.aclear()
        assert await history.aget_messages() == []


def test_messages_json_cannot_carry_are_refused(history: StowageChatMessageHistory) -> None:
    with pytest.raises(TypeError):
        history.add_messages([ToolMessage("x", tool_call_id="c", artifact=object())])
    assert history.messages == []


def test_runnable_with_message_history(client: StowageClient, conv: str) -> None:
    from langchain_core.runnables.history import RunnableWithMessageHistory

    model = FakeMessagesListChatModel(responses=[AIMessage("Hi Bob!"), AIMessage("Your name is Bob.")])
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are helpful."), MessagesPlaceholder("history"), ("human", "{question}")]
    )
    seen: List[List[BaseMessage]] = []

    def record(prompt_value):
        seen.append(prompt_value.to_messages())
        return prompt_value

    chain = prompt | record | model
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with_history = RunnableWithMessageHistory(
            chain,
            lambda session_id: StowageChatMessageHistory(session_id, client=client),
            input_messages_key="question",
            history_messages_key="history",
        )
        config = {"configurable": {"session_id": conv}}
        assert with_history.invoke({"question": "I'm Bob."}, config=config).content == "Hi Bob!"
        assert with_history.invoke({"question": "What's my name?"}, config=config).content == "Your name is Bob."
    # The second call's prompt held the first turn, read back from Stowage.
    assert [m.content for m in seen[1]] == ["You are helpful.", "I'm Bob.", "Hi Bob!", "What's my name?"]
    stored = client.load_all(conv, format="openai", mode="pure").messages
    assert stored == [
        {"role": "user", "content": "I'm Bob."},
        {"role": "assistant", "content": "Hi Bob!"},
        {"role": "user", "content": "What's my name?"},
        {"role": "assistant", "content": "Your name is Bob."},
    ]
