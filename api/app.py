"""The gateway: ``create_app(settings)`` builds a FastAPI app with its own clients and metrics.

Every error leaves as ``{"error": {"code", "message", "detail"?}}``: 400 malformed JSON / UTF-8 /
headers, 401/403 auth, 404 unknown ids and routes, 409 conflicts, 413 bodies over
``settings.max_request_bytes`` (checked on Content-Length and on the bytes streamed), 422
validation (unknown kind or field), 429 limits with Retry-After, 503 Redis unavailable.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import redis.asyncio as aioredis
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from redis.exceptions import RedisError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.auth import ApiKeys
from api.deps import AppState
from api.errors import ApiError
from api.keyspace import Keyspace
from api.kinds import JobKind, load_kinds
from api.metrics import ApiMetrics
from api.queue import JobQueue
from api.routes import batches, deadletters, health, jobs, keys, metrics
from api.schemas import V1_ERRORS
from api.store import build_store
from sorryless.config import Settings
from sorryless.logging import get_logger

log = get_logger(__name__)
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def _error_response(
    status: int, code: str, message: str, detail: Any = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        ApiError(status, code, message, detail=detail).body(), status_code=status, headers=headers
    )


class BodyGuard:
    """Refuse bodies over the limit (413) or not valid UTF-8 (400) before any route parses them."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self._app = app
        self._max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _BODY_METHODS:
            await self._app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                await _error_response(400, "invalid_content_length", "Content-Length is not a number")(
                    scope, receive, send
                )
                return
            if declared > self._max_bytes:
                await self._too_large(scope, receive, send)
                return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > self._max_bytes:
                await self._too_large(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        try:
            bytes(body).decode("utf-8")
        except UnicodeDecodeError as exc:
            await _error_response(400, "invalid_utf8", f"the body is not valid UTF-8 (byte {exc.start})")(
                scope, receive, send
            )
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self._app(scope, replay, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _error_response(
            413,
            "payload_too_large",
            f"the body exceeds {self._max_bytes} bytes",
            detail={"max_bytes": self._max_bytes},
        )(scope, receive, send)


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers or None)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{k: v for k, v in e.items() if k in ("type", "loc", "msg")} for e in exc.errors()]
        if any(e.get("type") == "json_invalid" for e in errors):
            return _error_response(400, "invalid_json", "the body is not valid JSON", errors)
        return _error_response(422, "invalid_request", "the request does not validate", errors)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return _error_response(exc.status_code, code, str(exc.detail), headers=dict(exc.headers or {}))

    @app.exception_handler(RedisError)
    async def _redis(_: Request, exc: RedisError) -> JSONResponse:
        log.warning("redis unavailable", error=str(exc))
        return _error_response(503, "redis_unavailable", "Redis is unavailable", headers={"Retry-After": "5"})

    @app.exception_handler(Exception)
    async def _internal(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error", exc_info=exc)
        return _error_response(500, "internal_error", "internal error")


def create_app(settings: Settings | None = None, *, kinds: dict[str, JobKind] | None = None) -> FastAPI:
    """A gateway app for ``settings`` (default: from the environment) serving ``kinds``."""
    settings = settings or Settings()
    kinds = kinds if kinds is not None else load_kinds()
    redis = aioredis.Redis.from_url(settings.redis_url, decode_responses=True)
    store, events = build_store(settings, redis)
    keyspace = Keyspace(settings.redis_key_prefix)
    state = AppState(
        settings=settings,
        keyspace=keyspace,
        redis=redis,
        store=store,
        events=events,
        queue=JobQueue(settings, on_finish=store.reconcile),
        keys=ApiKeys(redis, keyspace, settings),
        kinds=kinds,
        metrics=ApiMetrics(),
        http=httpx.AsyncClient(timeout=httpx.Timeout(5.0, connect=2.0)),
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        await state.http.aclose()
        await state.queue.aclose()
        await redis.aclose()

    app = FastAPI(
        title="sorryless",
        version="0.1.0",
        summary="Lean 4 theorem proving as a service: verified proofs with a certificate.",
        lifespan=lifespan,
    )
    app.state.sorryless = state
    app.add_middleware(BodyGuard, max_bytes=settings.max_request_bytes)
    _install_error_handlers(app)
    for router in (jobs.build_router(kinds), batches.build_router(kinds), keys.router, deadletters.router):
        app.include_router(router, responses=V1_ERRORS)
    app.include_router(health.router)
    app.include_router(metrics.router)
    return app
