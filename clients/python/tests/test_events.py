"""Display events over SSE: live events, Last-Event-ID resume, events_lost, refusals, reconnection."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from stowage_client import (
    AsyncStowageClient,
    DisplayEvent,
    EventsLost,
    InvalidLastEventId,
    NewMessage,
    StowageClient,
    TextPart,
    ToolCallPart,
    TransportError,
    Unauthorized,
)
from stowage_client.events import SSEDecoder

from .conftest import start_server, stop_server


def _seq(event_id: str) -> int:
    epoch, _, n = event_id.partition("-")
    assert epoch and all(c in "0123456789abcdef" for c in epoch)
    return int(n)


def test_saved_and_updated_records_arrive_as_events(client: StowageClient, conv: str) -> None:
    with client.events(conv) as stream:
        records = client.save_display_message(
            conv, NewMessage(role="assistant", parts=[TextPart("hi"), ToolCallPart("call_1", "f", "{}")]),
            agent_id="agent-9",
        )
        client.update_tool_status(conv, "call_1", "executing")
        events = iter(stream)
        saved_text, saved_card, updated = next(events), next(events), next(events)
    assert all(isinstance(e, DisplayEvent) for e in (saved_text, saved_card, updated))
    assert [e.event for e in (saved_text, saved_card, updated)] == [
        "display_message_saved", "display_message_saved", "display_message_updated",
    ]
    assert saved_text.record == records[0] and saved_card.record == records[1]
    assert saved_text.agent_id == "agent-9" and saved_text.conversation_id == conv
    assert updated.record.status == "executing" and updated.record.seq == records[1].seq
    ids = [e.id for e in (saved_text, saved_card, updated)]
    assert [_seq(i) for i in ids] == [_seq(ids[0]), _seq(ids[0]) + 1, _seq(ids[0]) + 2]
    assert stream.last_event_id == ids[-1]
    assert stream.closed


def test_last_event_id_resumes_after_the_given_event(client: StowageClient, conv: str) -> None:
    with client.events(conv) as stream:
        for i in range(3):
            client.save_synthetic(conv, message_type="system", content_type="notice", content={"i": i})
        events = iter(stream)
        first = next(events)
        seen = [first] + [next(events) for _ in range(2)]
    # A new stream that resumes after the first event replays the other two, then goes live.
    with client.events(conv, last_event_id=first.id) as resumed:
        replay = iter(resumed)
        again = [next(replay), next(replay)]
        client.save_synthetic(conv, message_type="system", content_type="notice", content={"i": 3})
        live = next(replay)
    assert [e.id for e in again] == [e.id for e in seen[1:]]
    assert [e.record.content for e in again] == [{"i": 1}, {"i": 2}]
    assert live.record.content == {"i": 3} and _seq(live.id) == _seq(seen[-1].id) + 1


def test_scope_stream_sees_every_conversation_and_conversation_streams_filter(server, conv: str) -> None:
    # A user of its own: the scope stream holds this test's events only.
    with StowageClient(server.url, server.token, user=f"events-{uuid.uuid4().hex}") as c:
        with c.events() as everything, c.events(conv + "-b") as only_b:
            c.save_synthetic(conv + "-a", message_type="system", content_type="notice", content="to a")
            c.save_synthetic(conv + "-b", message_type="system", content_type="notice", content="to b")
            all_events = iter(everything)
            a, b = next(all_events), next(all_events)
            b_only = next(iter(only_b))
    assert (a.conversation_id, b.conversation_id) == (conv + "-a", conv + "-b")
    assert b_only.conversation_id == conv + "-b" and b_only.id == b.id


def test_an_id_from_another_epoch_yields_events_lost(client: StowageClient, conv: str) -> None:
    client.save_synthetic(conv, message_type="system", content_type="notice", content="before")
    with client.events(conv, last_event_id="0123456789abcdef-7") as stream:
        events = iter(stream)
        lost = next(events)
        assert isinstance(lost, EventsLost)
        assert lost.code == "events_lost" and lost.last_event_id == "0123456789abcdef-7" and lost.message
        assert stream.last_event_id == lost.id  # where the stream continues
        client.save_synthetic(conv, message_type="system", content_type="notice", content="after")
        after = next(events)
    assert isinstance(after, DisplayEvent) and after.record.content == "after"
    assert _seq(after.id) == _seq(lost.id) + 1


def test_bad_last_event_ids_and_tokens_are_refused(server, client: StowageClient, conv: str) -> None:
    for bad in ["12", "zz-1", "abc-x"]:
        with pytest.raises(InvalidLastEventId) as e:
            client.events(conv, last_event_id=bad).connect()
        assert e.value.status == 400
    with StowageClient(server.url, "not-a-valid-token-at-all") as intruder:
        with pytest.raises(Unauthorized):
            with intruder.events():
                pass


def test_sse_decoder_follows_the_event_stream_rules() -> None:
    decoder = SSEDecoder()
    lines = [": keep-alive", "event: x", "id: e-1", "data: {\"a\":", "data:1}", "retry: 500", "", "", "data: plain",
             "unknown: field", ""]
    events = [e for e in (decoder.feed(line) for line in lines) if e is not None]
    assert [(e.event, e.id, e.data, e.retry) for e in events] == [
        ("x", "e-1", '{"a":\n1}', 500), ("message", None, "plain", None),
    ]


def test_streams_reconnect_and_resume_after_a_server_restart(tmp_path: Path) -> None:
    """A private server: stop it mid-stream, start it again on the same port."""
    running = start_server(tmp_path)
    port = running.url.rsplit(":", 1)[1]
    conv = "restart-" + uuid.uuid4().hex[:6]
    with StowageClient(running.url, running.token) as c:
        stream = c.events(conv, reconnect=True, max_reconnects=50)
        with stream:
            events = iter(stream)
            c.save_synthetic(conv, message_type="system", content_type="notice", content="one")
            first = next(events)
            assert isinstance(first, DisplayEvent) and stream.last_event_id == first.id
            assert stop_server(running) == 0  # graceful shutdown ends the stream
            restarted = start_server(tmp_path, listen=f"127.0.0.1:{port}")
            try:
                # The stream reconnects on its own with Last-Event-ID; the new
                # process has a new epoch, so it cannot prove nothing was lost.
                lost = next(events)
                assert isinstance(lost, EventsLost) and lost.last_event_id == first.id
                c.save_synthetic(conv, message_type="system", content_type="notice", content="two")
                second = next(events)
                assert isinstance(second, DisplayEvent) and second.record.content == "two"
                # The history survived the restart.
                assert [r.content for r in c.list_display(conv)] == ["one", "two"]
            finally:
                stop_server(restarted)
        # Without reconnect, a stream whose server is gone fails with a transport error.
        with pytest.raises(TransportError) as e:
            c.events(conv).connect()
        assert e.value.sent is False


async def test_async_streams(aclient: AsyncStowageClient, conv: str) -> None:
    async with aclient.events(conv) as stream:
        await aclient.save_synthetic(conv, message_type="system", content_type="notice", content="async")
        await aclient.save_display_message(conv, NewMessage.assistant("x"))
        received = []
        async for event in stream:
            received.append(event)
            if len(received) == 2:
                break
    assert [e.record.content for e in received] == ["async", {"text": "x"}]
    async with aclient.events(conv, last_event_id=received[0].id) as resumed:
        async for event in resumed:
            assert event.id == received[1].id
            break
    with pytest.raises(InvalidLastEventId):
        await aclient.events(conv, last_event_id="nope").connect()
