"""Display persistence: list, save message, synthetic, restore, tool status and result."""

from __future__ import annotations

import pytest

from stowage_client import (
    DisplayRecord,
    InvalidInput,
    InvalidTransition,
    NewMessage,
    NotFound,
    StowageClient,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)


def test_save_message_makes_one_record_per_part(client: StowageClient, conv: str) -> None:
    message = NewMessage(
        role="assistant",
        id="msg-1",
        parts=[ThinkingPart("plan"), TextPart("Searching…"), ToolCallPart("call_1", "search", '{"q":"x"}')],
    )
    records = client.save_display_message(conv, message, agent_id="agent-1")
    assert [r.seq for r in records] == [1, 2, 3]
    assert [r.content_type for r in records] == ["thinking", "text", "tool_call"]
    assert all(isinstance(r, DisplayRecord) and r.message_id == "msg-1" for r in records)
    assert all(r.message_type == "assistant" and r.conversation_id == conv for r in records)
    card = records[2]
    assert (card.tool_call_id, card.status) == ("call_1", "pending")
    assert card.content == {"name": "search", "arguments": '{"q":"x"}'}
    assert records[1].content == {"text": "Searching…"}
    assert client.list_display(conv).records == records


def test_save_message_takes_provider_formats(client: StowageClient, conv: str) -> None:
    records = client.save_display_message(
        conv, {"role": "assistant", "content": [{"type": "text", "text": "hi"},
                                                {"type": "tool_use", "id": "tu_1", "name": "f", "input": {}}]},
        format="anthropic",
    )
    assert [(r.content_type, r.status) for r in records] == [("text", None), ("tool_call", "pending")]
    with pytest.raises(InvalidInput):
        client.save_display_message(conv, {"nonsense": True}, format="openai")


def test_list_pages_with_after(client: StowageClient, conv: str) -> None:
    for i in range(5):
        client.save_synthetic(conv, message_type="system", content_type="notice", content={"i": i})
    first = client.list_display(conv, limit=2)
    assert [r.content["i"] for r in first] == [0, 1] and first.next_after == 2
    second = client.list_display(conv, after=first.next_after, limit=2)
    assert [r.seq for r in second] == [3, 4]
    assert [r.seq for r in client.list_display(conv, after=4)] == [5]
    assert [r.content["i"] for r in client.iter_display(conv, page_size=2)] == [0, 1, 2, 3, 4]
    assert [r.seq for r in client.iter_display(conv, after=3)] == [4, 5]
    assert client.list_display(conv + "-none").records == []


def test_synthetic_records_keep_json_content_and_metadata(client: StowageClient, conv: str) -> None:
    record = client.save_synthetic(
        conv, message_type="system", content_type="divider", content=["any", {"json": [1.5, None, True]}],
        metadata={"color": "grey", "n": 3}, agent_id="a1",
    )
    assert (record.message_type, record.content_type, record.seq) == ("system", "divider", 1)
    assert record.content == ["any", {"json": [1.5, None, True]}]
    assert record.metadata == {"color": "grey", "n": 3}
    assert record.status is None and record.tool_call_id is None


def test_tool_cards_move_through_validated_transitions(client: StowageClient, conv: str) -> None:
    client.save_display_message(conv, NewMessage(role="assistant", parts=[ToolCallPart("call_7", "fetch", "{}")]))
    running = client.update_tool_status(conv, "call_7", "executing", display_text="Fetching…", metadata={"pct": 10})
    assert running.changed and running.card.status == "executing"
    assert running.card.metadata == {"display_text": "Fetching…", "pct": 10}
    same = client.update_tool_status(conv, "call_7", "executing")
    assert not same.changed and same.card.status == "executing"
    with pytest.raises(InvalidTransition) as e:
        client.update_tool_status(conv, "call_7", "pending")
    assert e.value.status == 409 and (e.value.from_status, e.value.to_status) == ("executing", "pending")
    done = client.update_tool_status(conv, "call_7", "completed", result="200 OK", name="fetch")
    assert done.changed and done.card.status == "completed" and done.card.metadata["result"] == "200 OK"
    with pytest.raises(NotFound):
        client.update_tool_status(conv, "no-such-call", "executing")


def test_interrupted_cards_are_resolved_with_the_real_result(client: StowageClient, conv: str) -> None:
    client.save_display_message(conv, NewMessage(role="assistant", parts=[ToolCallPart("call/8 ?", "slow", "{}")]))
    with pytest.raises(InvalidTransition):
        client.resolve_tool_result(conv, "call/8 ?", "too early")  # only interrupted cards resolve
    client.update_tool_status(conv, "call/8 ?", "executing")
    client.update_tool_status(conv, "call/8 ?", "interrupted")
    resolved = client.resolve_tool_result(conv, "call/8 ?", "late result", agent_id="a")
    assert resolved.changed and resolved.card.status == "completed"
    assert resolved.card.tool_call_id == "call/8 ?" and resolved.card.metadata["result"] == "late result"
    again = client.resolve_tool_result(conv, "call/8 ?", "late result")
    assert not again.changed
    with pytest.raises(NotFound):
        client.resolve_tool_result(conv, "unknown", "x")


def test_restore_stores_exported_records_verbatim(client: StowageClient, conv: str) -> None:
    client.save_display_message(conv, NewMessage(role="user", parts=[TextPart("hello")], id="u1"))
    client.save_display_message(conv, NewMessage(role="assistant", parts=[ToolCallPart("c1", "t", "{}")]))
    client.update_tool_status(conv, "c1", "executing")
    client.update_tool_status(conv, "c1", "failed", error="boom")
    exported = list(client.iter_display(conv))
    target = conv + "-copy"
    client.save_synthetic(target, message_type="system", content_type="notice", content="before")
    restored = client.restore_display(target, exported)
    assert [r.seq for r in restored] == [2, 3]  # seqs continue after the target's records
    for original, copy in zip(exported, restored):
        a, b = original.to_dict(), copy.to_dict()
        for place in ("conversation_id", "seq"):
            a.pop(place), b.pop(place)
        assert a == b
    # Plain dicts (e.g. read from a file) work too.
    more = client.restore_display(target, [{"message_type": "system", "content_type": "notice", "content": {"x": 1},
                                            "created_at": 1, "updated_at": 2}])
    assert more[0].seq == 4 and (more[0].created_at, more[0].updated_at) == (1, 2)
