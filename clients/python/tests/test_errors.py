"""Error mapping (real server answers and the whole code table), timeouts and the retry policy."""

from __future__ import annotations

import json
from typing import List

import httpx
import pytest

import stowage_client.errors as errors
from stowage_client import (
    APIError,
    ClientTimeout,
    Conflict,
    InvalidInput,
    InvalidJson,
    MethodNotAllowed,
    NewMessage,
    NoRoute,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServerError,
    StowageClient,
    TransportError,
    Unauthorized,
    Unavailable,
    UnsupportedMediaType,
)


def test_bad_or_missing_tokens_are_unauthorized(server, conv: str) -> None:
    for token in ["wrong-token-0123456789", ""]:
        with StowageClient(server.url, token or None, max_retries=0) as c:
            if not token:
                c._config.token = None  # no Authorization header at all
            with pytest.raises(Unauthorized) as e:
                c.list_conversations()
            assert e.value.status == 401 and e.value.code == "unauthorized"
            assert "Authorization" in e.value.message
            # Unauthenticated endpoints still answer.
            assert c.health().ok


def test_not_found_and_bad_input_carry_the_server_message(client: StowageClient, conv: str) -> None:
    with pytest.raises(NotFound) as nf:
        client.load_all(conv)
    assert (nf.value.status, nf.value.code) == (404, "not_found")
    client.open_conversation(conv)
    with pytest.raises(InvalidInput) as bad:
        client.load(conv, limit=0)
    assert bad.value.status == 400 and "limit" in bad.value.message
    with pytest.raises(InvalidJson) as js:
        client.append(conv, [{"role": "robot", "parts": []}])
    assert js.value.code == "invalid_json" and js.value.message.startswith("messages[0]")
    assert isinstance(js.value, InvalidInput)
    with pytest.raises(InvalidInput) as control:
        client.open_conversation("bad\u0001id")
    assert "control character" in control.value.message
    with pytest.raises(InvalidInput):
        client.append(conv, [NewMessage(role="assistant", parts=[{"type": "tool_call", "id": "", "name": "f",
                                                                   "arguments": "{}"}])])
    with pytest.raises(errors.InvalidCursor):
        client.list_conversations(cursor="not-a-cursor")


def test_conflicts_and_payload_limits(client: StowageClient, conv: str) -> None:
    client.append(conv, [NewMessage.user("x")], create_if_missing=True)
    with pytest.raises(Conflict) as c:
        client.append(conv, [NewMessage.user("y")], expected_version=99)
    assert c.value.details == {"expected": 99, "actual": 1}
    with pytest.raises(PayloadTooLarge) as big:
        client.append(conv, [NewMessage.user("x" * (2 << 20))])  # the test server allows 1 MiB
    assert big.value.status == 413


def test_raw_server_refusals_map_to_their_classes(server) -> None:
    headers = {"Authorization": f"Bearer {server.token}"}
    with httpx.Client(base_url=server.url, headers=headers) as raw:
        cases = [
            (raw.get("/v1/nothing-here"), NoRoute, 404),
            (raw.patch("/v1/conversations"), MethodNotAllowed, 405),
            (raw.put("/v1/conversations/x", content=b'{"title":"t"}', headers={"Content-Type": "text/plain"}),
             UnsupportedMediaType, 415),
            (raw.post("/v1/conversations/x/messages", content=b"{not json", headers={"Content-Type": "application/json"}),
             InvalidJson, 400),
        ]
        for response, cls, status in cases:
            error = errors.error_from_response(response.status_code, response.content, response.headers)
            assert type(error) is cls and error.status == status and error.message, (response.text, cls)


def test_every_documented_code_has_a_class(client: StowageClient) -> None:
    codes = client.openapi()["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"]
    for code in codes:
        assert code in errors._BY_CODE, code
    expected = {
        "not_found": (NotFound, 404), "conflict": (Conflict, 409), "invalid_transition": (errors.InvalidTransition, 409),
        "too_many_requests": (RateLimited, 429), "overloaded": (Unavailable, 503), "shutting_down": (Unavailable, 503),
        "timeout": (errors.GatewayTimeout, 504), "storage": (ServerError, 500), "unsupported": (errors.Unsupported, 501),
        "access_denied": (errors.AccessDenied, 403),
    }
    for code, (cls, status) in expected.items():
        body = json.dumps({"error": {"code": code, "message": f"m-{code}"}}).encode()
        error = errors.error_from_response(status, body, {"retry-after": "2"})
        assert type(error) is cls and error.message == f"m-{code}" and error.retry_after == 2.0
    # Codes a newer server may add fall back on the status; non-envelope bodies keep their text.
    assert type(errors.error_from_response(503, b'{"error":{"code":"brand_new","message":"m"}}')) is Unavailable
    assert type(errors.error_from_response(422, b"")) is InvalidInput
    proxy = errors.error_from_response(502, b"<html>Bad gateway</html>")
    assert type(proxy) is ServerError and "Bad gateway" in proxy.message and proxy.code == "http_502"
    assert "not_found (404): nope" == str(errors.error_from_response(404, b'{"error":{"code":"not_found","message":"nope"}}'))


