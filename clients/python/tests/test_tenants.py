"""Tenant isolation: two tokens (acme, globex) never see each other's data."""

from __future__ import annotations

import pytest

from stowage_client import DisplayEvent, NewMessage, NotFound, StowageClient


@pytest.fixture
def globex(server):
    with StowageClient(server.url, server.other_token) as c:
        yield c


def test_conversations_are_invisible_across_tenants(client: StowageClient, globex: StowageClient, conv: str) -> None:
    client.append(conv, [NewMessage.user("acme secret")], create_if_missing=True, meta={"title": "acme"})
    client.save_synthetic(conv, message_type="system", content_type="notice", content="acme display")

    assert client.get_conversation(conv).scope.tenant == "acme"
    with pytest.raises(NotFound):
        globex.get_conversation(conv)
    with pytest.raises(NotFound):
        globex.load_all(conv)
    with pytest.raises(NotFound):
        globex.load(conv)
    with pytest.raises(NotFound):
        globex.append(conv, [NewMessage.user("intrusion")])
    with pytest.raises(NotFound):
        globex.pop(conv)
    with pytest.raises(NotFound):
        globex.truncate(conv, 0)
    with pytest.raises(NotFound):
        globex.replace(conv, [])
    assert globex.list_display(conv).records == []
    assert conv not in {c.id for c in globex.iter_conversations()}
    assert globex.delete_conversation(conv) is False  # answers like a missing conversation

    # The same id in the other tenant is another conversation.
    globex.append(conv, [NewMessage.user("globex data")], create_if_missing=True, meta={"title": "globex"})
    assert globex.get_conversation(conv).scope.tenant == "globex"
    assert [m.content for m in globex.load_all(conv)] == ["globex data"]
    assert [m.content for m in client.load_all(conv)] == ["acme secret"]
    assert client.get_conversation(conv).title == "acme"
    assert [r.content for r in client.list_display(conv)] == ["acme display"]
    assert conv in {c.id for c in client.iter_conversations()}


def test_tool_cards_and_events_do_not_cross_tenants(client: StowageClient, globex: StowageClient, conv: str) -> None:
    client.save_display_message(conv, {"role": "assistant", "parts": [
        {"type": "tool_call", "id": "call_t", "name": "f", "arguments": "{}"}]})
    with pytest.raises(NotFound):
        globex.update_tool_status(conv, "call_t", "executing")

    with globex.events() as theirs, client.events(conv) as ours:
        client.save_synthetic(conv, message_type="system", content_type="notice", content="for acme")
        globex.save_synthetic(conv, message_type="system", content_type="notice", content="for globex")
        # The acme event was published first; globex's scope stream still sees only its own.
        first_seen_by_globex = next(iter(theirs))
        first_seen_by_acme = next(iter(ours))
    assert isinstance(first_seen_by_globex, DisplayEvent)
    assert first_seen_by_globex.record.content == "for globex"
    assert first_seen_by_globex.record.scope.tenant == "globex"
    assert first_seen_by_acme.record.content == "for acme"
