"""Small HTTP helpers shared by lean-server's routes: auth, body reading, JSON replies.

The hot routes do not use FastAPI's body models: they read the raw body, parse it with orjson,
validate by hand and reply with pre-serialised bytes. That keeps the server's CPU per snippet
well under a millisecond (see benchmarks/bench_lean_server.py).
"""

from __future__ import annotations

import asyncio
import hmac
import math
from collections.abc import Awaitable, Mapping
from typing import Any, TypeVar

import orjson
from starlette.requests import Request
from starlette.responses import Response

from sorryless.errors import SorrylessError

JSON_MEDIA_TYPE = "application/json"
NDJSON_MEDIA_TYPE = "application/x-ndjson"
CLIENT_CLOSED_REQUEST = 499  # nginx's (and Kimina's) status for a client that went away

_T = TypeVar("_T")


class HttpError(SorrylessError):
    """A request that must be answered with ``status`` and ``{"detail": detail}``."""

    def __init__(self, status: int, detail: Any, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(str(detail))
        self.status = status
        self.detail = detail
        self.headers = dict(headers) if headers else None


class ClientGone(SorrylessError):
    """The client disconnected before its answer was ready."""


def json_response(payload: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return Response(orjson.dumps(payload), status_code=status, headers=headers, media_type=JSON_MEDIA_TYPE)


def error_response(error: HttpError) -> Response:
    return json_response({"detail": error.detail}, error.status, error.headers)


def retry_after_header(retry_after: float) -> dict[str, str]:
    """``Retry-After`` in whole seconds (HTTP allows no fractions), at least 1."""
    seconds = 1 if not math.isfinite(retry_after) else max(1, math.ceil(retry_after))
    return {"Retry-After": str(seconds)}


def check_auth(request: Request, api_key: str | None) -> None:
    """Accept ``Authorization: Bearer KEY`` or Kimina's ``X-Auth-Token: [Bearer ]KEY``."""
    if api_key is None:
        return
    headers = request.headers
    raw = headers.get("authorization") or headers.get("x-auth-token")
    if not raw:
        raise HttpError(401, "Missing API key", {"WWW-Authenticate": "Bearer"})
    token = raw.strip()
    if token[:7].lower() == "bearer ":
        token = token[7:].strip()
    if not hmac.compare_digest(token.encode("utf-8", "surrogateescape"), api_key.encode("utf-8")):
        raise HttpError(401, "Invalid API key", {"WWW-Authenticate": "Bearer"})


async def read_json_object(request: Request, max_bytes: int) -> dict[str, Any]:
    """The request body as a JSON object; 413 when too big, 400 when not UTF-8 JSON, 422 when not an object."""
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > max_bytes:
        raise HttpError(413, f"request body over {max_bytes} bytes")
    body = await request.body()
    if len(body) > max_bytes:
        raise HttpError(413, f"request body over {max_bytes} bytes")
    if not body:
        raise HttpError(400, "empty request body: expected a JSON object")
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise HttpError(400, f"request body is not valid UTF-8 JSON: {exc}") from None
    if not isinstance(data, dict):
        raise HttpError(422, "request body must be a JSON object")
    return data


def reject_unknown_fields(obj: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = obj.keys() - allowed
    if unknown:
        raise HttpError(
            422,
            f"unknown field(s) in {where}: {', '.join(sorted(unknown))} (allowed: {', '.join(sorted(allowed))})",
        )


def check_code(code: object, max_bytes: int, where: str) -> str:
    """A non-empty code string of at most ``max_bytes`` UTF-8 bytes."""
    if not isinstance(code, str):
        raise HttpError(422, f"{where}: code must be a string")
    if not code.strip():
        raise HttpError(422, f"{where}: code is empty")
    # A str of n codepoints has at most 4n UTF-8 bytes: only encode when it could be too big.
    if len(code) * 4 > max_bytes and len(code.encode("utf-8", "surrogatepass")) > max_bytes:
        raise HttpError(413, f"{where}: code over {max_bytes} bytes")
    return code


async def unless_disconnected(request: Request, work: Awaitable[_T]) -> _T:
    """Await ``work``; if the client goes away first, cancel it and raise :class:`ClientGone`.

    Must be called after the body has been read: the next ``receive()`` then only returns
    on disconnect (uvicorn) or once the response is complete. No polling, so no added latency.
    """
    work_future = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(request.receive())
    try:
        done, _ = await asyncio.wait((work_future, watcher), return_when=asyncio.FIRST_COMPLETED)
        if work_future in done:
            return work_future.result()
        message = watcher.result()
        if message.get("type") == "http.disconnect":
            work_future.cancel()
            raise ClientGone("client disconnected")
        return await work_future
    except asyncio.CancelledError:
        work_future.cancel()
        raise
    finally:
        if not watcher.done():
            watcher.cancel()
