"""Message histories: append, replace, load (paging, ranges, orphans), load-all, truncate, pop, formats."""

from __future__ import annotations

import pytest

from stowage_client import (
    Conflict,
    InvalidIdempotencyKey,
    InvalidInput,
    MediaPart,
    Message,
    NewMessage,
    NotFound,
    ProviderPart,
    StowageClient,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    UnsupportedFormat,
    Usage,
)


def texts(messages) -> list:
    return [m.content for m in messages]


def test_append_creates_on_demand_with_meta(client: StowageClient, conv: str) -> None:
    with pytest.raises(NotFound):
        client.append(conv, [NewMessage.user("no conversation yet")])
    out = client.append(
        conv, [NewMessage.user("hi"), NewMessage.assistant("hello")], create_if_missing=True,
        meta={"title": "Greeting", "agent_id": "bot"},
    )
    assert (out.stored, out.seqs, out.version) == (2, [1, 2], 1)
    assert len(out.ids) == 2 and all(out.ids)
    info = client.get_conversation(conv)
    assert (info.title, info.agent_id, info.message_count, info.last_seq, info.version) == ("Greeting", "bot", 2, 2, 1)
    # Appending to an existing conversation needs no flag.
    assert client.append(conv, [NewMessage.user("more")]).seqs == [3]


def test_every_part_kind_and_message_field_round_trips(client: StowageClient, conv: str) -> None:
    sent = [
        NewMessage.system("be brief"),
        NewMessage(role="developer", parts=[TextPart("dev note", extra={"openai": {"name": "x"}})]),
        NewMessage(
            role="user",
            parts=[
                TextPart("look:"),
                MediaPart("image/png", data=bytes([0, 1, 2, 255]), name="dot.png"),
                MediaPart("application/pdf", url="https://example.com/a.pdf"),
            ],
            metadata={"client": {"ip": None, "n": 12345678901234567890, "f": 0.25}},
            created_at=1_700_000_000_000,
            id="user-msg-1",
        ),
        NewMessage(
            role="assistant",
            parts=[
                ThinkingPart("hmm", signature="sig=="),
                ThinkingPart("opaque", redacted=True),
                TextPart("Let me look that up."),
                ToolCallPart("call_1", "search", '{"q": "weather", "n": 1.50}'),
                ProviderPart("anthropic", {"type": "server_tool_use", "id": "s1", "input": {"deep": [1, {"x": None}]}}),
            ],
            usage=Usage(input_tokens=10, output_tokens=20, cached_tokens=5, cost=0.0125),
            stop_reason="tool_use",
        ),
        NewMessage(role="tool", parts=[ToolResultPart("call_1", "sunny", is_error=False),
                                       ToolResultPart("call_2", "boom", is_error=True)]),
    ]
    out = client.append(conv, sent, create_if_missing=True)
    stored = client.load_all(conv).messages
    assert [m.seq for m in stored] == [1, 2, 3, 4, 5]
    assert stored[2].id == "user-msg-1" and out.ids[2] == "user-msg-1"
    for m, s in zip(stored, sent):
        assert isinstance(m, Message)
        new = m.to_new()
        expected = s.to_dict()
        got = new.to_dict()
        if "created_at" not in expected:
            got.pop("created_at")
        if "id" not in expected:
            got.pop("id")
        assert got == expected
    assert stored[2].created_at == 1_700_000_000_000
    media = stored[2].parts[1]
    assert isinstance(media, MediaPart) and media.data == bytes([0, 1, 2, 255])
    assert stored[3].usage == Usage(10, 20, 5, 0.0125) and stored[3].stop_reason == "tool_use"
    # Dicts are accepted as they are, too.
    client.append(conv, [{"role": "user", "parts": [{"type": "text", "text": "as a dict"}]}])
    assert client.load(conv, limit=1).messages[0].content == "as a dict"


def test_ids_and_idempotency_keys_make_appends_retry_safe(client: StowageClient, conv: str) -> None:
    client.open_conversation(conv)
    first = client.append(conv, [NewMessage.user("a"), NewMessage.user("b")], idempotency_key="batch-1")
    retry = client.append(conv, [NewMessage.user("a"), NewMessage.user("b")], idempotency_key="batch-1")
    assert first.stored == 2 and retry.stored == 0
    assert retry.seqs == first.seqs and retry.ids == first.ids
    assert first.ids[0].startswith("idem-") and first.ids[0].endswith("-0")

    own = client.append(conv, [NewMessage.user("c", id="mine-1")])
    again = client.append(conv, [NewMessage.user("c", id="mine-1")])
    assert (own.stored, again.stored, again.seqs) == (1, 0, own.seqs)
    assert texts(client.load_all(conv)) == ["a", "b", "c"]

    with pytest.raises(InvalidIdempotencyKey):
        client.append(conv, [NewMessage.user("d")], idempotency_key="has space")


