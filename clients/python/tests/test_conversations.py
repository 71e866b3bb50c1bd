"""Server endpoints and conversations: health, OpenAPI, metrics, open/info/list/delete, users."""

from __future__ import annotations

import uuid

import pytest

from stowage_client import (
    UNSET,
    ConversationInfo,
    ConversationMeta,
    InvalidInput,
    InvalidJson,
    NewMessage,
    NotFound,
    StowageClient,
)


def test_health_openapi_and_metrics(client: StowageClient) -> None:
    health = client.health()
    assert health.ok and health.status == "ok"
    assert health.store == "main"
    assert health.adapter.status in ("healthy", "degraded")
    assert health.contract_version

    document = client.openapi()
    assert document["openapi"].startswith("3.")
    assert "/v1/conversations/{conversation}/messages" in document["paths"]

    metrics = client.metrics()
    assert "stowage_" in metrics


def test_open_is_find_or_create_with_meta(client: StowageClient, conv: str) -> None:
    info = client.open_conversation(
        conv, agent_id="agent-7", title="Trip planning", metadata={"k": [1, 2.5, None], "s": "é"},
        extra={"myapp": {"x": 1}},
    )
    assert isinstance(info, ConversationInfo)
    assert (info.id, info.agent_id, info.title) == (conv, "agent-7", "Trip planning")
    assert info.metadata == {"k": [1, 2.5, None], "s": "é"}
    assert info.extra == {"myapp": {"x": 1}}
    assert (info.message_count, info.last_seq, info.version) == (0, 0, 0)
    assert info.scope.tenant == "acme" and info.scope.user == ""
    assert info.meta == ConversationMeta(agent_id="agent-7", title="Trip planning",
                                         metadata={"k": [1, 2.5, None], "s": "é"}, extra={"myapp": {"x": 1}})

    # Idempotent: opening again returns it unchanged, the new meta is ignored.
    again = client.create_conversation(conv, title="other title")
    assert again.title == "Trip planning" and again.created_at == info.created_at

    got = client.get_conversation(conv)
    assert got.to_dict() == info.to_dict()


def test_open_accepts_a_meta_object_and_no_meta(client: StowageClient, conv: str) -> None:
    info = client.open_conversation(conv, meta=ConversationMeta(title="from meta"), agent_id="kw wins")
    assert (info.title, info.agent_id) == ("from meta", "kw wins")
    bare = client.open_conversation(conv + "-bare")
    assert bare.title is None and bare.metadata is None


def test_ids_with_reserved_characters_are_encoded(client: StowageClient) -> None:
    suffix = uuid.uuid4().hex[:6]
    for conv in ["a/b", "q?x=1&y#frag", "100% sure", "%2E%2E", "日本語 🚀", "a/../b", "x y+z", ".", ".."]:
        conv = conv if conv in (".", "..") else f"{conv}-{suffix}"
        client.append(conv, [NewMessage.user(conv)], create_if_missing=True)
        assert client.get_conversation(conv).id == conv
        assert client.load_all(conv)[0].content == conv
        assert client.delete_conversation(conv) is True


def test_get_missing_conversation_is_not_found(client: StowageClient, conv: str) -> None:
    with pytest.raises(NotFound) as e:
        client.get_conversation(conv)
    assert e.value.status == 404 and e.value.code == "not_found" and e.value.message


def test_delete_is_idempotent_and_removes_everything(client: StowageClient, conv: str) -> None:
    client.append(conv, [NewMessage.user("hi")], create_if_missing=True)
    client.save_synthetic(conv, message_type="system", content_type="notice", content="x")
    assert client.delete_conversation(conv) is True
    with pytest.raises(NotFound):
        client.get_conversation(conv)
    with pytest.raises(NotFound):
        client.load_all(conv)
    assert client.list_display(conv).records == []
    assert client.delete_conversation(conv) is False


