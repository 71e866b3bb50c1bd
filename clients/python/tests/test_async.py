"""The async client: the same surface as the sync one, every method against the server."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from stowage_client import (
    AsyncStowageClient,
    Conflict,
    InvalidTransition,
    NewMessage,
    NotFound,
    StowageClient,
    ToolCallPart,
    Unauthorized,
)


def _public(cls) -> dict:
    return {n: getattr(cls, n) for n in dir(cls) if not n.startswith("_")}


def test_sync_and_async_clients_have_the_same_surface() -> None:
    sync, aio = _public(StowageClient), _public(AsyncStowageClient)
    assert set(sync) - {"close"} <= set(aio) and set(aio) - {"aclose", "close"} <= set(sync)
    for name, method in sync.items():
        if not callable(method) or name == "close":
            continue
        other = aio[name]
        assert inspect.signature(method).parameters.keys() == inspect.signature(other).parameters.keys(), name
        assert other.__doc__, name
        assert method.__doc__, name
        io = name not in ("events", "with_options")
        if io and not name.startswith("iter_"):
            assert inspect.iscoroutinefunction(other), name
        if name.startswith("iter_"):
            assert inspect.isasyncgenfunction(other), name


async def test_every_async_method(aclient: AsyncStowageClient, conv: str) -> None:
    assert (await aclient.health()).ok
    assert "paths" in await aclient.openapi()
    assert "stowage_" in await aclient.metrics()

    info = await aclient.open_conversation(conv, title="async", metadata={"a": 1})
    assert info.title == "async" and (await aclient.create_conversation(conv)).title == "async"
    assert (await aclient.get_conversation(conv)).metadata == {"a": 1}
    renamed = await aclient.update_conversation(conv, title="renamed", metadata=None)
    assert (renamed.title, renamed.metadata) == ("renamed", None)
    assert (await aclient.get_conversation(conv)).to_dict() == renamed.to_dict()
    with pytest.raises(NotFound):
        await aclient.update_conversation(conv + "-missing", title="x")

    out = await aclient.append(conv, [NewMessage.user(f"m{i}") for i in range(5)], idempotency_key="k1")
    retry = await aclient.append(conv, [NewMessage.user(f"m{i}") for i in range(5)], idempotency_key="k1")
    assert out.stored == 5 and retry.stored == 0 and retry.seqs == out.seqs
    with pytest.raises(Conflict):
        await aclient.append(conv, [NewMessage.user("x")], expected_version=0)

    page = await aclient.load(conv, limit=2)
    assert [m.seq for m in page] == [4, 5]
    assert [m.seq for m in await aclient.load(conv, limit=2, cursor=page.next_cursor)] == [2, 3]
    assert [m.seq for m in await aclient.load(conv, after=3)] == [4, 5]
    assert [m.seq async for m in aclient.iter_messages(conv, page_size=2)] == [1, 2, 3, 4, 5]
    assert [m["content"] for m in (await aclient.load_all(conv, format="openai", mode="pure"))] == [
        "m0", "m1", "m2", "m3", "m4"]

    assert (await aclient.truncate(conv, 4)).removed == 1
    popped = await aclient.pop(conv)
    assert popped[0].content == "m3"
    version = await aclient.replace(conv, [NewMessage.user("only")])
    assert version == (await aclient.get_conversation(conv)).version
    assert [m.content for m in await aclient.load_all(conv)] == ["only"]

    records = await aclient.save_display_message(
        conv, NewMessage(role="assistant", parts=[ToolCallPart("call_a", "f", "{}")]))
    assert records[0].status == "pending"
    assert (await aclient.update_tool_status(conv, "call_a", "executing")).changed
    with pytest.raises(InvalidTransition):
        await aclient.resolve_tool_result(conv, "call_a", "x")
    await aclient.update_tool_status(conv, "call_a", "interrupted")
    assert (await aclient.resolve_tool_result(conv, "call_a", "late")).card.status == "completed"
    synthetic = await aclient.save_synthetic(conv, message_type="system", content_type="notice", content="n")
    assert synthetic.seq == 2
    assert [r.seq for r in (await aclient.list_display(conv, limit=1))] == [1]
    exported = [r async for r in aclient.iter_display(conv)]
    restored = await aclient.restore_display(conv + "-copy", exported)
    assert [r.content for r in restored] == [r.content for r in exported]

    listed = [c.id async for c in aclient.iter_conversations(page_size=500)]
    assert conv in listed and conv + "-copy" not in listed  # display records alone make no conversation
    assert (await aclient.list_conversations(limit=1)).conversations

    assert await aclient.delete_conversation(conv) is True
    with pytest.raises(NotFound):
        await aclient.get_conversation(conv)


async def test_async_clients_run_concurrently_and_share_options(server, aclient: AsyncStowageClient, conv: str) -> None:
    await aclient.open_conversation(conv)
    outcomes = await asyncio.gather(
        *(aclient.append(conv, [NewMessage.user(f"c{i}")]) for i in range(10))
    )
    assert sorted(o.seqs[0] for o in outcomes) == list(range(1, 11))
    alice = aclient.with_options(user="alice-async")
    with pytest.raises(NotFound):
        await alice.get_conversation(conv)
    async with AsyncStowageClient(server.url, "bad-token-0123456789") as bad:
        with pytest.raises(Unauthorized):
            await bad.list_conversations()
