"""The HTTP service of ``sorryless lean-server``: ``create_app(settings, service=None)``.

Routes:

- ``POST /v1/check``: ``{"snippets": [Snippet...], "priority": "interactive"|"batch", "stream": bool}``.
  ``stream: true`` answers NDJSON (``application/x-ndjson``), one Certificate JSON per line in
  completion order (a bare newline is a keep-alive while nothing finished for a while);
  otherwise ``{"results": [Certificate...]}`` in request order.
- ``POST /api/check``, ``POST /verify``: Kimina Lean Server compatible (lean_server/kimina.py).
- ``GET /health``: 200 when a Lean backend can check, else 503 with the reason.
- ``GET /metrics``: Prometheus exposition of this app's own registry.

Every route but ``/health`` and ``/metrics`` needs ``Authorization: Bearer KEY`` (or Kimina's
``X-Auth-Token``) when ``settings.lean_server_api_key`` is set. Bad input is answered 4xx with
``{"detail": ...}``; 429 with ``Retry-After`` only when the pool's backlog limit is reached.
The app's lifespan starts the :class:`LeanService` and closes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal, Protocol

import orjson
from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from lean_server.checker import BacklogFull, CheckerUnavailable, LeanError, Priority, Snippet
from lean_server.http_util import (
    CLIENT_CLOSED_REQUEST,
    JSON_MEDIA_TYPE,
    NDJSON_MEDIA_TYPE,
    ClientGone,
    HttpError,
    check_auth,
    check_code,
    error_response,
    json_response,
    read_json_object,
    retry_after_header,
    unless_disconnected,
)
from lean_server.kimina import KiminaRoutes, RawResultLike
from lean_server.metrics import CONTENT_TYPE, LeanMetrics, as_mapping
from lean_server.policy import resolve_policy
from lean_server.verdict import Certificate, EnvironmentStamp, TierResult, Verdict, content_hash
from sorryless.config import Settings
from sorryless.logging import get_logger

_log = get_logger(__name__)

HEARTBEAT_S = 15.0  # a bare "\n" on an NDJSON stream after this long without a certificate


class LeanServiceLike(Protocol):
    """What the app needs from ``lean_server.service.LeanService``."""

    def check(
        self, snippets: Sequence[Snippet], *, priority: Priority = ...
    ) -> AsyncIterator[Certificate]: ...

    async def run_raw(
        self,
        code: str,
        *,
        timeout_s: float,
        priority: Priority,
        infotree: str | None = None,
        reservation: Any = None,
        use_cache: bool = False,
    ) -> RawResultLike: ...

    async def start(self) -> None: ...

    async def aclose(self) -> None: ...

    def health(self) -> Any: ...

    def stats(self) -> Any: ...


class CheckBody(BaseModel):
    """Body of ``POST /v1/check``."""

    model_config = ConfigDict(extra="forbid")

    snippets: list[Snippet] = Field(min_length=1, description="Snippets to check; ids must be unique.")
    priority: Literal["interactive", "batch"] = Field(default="interactive")
    stream: bool = Field(default=False, description="NDJSON, one certificate per line as each finishes.")


def create_app(settings: Settings, service: LeanServiceLike | None = None) -> FastAPI:
    """The lean-server app. Its lifespan starts ``service`` (a new LeanService by default) and closes it."""
    if service is None:
        from lean_server.service import LeanService

        service = LeanService(settings)
    pool: LeanServiceLike = service
    metrics = LeanMetrics(stats_source=pool.stats)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            await pool.start()
        except LeanError as exc:  # keep serving: /health says why nothing can be checked
            _log.warning("lean service did not start", error=str(exc))
        try:
            yield
        finally:
            await pool.aclose()

    public_docs = settings.lean_server_api_key is None  # with a key, only /health and /metrics are open
    app = FastAPI(
        title="sorryless lean-server",
        summary="Lean 4 checks with a certificate; Kimina Lean Server compatible.",
        lifespan=lifespan,
        docs_url="/docs" if public_docs else None,
        redoc_url=None,
        openapi_url="/openapi.json" if public_docs else None,
    )
    app.state.settings = settings
    app.state.service = pool
    app.state.metrics = metrics
    v1 = _V1Routes(settings, pool, metrics)
    kimina = KiminaRoutes(settings, pool, metrics)

    async def health(_: Request) -> Response:
        return _health_response(pool)

    async def metrics_route(_: Request) -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    # Plain Starlette routes: no FastAPI dependency solving or response models on the hot path.
    app.router.routes.extend(
        [
            Route("/v1/check", v1.check, methods=["POST"]),
            Route("/api/check", kimina.check, methods=["POST"]),
            Route("/api/check/", kimina.check, methods=["POST"], include_in_schema=False),
            Route("/verify", kimina.verify, methods=["POST"]),
            Route("/one_pass_verify_batch", kimina.verify, methods=["POST"], include_in_schema=False),
            Route("/health", health, methods=["GET"]),
            Route("/metrics", metrics_route, methods=["GET"]),
        ]
    )

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        _log.exception("unhandled error", path=request.url.path)
        return json_response({"detail": f"internal error: {type(exc).__name__}"}, 500)

    return app


def _health_response(pool: LeanServiceLike) -> Response:
    try:
        report = as_mapping(pool.health())
    except Exception as exc:
        return json_response({"status": "unavailable", "reason": f"health check failed: {exc}"}, 503)
    reason = _unavailable_reason(report)
    body: dict[str, Any] = {**report, "status": "ok" if reason is None else "unavailable"}
    if reason is not None:
        body["reason"] = reason
    return Response(
        orjson.dumps(body, default=str),
        status_code=200 if reason is None else 503,
        media_type=JSON_MEDIA_TYPE,
    )


def _unavailable_reason(report: dict[str, Any]) -> str | None:
    """Why no snippet can be checked now, or None when a backend can check."""
    if "available" in report:
        return None if report["available"] else str(report.get("reason") or "no Lean backend is available")
    if report.get("status") != "ok":
        return str(
            report.get("reason") or "no Lean backend is configured (no REPL command, no `lean` executable)"
        )
    backends = report.get("backends")
    primary = report.get("primary")
    if isinstance(backends, dict) and isinstance(primary, str):
        argv = as_mapping(backends.get(primary)).get("argv")
        if isinstance(argv, list) and argv and shutil.which(str(argv[0])) is None:
            return f"the {primary} backend's command is not an executable: {argv[0]}"
    return None


class _V1Routes:
    """``POST /v1/check``."""

    def __init__(self, settings: Settings, service: LeanServiceLike, metrics: LeanMetrics) -> None:
        self._service = service
        self._metrics = metrics
        self._api_key = settings.lean_server_api_key
        self._max_code_bytes = settings.lean_max_code_bytes
        self._max_body_bytes = max(settings.max_request_bytes, 64 * settings.lean_max_code_bytes)

    async def check(self, request: Request) -> Response:
        try:
            check_auth(request, self._api_key)
            body = self._parse(await read_json_object(request, self._max_body_bytes))
            priority = Priority.BATCH if body.priority == "batch" else Priority.INTERACTIVE
            if body.stream:
                response = await self._stream(request, body.snippets, priority)
            else:
                certs = await unless_disconnected(request, self._collect(body.snippets, priority))
                response = Response(
                    b'{"results":[' + b",".join(c.model_dump_json().encode() for c in certs) + b"]}",
                    media_type=JSON_MEDIA_TYPE,
                )
        except HttpError as exc:
            self._metrics.request_done("v1_check", exc.status)
            return error_response(exc)
        except ClientGone:
            self._metrics.request_done("v1_check", CLIENT_CLOSED_REQUEST)
            return error_response(HttpError(CLIENT_CLOSED_REQUEST, "Client disconnected"))
        self._metrics.request_done("v1_check", 200)
        return response

    def _parse(self, data: dict[str, Any]) -> CheckBody:
        try:
            body = CheckBody.model_validate(data)
        except ValidationError as exc:
            raise HttpError(422, orjson.loads(exc.json(include_url=False, include_context=False))) from None
        ids = [s.id for s in body.snippets]
        if len(set(ids)) != len(ids):
            raise HttpError(422, "`snippets` must have unique ids")
        for index, snippet in enumerate(body.snippets):
            check_code(snippet.code, self._max_code_bytes, f"snippets[{index}]")
            if snippet.stub is not None:
                check_code(snippet.stub, self._max_code_bytes, f"snippets[{index}].stub")
            if snippet.policy is not None or snippet.policy_overrides:
                _check_policy(snippet, f"snippets[{index}]")
        return body

    async def _collect(self, snippets: list[Snippet], priority: Priority) -> list[Certificate]:
        """Every certificate, in request order."""
        by_id: dict[str, Certificate] = {}
        iterator = self._service.check(snippets, priority=priority)
        try:
            async for cert in iterator:
                self._metrics.observe_certificate(cert)
                by_id[cert.id] = cert
        except BacklogFull as exc:
            raise HttpError(429, str(exc), retry_after_header(exc.retry_after)) from None
        except CheckerUnavailable as exc:
            if not by_id:
                raise HttpError(503, str(exc)) from None
            _fill_missing(by_id, snippets, f"lean backend unavailable: {exc}")
        except LeanError as exc:
            _fill_missing(by_id, snippets, f"lean server error: {exc}")
        finally:
            await _aclose(iterator)
        _fill_missing(by_id, snippets, "the checker returned no certificate for this snippet")
        return [by_id[s.id] for s in snippets]

    async def _stream(self, request: Request, snippets: list[Snippet], priority: Priority) -> Response:
        """NDJSON; the first certificate is awaited before answering so that 429/503 can still be sent."""
        iterator = self._service.check(snippets, priority=priority)
        try:
            first = await unless_disconnected(request, anext(iterator, None))
        except BacklogFull as exc:
            await _aclose(iterator)
            raise HttpError(429, str(exc), retry_after_header(exc.retry_after)) from None
        except CheckerUnavailable as exc:
            await _aclose(iterator)
            raise HttpError(503, str(exc)) from None
        except BaseException:
            await _aclose(iterator)
            raise
        return StreamingResponse(
            self._lines(first, iterator, snippets),
            media_type=NDJSON_MEDIA_TYPE,
            headers={"Cache-Control": "no-store"},
        )

    async def _lines(
        self, first: Certificate | None, iterator: AsyncIterator[Certificate], snippets: list[Snippet]
    ) -> AsyncIterator[bytes]:
        sent: set[str] = set()
        pending: asyncio.Future[Certificate] | None = None
        try:
            cert = first
            while cert is not None:
                self._metrics.observe_certificate(cert)
                sent.add(cert.id)
                yield cert.model_dump_json().encode() + b"\n"
                pending = asyncio.ensure_future(anext(iterator))
                while not pending.done():
                    done, _ = await asyncio.wait((pending,), timeout=HEARTBEAT_S)
                    if not done:
                        yield b"\n"
                try:
                    cert = pending.result()
                except StopAsyncIteration:
                    cert = None
                pending = None
        except LeanError as exc:
            for missing in snippets:
                if missing.id not in sent:
                    yield (
                        _infra_certificate(missing, f"lean server error: {exc}").model_dump_json().encode()
                        + b"\n"
                    )
            return
        finally:
            if pending is not None and not pending.done():
                pending.cancel()
                with contextlib.suppress(BaseException):
                    await pending
            await _aclose(iterator)
        for missing in snippets:
            if missing.id not in sent:
                reason = "the checker returned no certificate for this snippet"
                yield _infra_certificate(missing, reason).model_dump_json().encode() + b"\n"


def _check_policy(snippet: Snippet, where: str) -> None:
    """422 when the snippet's policy name or overrides do not make a valid policy."""
    try:
        resolve_policy(snippet.policy, snippet.policy_overrides)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'policy'}: {err['msg']}" for err in exc.errors()
        )
        raise HttpError(422, f"{where}: invalid policy_overrides: {problems}") from None
    except ValueError as exc:
        raise HttpError(422, f"{where}: invalid policy: {exc}") from None


async def _aclose(iterator: AsyncIterator[Certificate]) -> None:
    close = getattr(iterator, "aclose", None)
    if close is not None:
        with contextlib.suppress(Exception):
            await close()


def _fill_missing(by_id: dict[str, Certificate], snippets: list[Snippet], reason: str) -> None:
    for snippet in snippets:
        if snippet.id not in by_id:
            by_id[snippet.id] = _infra_certificate(snippet, reason)


def _infra_certificate(snippet: Snippet, reason: str) -> Certificate:
    """An INFRA_ERROR certificate for a snippet the service gave no answer for."""
    tier = TierResult(tier="compile", ok=False, verdict=Verdict.INFRA_ERROR, reasons=[reason])
    return Certificate(
        id=snippet.id,
        verdict=Verdict.INFRA_ERROR,
        reasons=[reason],
        tiers=[tier],
        statement_hash=content_hash(snippet.stub) if snippet.stub is not None else None,
        proof_hash=content_hash(snippet.code),
        environment=EnvironmentStamp(backend="none"),
    )