def test_list_pages_by_id(server, conv: str) -> None:
    # A user of its own, so the listing holds exactly these conversations.
    with StowageClient(server.url, server.token, user=f"lister-{conv}") as c:
        ids = sorted(f"{conv}-{i:02d}" for i in range(7))
        for conversation in reversed(ids):
            c.open_conversation(conversation)
        first = c.list_conversations(limit=3)
        assert [i.id for i in first] == ids[:3] and len(first) == 3
        assert first.next_cursor
        second = c.list_conversations(limit=3, cursor=first.next_cursor)
        assert [i.id for i in second] == ids[3:6]
        third = c.list_conversations(limit=3, cursor=second.next_cursor)
        assert [i.id for i in third] == ids[6:] and third.next_cursor is None
        assert [i.id for i in c.iter_conversations(page_size=2)] == ids
        assert [i.id for i in c.list_conversations()] == ids


def test_users_within_a_tenant_are_separate_scopes(client: StowageClient, conv: str) -> None:
    alice = client.with_options(user="alice")
    bob = client.with_options(user="bøb ☃")  # UTF-8 user header
    assert alice.user == "alice" and client.user is None
    alice.append(conv, [NewMessage.user("alice's")], create_if_missing=True)
    bob.append(conv, [NewMessage.user("bob's")], create_if_missing=True)
    assert alice.load_all(conv)[0].content == "alice's"
    assert bob.load_all(conv)[0].content == "bob's"
    assert bob.get_conversation(conv).scope.user == "bøb ☃"
    with pytest.raises(NotFound):
        client.get_conversation(conv)  # the empty user sees neither
    alice.close()  # shares the parent's connections: closing the copy leaves them open
    assert client.health().ok


def test_client_reads_url_and_token_from_the_environment(server, monkeypatch, conv: str) -> None:
    monkeypatch.setenv("STOWAGE_URL", server.url)
    monkeypatch.setenv("STOWAGE_TOKEN", server.token)
    with StowageClient() as c:
        assert c.base_url == server.url.rstrip("/")
        assert c.open_conversation(conv).id == conv
    monkeypatch.delenv("STOWAGE_URL")
    with pytest.raises(ValueError):
        StowageClient()


def test_update_changes_only_the_fields_given(client: StowageClient, conv: str) -> None:
    with pytest.raises(NotFound):
        client.update_conversation(conv, title="nothing to rename")
    created = client.open_conversation(
        conv, agent_id="agent-7", title="Trip", metadata={"k": 1}, extra={"myapp": {"x": 1}}
    )
    client.append(conv, [NewMessage.user("hi")])
    before = client.get_conversation(conv)

    renamed = client.update_conversation(conv, title="Paris in June")
    assert isinstance(renamed, ConversationInfo)
    assert renamed.title == "Paris in June"
    assert (renamed.agent_id, renamed.metadata, renamed.extra) == ("agent-7", {"k": 1}, {"myapp": {"x": 1}})
    assert (renamed.version, renamed.message_count, renamed.updated_at) == (
        before.version, before.message_count, before.updated_at)
    assert renamed.created_at == created.created_at
    assert client.get_conversation(conv).to_dict() == renamed.to_dict()

    # None clears a field; metadata and extra are replaced whole; UNSET is "not given".
    cleared = client.update_conversation(conv, agent_id=None, metadata={"n": [2.5]}, extra=UNSET)
    assert (cleared.agent_id, cleared.title, cleared.metadata) == (None, "Paris in June", {"n": [2.5]})
    assert cleared.extra == {"myapp": {"x": 1}}
    assert client.update_conversation(conv).to_dict() == cleared.to_dict()

    with pytest.raises(InvalidInput) as bad:
        client.update_conversation(conv, extra=[1])  # type: ignore[arg-type]
    assert "extra" in bad.value.message
    assert client.get_conversation(conv).to_dict() == cleared.to_dict()


def test_meta_with_an_unknown_field_is_refused(client: StowageClient, conv: str) -> None:
    with pytest.raises(InvalidJson) as typo:
        client.open_conversation(conv, meta={"titel": "Trip"})
    assert "titel" in typo.value.message
    with pytest.raises(NotFound):
        client.get_conversation(conv)