def test_automatic_idempotency_keys_can_be_turned_off(server, conv: str) -> None:
    with StowageClient(server.url, server.token, auto_idempotency_keys=False) as c:
        out = c.append(conv, [NewMessage.user("x")], create_if_missing=True)
        assert not out.ids[0].startswith("idem-")  # the server's own (UUIDv7) id
    with StowageClient(server.url, server.token) as c:
        out = c.append(conv, [NewMessage.user("y")])
        assert out.ids[0].startswith("idem-")


def test_expected_version_conflicts_carry_the_versions(client: StowageClient, conv: str) -> None:
    v1 = client.append(conv, [NewMessage.user("one")], create_if_missing=True).version
    v2 = client.append(conv, [NewMessage.user("two")], expected_version=v1).version
    assert v2 == v1 + 1
    with pytest.raises(Conflict) as e:
        client.append(conv, [NewMessage.user("stale")], expected_version=v1)
    assert e.value.status == 409 and (e.value.expected, e.value.actual) == (v1, v2)
    with pytest.raises(InvalidInput):
        client.append(conv, [NewMessage.user("x")], create_if_missing=True, expected_version=v2)
    with pytest.raises(InvalidInput):
        client.append(conv, [NewMessage.user("x")], meta={"title": "only with create_if_missing"})


def test_replace_renumbers_and_checks_versions(client: StowageClient, conv: str) -> None:
    client.append(conv, [NewMessage.user(t) for t in "abc"], create_if_missing=True)
    info = client.get_conversation(conv)
    version = client.replace(conv, [NewMessage.user("x"), NewMessage.assistant("y")], expected_version=info.version)
    assert version > info.version
    stored = client.load_all(conv).messages
    assert [(m.seq, m.content) for m in stored] == [(1, "x"), (2, "y")]
    with pytest.raises(Conflict):
        client.replace(conv, [], expected_version=info.version)
    # Stored messages go back as they are (same ids), e.g. to drop one.
    client.replace(conv, [stored[1].to_new()])
    assert [(m.id, m.seq) for m in client.load_all(conv)] == [(stored[1].id, 1)]
    assert client.replace(conv, []) > version
    assert client.get_conversation(conv).message_count == 0
    with pytest.raises(NotFound):
        client.replace(conv + "-missing", [NewMessage.user("x")])


def test_load_pages_backward_forward_and_by_range(client: StowageClient, conv: str) -> None:
    client.append(conv, [NewMessage.user(f"m{i}") for i in range(1, 8)], create_if_missing=True)
    latest = client.load(conv, limit=3)
    assert [m.seq for m in latest] == [5, 6, 7] and latest.next_cursor
    older = client.load(conv, limit=3, cursor=latest.next_cursor)
    assert [m.seq for m in older] == [2, 3, 4]
    oldest = client.load(conv, limit=3, cursor=older.next_cursor)
    assert [m.seq for m in oldest] == [1] and oldest.next_cursor is None

    forward = client.load(conv, limit=3, after=2)
    assert [m.seq for m in forward] == [3, 4, 5]
    rest = client.load(conv, limit=3, cursor=forward.next_cursor)
    assert [m.seq for m in rest] == [6, 7] and rest.next_cursor is None

    assert [m.seq for m in client.load(conv, limit=2, before=5)] == [3, 4]
    assert [m.seq for m in client.load(conv)] == list(range(1, 8))  # default limit 50
    assert [m.seq for m in client.iter_messages(conv, page_size=2)] == list(range(1, 8))
    assert [m.seq for m in client.iter_messages(conv, after=5)] == [6, 7]
    with pytest.raises(ValueError):
        client.load(conv, after=1, before=3)
    with pytest.raises(NotFound):
        client.load(conv + "-missing")


def test_orphaned_tool_calls_can_be_stripped_or_synthesized(client: StowageClient, conv: str) -> None:
    client.append(
        conv,
        [NewMessage.user("go"), NewMessage(role="assistant", parts=[ToolCallPart("call_x", "slow_tool", "{}")])],
        create_if_missing=True,
    )
    kept = client.load(conv)
    assert len(kept) == 2
    stripped = client.load(conv, orphans="strip")
    assert stripped.repairs is not None and stripped.repairs.policy == "strip"
    assert [(c.call_id, c.name) for c in stripped.repairs.orphaned_calls] == [("call_x", "slow_tool")]
    assert all(not isinstance(p, ToolCallPart) for m in stripped for p in m.parts)
    synthesized = client.load(conv, orphans="synthesize")
    results = [p for m in synthesized for p in m.parts if isinstance(p, ToolResultPart)]
    assert [r.call_id for r in results] == ["call_x"]
    assert len(client.load_all(conv)) == 2  # a view: storage unchanged


