"""Typed exceptions mapped from the server's error envelope.

The server answers every error with ``{"error": {"code": ..., "message": ...,
"details"?: {...}}}``. The ``code`` is a stable machine code (see the OpenAPI
document, ``components.schemas.Error``); this module maps each code to an
exception class, falling back on the HTTP status for codes this client does not
know yet. Every :class:`APIError` carries the server's ``code``, ``message``,
``details``, the HTTP ``status`` and, where the server sent one, ``retry_after``
(seconds).

Hierarchy::

    StowageError
    ├── TransportError            the request did not get an answer
    │   └── ClientTimeout         … because a client-side timeout expired
    ├── ProtocolError             the answer was not what the API promises
    └── APIError                  the server answered with an error envelope
        ├── InvalidInput (400)        invalid_input and every other 400 code:
        │   ├── InvalidCursor             invalid_cursor
        │   ├── InvalidJson               invalid_json
        │   ├── UnsupportedFormat         unsupported_format
        │   ├── InvalidIdempotencyKey     invalid_idempotency_key
        │   └── InvalidLastEventId        invalid_last_event_id
        ├── Unauthorized (401)
        ├── AccessDenied (403)
        ├── NotFound (404)            not_found
        │   └── NoRoute                   no_route (a client/server version mismatch)
        ├── MethodNotAllowed (405)
        ├── Conflict (409)            conflict: ``expected`` / ``actual`` versions
        │   └── InvalidTransition         invalid_transition: ``from_status`` / ``to_status``
        ├── PayloadTooLarge (413)
        ├── UnsupportedMediaType (415)
        ├── RateLimited (429)         too_many_requests
        ├── ServerError (500)         storage, integrity, adapter_*, internal, …
        ├── Unsupported (501)
        ├── Unavailable (503)         unhealthy, overloaded, closed, shutting_down
        └── GatewayTimeout (504)      timeout, adapter_timeout (the operation may still complete)
"""

from __future__ import annotations

import json
from typing import Any, Dict, Optional, Type

__all__ = [
    "StowageError",
    "TransportError",
    "ClientTimeout",
    "ProtocolError",
    "APIError",
    "InvalidInput",
    "InvalidCursor",
    "InvalidJson",
    "UnsupportedFormat",
    "InvalidIdempotencyKey",
    "InvalidLastEventId",
    "Unauthorized",
    "AccessDenied",
    "NotFound",
    "NoRoute",
    "MethodNotAllowed",
    "Conflict",
    "InvalidTransition",
    "PayloadTooLarge",
    "UnsupportedMediaType",
    "RateLimited",
    "ServerError",
    "Unsupported",
    "Unavailable",
    "GatewayTimeout",
    "error_from_response",
]


class StowageError(Exception):
    """Base class of every error this client raises."""


class TransportError(StowageError):
    """The request got no answer (connection refused or reset, DNS, TLS, …).

    Whether the server acted on the request is unknown unless the failure
    happened before the request was sent (``sent`` is False then).
    """

    def __init__(self, message: str, *, sent: bool = True) -> None:
        super().__init__(message)
        #: Whether the request may have reached the server.
        self.sent = sent


class ClientTimeout(TransportError):
    """A client-side timeout expired (connect, read, write or pool)."""


