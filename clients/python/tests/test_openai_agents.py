"""StowageSession against the real ``openai-agents`` package (a scripted model; no LLM is called)."""

from __future__ import annotations

import copy
from typing import Any, Dict, List

import pytest
from agents import Agent, Runner, SQLiteSession, function_tool, set_tracing_disabled
from agents.memory import Session, SessionSettings

from stowage_client import AsyncStowageClient, StowageClient, ToolCallPart, ToolResultPart
from stowage_client.integrations.openai_agents import StowageSession

from .fake_agents_model import ScriptedModel, reasoning, text_message, tool_call

set_tracing_disabled(True)

#: Items of every kind a session meets: what the SDK writes for user input, model
#: output (messages, reasoning, tool calls) and tool outputs, plus hosted-tool
#: items and members the server does not model (kept verbatim).
ITEMS: List[Dict[str, Any]] = [
    {"content": "weather in Paris?", "role": "user"},
    {"role": "system", "content": "You are terse."},
    {"role": "developer", "content": [{"type": "input_text", "text": "Use metric units."}]},
    {"role": "user", "content": [{"type": "input_text", "text": "and look"},
                                 {"type": "input_image", "image_url": "https://example.com/cat.png", "detail": "low"}]},
    {"id": "rs_1", "summary": [{"text": "need the weather tool", "type": "summary_text"}], "type": "reasoning"},
    {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gAAAA-opaque"},
    {"arguments": "{\"city\":\"Paris\"}", "call_id": "call_1", "name": "get_weather", "type": "function_call",
     "id": "fc_1", "status": "completed"},
    {"call_id": "call_1", "output": "18°C, sunny", "type": "function_call_output"},
    {"type": "function_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "structured"}]},
    {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "paris"}},
    {"id": "msg_1", "content": [{"annotations": [], "text": "It is 18°C and sunny. ☀️", "type": "output_text",
                                 "logprobs": []}], "role": "assistant", "status": "completed", "type": "message"},
    {"type": "message", "role": "user", "content": "typed", "extra_member": {"n": 1.5, "big": 12345678901234567890123,
                                                                            "none": None, "nested": [[], {}]}},
    {"type": "item_reference", "id": "msg_1"},
]


@pytest.fixture
def session(aclient: AsyncStowageClient, conv: str) -> StowageSession:
    return StowageSession(conv, client=aclient, title="agents session", agent_id="triage")


def test_it_implements_the_session_protocol(session: StowageSession, conv: str) -> None:
    assert isinstance(session, Session)
    assert session.session_id == conv
    assert isinstance(session.session_settings, SessionSettings)


async def test_items_round_trip_exactly(session: StowageSession, aclient: AsyncStowageClient, conv: str) -> None:
    assert await session.get_items() == []
    sent = copy.deepcopy(ITEMS)
    await session.add_items(sent[:5])
    await session.add_items(sent[5:])
    assert sent == ITEMS  # the caller's items are not modified
    assert await session.get_items() == ITEMS
    info = await aclient.get_conversation(conv)
    assert (info.title, info.agent_id, info.message_count) == ("agents session", "triage", len(ITEMS))


async def test_get_items_limits(session: StowageSession) -> None:
    await session.add_items(ITEMS)
    assert await session.get_items(limit=3) == ITEMS[-3:]
    assert await session.get_items(limit=1) == ITEMS[-1:]
    assert await session.get_items(limit=100) == ITEMS
    assert await session.get_items(limit=0) == []
    assert await session.get_items(limit=-1) == ITEMS  # SQLiteSession's "no limit" for negatives
    limited = StowageSession(session.session_id, client=session.client, session_settings=SessionSettings(limit=2))
    assert await limited.get_items() == ITEMS[-2:]
    assert await limited.get_items(limit=4) == ITEMS[-4:]


async def test_pop_item_removes_exactly_the_newest_item(session: StowageSession) -> None:
    await session.add_items(ITEMS)
    popped = []
    while (item := await session.pop_item()) is not None:
        popped.append(item)
        assert await session.get_items() == ITEMS[: len(ITEMS) - len(popped)]
    # Includes the tool output whose call stays (the server refuses that pop;
    # the session removes it with a version-checked replace).
    assert popped[::-1] == ITEMS
    assert await session.pop_item() is None


async def test_pop_on_a_missing_session_and_clear(session: StowageSession, aclient: AsyncStowageClient) -> None:
    assert await session.pop_item() is None
    await session.clear_session()  # nothing to clear: no error
    await session.add_items(ITEMS[:4])
    await session.clear_session()
    assert await session.get_items() == []
    assert (await aclient.get_conversation(session.session_id)).title == "agents session"  # the conversation stays
    await session.add_items(ITEMS[:1])
    assert await session.get_items() == ITEMS[:1]


async def test_retried_add_items_store_nothing_twice(session: StowageSession, aclient: AsyncStowageClient) -> None:
    await session.add_items(ITEMS[:2])
    # What a retry of a lost answer sends again: the same key, the same items.
    again = await aclient.append(session.session_id, ITEMS[2:4], format="openai-responses", idempotency_key="retry")
    retry = await aclient.append(session.session_id, ITEMS[2:4], format="openai-responses", idempotency_key="retry")
    assert (again.stored, retry.stored) == (2, 0)
    assert await session.get_items() == ITEMS[:4]


async def test_a_sync_client_works_too(server, conv: str) -> None:
    with StowageClient(server.url, server.token) as sync_client:
        session = StowageSession(conv, client=sync_client)
        await session.add_items(ITEMS[6:8])
        assert await session.get_items() == ITEMS[6:8]
        assert await session.pop_item() == ITEMS[7]
        await session.clear_session()
        assert await session.get_items() == []


async def test_a_session_builds_its_own_client_from_the_environment(server, monkeypatch, conv: str) -> None:
    monkeypatch.setenv("STOWAGE_URL", server.url)
    monkeypatch.setenv("STOWAGE_TOKEN", server.token)
    session = StowageSession(conv)
    try:
        await session.add_items(ITEMS[:1])
        assert await session.get_items() == ITEMS[:1]
    finally:
        await session.close()


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"18°C and sunny in {city}"


async def test_runner_persists_and_replays_history(session: StowageSession, aclient: AsyncStowageClient) -> None:
    model = ScriptedModel([
        [reasoning("need the weather tool", "rs_1"), tool_call("get_weather", '{"city":"Paris"}', "call_1", "fc_1")],
        [text_message("It is 18°C and sunny in Paris.", "msg_1")],
        [text_message("You asked about Paris.", "msg_2")],
    ])
    agent = Agent(name="weather", instructions="Be brief.", model=model, tools=[get_weather])

    first = await Runner.run(agent, "What's the weather in Paris?", session=session)
    assert first.final_output == "It is 18°C and sunny in Paris."
    second = await Runner.run(agent, "What did I ask?", session=session)
    assert second.final_output == "You asked about Paris."

    # The third model call saw the whole first turn, read back from Stowage.
    seen = model.inputs[2]
    assert [i.get("type", "message") for i in seen] == [
        "message", "reasoning", "function_call", "function_call_output", "message", "message"]
    assert seen[3]["output"] == "18°C and sunny in Paris"

    # Stowage holds exactly what the SDK's own SQLiteSession would have stored.
    reference = SQLiteSession("reference")
    replay = ScriptedModel([
        [reasoning("need the weather tool", "rs_1"), tool_call("get_weather", '{"city":"Paris"}', "call_1", "fc_1")],
        [text_message("It is 18°C and sunny in Paris.", "msg_1")],
        [text_message("You asked about Paris.", "msg_2")],
    ])
    ref_agent = Agent(name="weather", instructions="Be brief.", model=replay, tools=[get_weather])
    await Runner.run(ref_agent, "What's the weather in Paris?", session=reference)
    await Runner.run(ref_agent, "What did I ask?", session=reference)
    assert await session.get_items() == await reference.get_items()

    # The server modelled the items: the tool call and its result are real parts,
    # readable in any format and by display persistence.
    stored = (await aclient.load_all(session.session_id)).messages
    assert [m.role for m in stored] == ["user", "assistant", "assistant", "tool", "assistant", "user", "assistant"]
    call = stored[2].parts[0]
    assert isinstance(call, ToolCallPart) and (call.id, call.name) == ("call_1", "get_weather")
    assert isinstance(stored[3].parts[0], ToolResultPart)
    chat = (await aclient.load_all(session.session_id, format="openai", mode="pure")).messages
    assert chat[-1] == {"role": "assistant", "content": "You asked about Paris."}