def test_truncate_and_pop(client: StowageClient, conv: str) -> None:
    client.append(conv, [NewMessage.user(t) for t in "abcde"], create_if_missing=True)
    out = client.truncate(conv, 3)
    assert out.removed == 2
    assert texts(client.load_all(conv)) == ["a", "b", "c"]
    assert client.truncate(conv, 10).removed == 0
    popped = client.pop(conv)
    assert len(popped) == 1 and popped[0].content == "c" and popped[0].seq == 3
    assert texts(client.load_all(conv)) == ["a", "b"]
    v = client.get_conversation(conv).version
    with pytest.raises(Conflict):
        client.truncate(conv, 0, expected_version=v - 1)
    assert client.truncate(conv, 0, expected_version=v).removed == 2
    assert not client.pop(conv)  # empty: nothing to pop
    with pytest.raises(NotFound):
        client.pop(conv + "-missing")
    with pytest.raises(NotFound):
        client.truncate(conv + "-missing", 0)
    with pytest.raises(ValueError):
        client.truncate(conv, -1)


def test_cuts_never_separate_a_tool_call_from_its_result(client: StowageClient, conv: str) -> None:
    client.append(
        conv,
        [
            NewMessage.user("weather?"),
            NewMessage(role="assistant", parts=[ToolCallPart("call_w", "weather", "{}")]),
            NewMessage.tool_result("call_w", "sunny"),
        ],
        create_if_missing=True,
    )
    with pytest.raises(InvalidInput) as e:
        client.truncate(conv, 2)
    assert "call_w" in e.value.message
    with pytest.raises(InvalidInput):
        client.pop(conv)  # the result is the newest message; its call would stay
    assert client.truncate(conv, 1).removed == 2


def test_provider_formats_in_and_out(client: StowageClient, conv: str) -> None:
    chat = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather in Paris?"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "w", "arguments": "{\"c\":\"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "assistant", "content": "Sunny.", "refusal": None},
    ]
    client.append(conv, chat, format="openai", create_if_missing=True)
    stored = client.load_all(conv).messages
    assert [m.role for m in stored] == ["system", "user", "assistant", "tool", "assistant"]
    assert isinstance(stored[2].parts[0], ToolCallPart) and stored[2].parts[0].arguments == '{"c":"Paris"}'

    keep = client.load_all(conv, format="openai").messages
    assert [{k: v for k, v in m.items() if k != "x_stowage"} for m in keep] == chat
    assert all("x_stowage" in m for m in keep)
    pure = client.load_all(conv, format="openai", mode="pure").messages
    assert pure == chat and not any("x_stowage" in m for m in pure)

    anthropic = client.load_all(conv, format="anthropic", mode="pure")
    # Single Anthropic messages have no slot for the system prompt: pure leaves it out and says so.
    assert [d.count for d in anthropic.dropped] == [1] and "system" in anthropic.dropped[0].what
    assert anthropic.messages[1]["content"][0] == {"type": "tool_use", "id": "call_1", "name": "w", "input": {"c": "Paris"}}
    page = client.load(conv, limit=2, format="openai-responses", mode="pure")
    assert page.messages == [
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        {"role": "assistant", "content": "Sunny."},
    ]
    ui = client.load_all(conv, format="ai-sdk-ui").messages
    assert ui and all("parts" in m for m in ui)
    popped = client.pop(conv, format="anthropic", mode="pure")
    assert popped.messages == [{"role": "assistant", "content": "Sunny."}]


def test_pure_mode_reports_what_it_left_out(client: StowageClient, conv: str) -> None:
    client.append(
        conv,
        [NewMessage.user("q"), NewMessage(role="assistant", parts=[ThinkingPart("unsigned"), TextPart("a")])],
        create_if_missing=True,
    )
    out = client.load_all(conv, format="anthropic", mode="pure")
    assert out.dropped and out.dropped[0].count == 1 and "thinking" in out.dropped[0].what
    with pytest.raises(InvalidInput):
        client.load_all(conv, mode="pure")  # pure applies to provider formats only
    with pytest.raises(UnsupportedFormat) as e:
        client.load_all(conv, format="xml")  # type: ignore[arg-type]
    assert "openai-responses" in e.value.message
    with pytest.raises(UnsupportedFormat):
        client.append(conv, [{}], format="OpenAI")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput) as bad:
        client.append(conv, [{"x": 1}], format="openai-responses")
    assert bad.value.message.startswith("messages[0]")