class ProtocolError(StowageError):
    """The server's answer does not match the API (e.g. not JSON where JSON is due)."""

    def __init__(self, message: str, *, status: Optional[int] = None, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class APIError(StowageError):
    """The server answered with an error envelope.

    Attributes:
        status: The HTTP status code.
        code: The server's stable machine code (e.g. ``"not_found"``).
        message: The server's human-readable message.
        details: Machine-readable extras, or None.
        retry_after: Seconds from the ``Retry-After`` header, or None.
    """

    #: The HTTP status this class stands for (informational).
    default_status: int = 0

    def __init__(
        self,
        message: str,
        *,
        status: int,
        code: str,
        details: Optional[Dict[str, Any]] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.retry_after = retry_after

    def __str__(self) -> str:
        return f"{self.code} ({self.status}): {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, message={self.message!r})"


class InvalidInput(APIError):
    """400: the request or its input was refused (every 400 code subclasses this)."""

    default_status = 400


class InvalidCursor(InvalidInput):
    """400 ``invalid_cursor``: a paging cursor this store did not issue."""


class InvalidJson(InvalidInput):
    """400 ``invalid_json``: the body is not the JSON the route expects."""


class UnsupportedFormat(InvalidInput):
    """400 ``unsupported_format``: ``format=`` names no known transcript format."""


class InvalidIdempotencyKey(InvalidInput):
    """400 ``invalid_idempotency_key``: the key is not 1–255 visible ASCII characters."""


class InvalidLastEventId(InvalidInput):
    """400 ``invalid_last_event_id``: ``Last-Event-ID`` is not an id this server sent."""


class Unauthorized(APIError):
    """401: a missing, malformed or unknown bearer token."""

    default_status = 401


class AccessDenied(APIError):
    """403 ``access_denied``: the store refused the operation."""

    default_status = 403


class NotFound(APIError):
    """404 ``not_found``: no such conversation (or tool call) in this scope.

    Another tenant's conversation answers exactly like a missing one.
    """

    default_status = 404


class NoRoute(NotFound):
    """404 ``no_route``: the server has no such route (client newer than server?)."""


class MethodNotAllowed(APIError):
    """405 ``method_not_allowed``."""

    default_status = 405


class Conflict(APIError):
    """409 ``conflict``: ``expected_version`` did not match.

    ``expected`` and ``actual`` are the versions from the server's details.
    """

    default_status = 409

    @property
    def expected(self) -> Optional[int]:
        """The version the request expected."""
        return (self.details or {}).get("expected")

    @property
    def actual(self) -> Optional[int]:
        """The conversation's actual version."""
        return (self.details or {}).get("actual")


class InvalidTransition(Conflict):
    """409 ``invalid_transition``: a tool card cannot move to that status."""

    @property
    def from_status(self) -> Optional[str]:
        """The card's current status."""
        return (self.details or {}).get("from")

    @property
    def to_status(self) -> Optional[str]:
        """The status the request asked for."""
        return (self.details or {}).get("to")


class PayloadTooLarge(APIError):
    """413 ``payload_too_large``: the body exceeds the server's ``max_body_bytes``."""

    default_status = 413


class UnsupportedMediaType(APIError):
    """415 ``unsupported_media_type``: the body is not ``application/json``."""

    default_status = 415


class RateLimited(APIError):
    """429 ``too_many_requests``: this tenant has too many requests or streams open."""

    default_status = 429


class ServerError(APIError):
    """500: the adapter, its storage or the server failed."""

    default_status = 500


class Unsupported(APIError):
    """501 ``unsupported``: the store's adapter does not support the operation."""

    default_status = 501


class Unavailable(APIError):
    """503: the store is unhealthy, overloaded or closed, or the server is shutting down."""

    default_status = 503


class GatewayTimeout(APIError):
    """504 ``timeout`` / ``adapter_timeout``: the server gave up waiting.

    The operation may still complete; retry appends with the same message ids or
    ``Idempotency-Key``.
    """

    default_status = 504


_BY_CODE: Dict[str, Type[APIError]] = {
    "not_found": NotFound,
    "no_route": NoRoute,
    "conflict": Conflict,
    "invalid_transition": InvalidTransition,
    "invalid_input": InvalidInput,
    "invalid_cursor": InvalidCursor,
    "invalid_json": InvalidJson,
    "unsupported_format": UnsupportedFormat,
    "invalid_idempotency_key": InvalidIdempotencyKey,
    "invalid_last_event_id": InvalidLastEventId,
    "unsupported": Unsupported,
    "access_denied": AccessDenied,
    "unauthorized": Unauthorized,
    "method_not_allowed": MethodNotAllowed,
    "unsupported_media_type": UnsupportedMediaType,
    "payload_too_large": PayloadTooLarge,
    "too_many_requests": RateLimited,
    "timeout": GatewayTimeout,
    "adapter_timeout": GatewayTimeout,
    "unhealthy": Unavailable,
    "overloaded": Unavailable,
    "closed": Unavailable,
    "shutting_down": Unavailable,
    "storage": ServerError,
    "integrity": ServerError,
    "adapter_memory_limit": ServerError,
    "adapter_trap": ServerError,
    "contract_violation": ServerError,
    "swap_rejected": ServerError,
    "adapter_load": ServerError,
    "config": ServerError,
    "internal": ServerError,
}

_BY_STATUS: Dict[int, Type[APIError]] = {
    400: InvalidInput,
    401: Unauthorized,
    403: AccessDenied,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    422: InvalidInput,
    429: RateLimited,
    501: Unsupported,
    503: Unavailable,
    504: GatewayTimeout,
}


def _class_for(status: int, code: str) -> Type[APIError]:
    cls = _BY_CODE.get(code)
    if cls is not None:
        return cls
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return ServerError
    if 400 <= status < 500:
        return InvalidInput
    return APIError


def _retry_after(value: Optional[str]) -> Optional[float]:
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None  # an HTTP date: not sent by Stowage; ignored
    return max(seconds, 0.0)


def error_from_response(status: int, body: bytes, headers: Any = None) -> APIError:
    """Builds the exception for an error answer (``status`` >= 400).

    Args:
        status: The HTTP status.
        body: The raw response body.
        headers: The response headers (a mapping; ``Retry-After`` is read).

    Returns:
        The :class:`APIError` subclass for the server's code (or, for a body that
        is not an error envelope — a proxy's page, say — for the status).
    """
    retry_after = _retry_after(headers.get("retry-after") if headers is not None else None)
    code = ""
    message = ""
    details = None
    try:
        envelope = json.loads(body.decode("utf-8")) if body else None
    except (UnicodeDecodeError, ValueError):
        envelope = None
    error = envelope.get("error") if isinstance(envelope, dict) else None
    if isinstance(error, dict):
        code = str(error.get("code") or "")
        message = str(error.get("message") or "")
        if isinstance(error.get("details"), dict):
            details = error["details"]
    if not message:
        text = body.decode("utf-8", "replace").strip() if body else ""
        message = text[:500] or f"HTTP {status}"
    if not code:
        code = f"http_{status}"
    cls = _class_for(status, code)
    return cls(message, status=status, code=code, details=details, retry_after=retry_after)