def test_unreachable_server_is_a_transport_error() -> None:
    with StowageClient("http://127.0.0.1:9", "t", max_retries=1) as c:
        with pytest.raises(TransportError) as e:
            c.list_conversations()
    assert e.value.sent is False and not isinstance(e.value, APIError)


# ---------------------------------------------------------------- retry policy (scripted transport)


class Script:
    """An httpx transport answering from a list; records the requests."""

    def __init__(self, answers: List[object]) -> None:
        self.answers = list(answers)
        self.requests: List[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[return-value]


def scripted(script: Script, **kwargs) -> StowageClient:
    http = httpx.Client(transport=httpx.MockTransport(script))
    return StowageClient("http://stowage.test", "tok", http_client=http, **kwargs)


def envelope(status: int, code: str, retry_after: str = "0") -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": code}}, headers={"Retry-After": retry_after})


DELETED = httpx.Response(200, json={"deleted": True})
APPENDED = httpx.Response(200, json={"ids": ["a"], "seqs": [1], "stored": 1, "version": 1})


def test_refusals_are_retried_after_retry_after() -> None:
    script = Script([envelope(429, "too_many_requests"), envelope(503, "overloaded"), DELETED])
    assert scripted(script).delete_conversation("c") is True
    assert len(script.requests) == 3
    assert script.requests[0].headers["authorization"] == "Bearer tok"


def test_retries_give_up_after_max_retries() -> None:
    script = Script([envelope(429, "too_many_requests")] * 2)
    with pytest.raises(RateLimited) as e:
        scripted(script, max_retries=1).delete_conversation("c")
    assert e.value.retry_after == 0.0 and len(script.requests) == 2


def test_ambiguous_failures_are_retried_only_when_safe() -> None:
    # An append carries one Idempotency-Key across attempts: retried after a read timeout and a 504.
    script = Script([httpx.ReadTimeout("slow"), envelope(504, "timeout"), APPENDED])
    out = scripted(script).append("c", [NewMessage.user("x")])
    assert out.stored == 1 and len(script.requests) == 3
    keys = {r.headers["idempotency-key"] for r in script.requests}
    assert len(keys) == 1 and next(iter(keys)).startswith("py-")
    # A pop is not idempotent: a read timeout is not retried (it may have popped).
    script = Script([httpx.ReadTimeout("slow"), httpx.Response(200, json={"messages": []})])
    with pytest.raises(ClientTimeout):
        scripted(script).pop("c")
    assert len(script.requests) == 1
    # ... but a connection that was never made is.
    script = Script([httpx.ConnectError("refused"), httpx.Response(200, json={"messages": []})])
    assert not scripted(script).pop("c")
    # Without a key (and without ids) an append is not retried after an ambiguous failure.
    script = Script([httpx.ReadTimeout("slow"), APPENDED])
    with pytest.raises(ClientTimeout):
        scripted(script, auto_idempotency_keys=False).append("c", [NewMessage.user("x")])
    assert "idempotency-key" not in script.requests[0].headers
    # Other errors are never retried.
    script = Script([envelope(409, "conflict"), DELETED])
    with pytest.raises(Conflict):
        scripted(script).delete_conversation("c")
    assert len(script.requests) == 1


def test_answers_that_are_not_the_api_raise_protocol_errors() -> None:
    script = Script([httpx.Response(200, text="<html>captive portal</html>")])
    with pytest.raises(errors.ProtocolError) as e:
        scripted(script).get_conversation("c")
    assert e.value.status == 200 and "captive" in e.value.body
    script = Script([httpx.Response(200, json={"unexpected": True})])
    with pytest.raises(errors.ProtocolError):
        scripted(script).get_conversation("c")


def test_per_client_options_are_sent() -> None:
    script = Script([DELETED, DELETED])
    base = scripted(script, headers={"X-Trace": "1"})
    base.delete_conversation("c")
    base.with_options(user="ünïcode", token="other", headers={"X-More": "2"}).delete_conversation("c")
    first, second = script.requests
    assert "stowage-user" not in first.headers and first.headers["x-trace"] == "1"
    raw = {k.lower(): v for k, v in second.headers.raw}
    assert raw[b"stowage-user"] == "ünïcode".encode("utf-8")  # UTF-8 on the wire, as the server reads it
    assert second.headers["authorization"] == "Bearer other"
    assert (second.headers["x-trace"], second.headers["x-more"]) == ("1", "2")
    assert first.headers["user-agent"].startswith("stowage-client-python/")
