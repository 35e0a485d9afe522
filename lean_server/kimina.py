"""Kimina Lean Server compatible routes: ``POST /api/check`` and ``POST /verify``.

Request and response shapes are Kimina Lean Server 2.0's (docs/lean-repl.md), so
``kimina-client`` and existing evaluation scripts work unchanged:

- ``/api/check`` (also ``/api/check/``): ``{"snippets": [{"id", "code"}], "timeout": 30,
  "debug": false, "reuse": true, "infotree": null}`` -> ``{"results": [{"id", "time",
  "response" | "error"}]}`` in request order, exactly one of ``response``/``error`` per item.
- ``/verify`` (also ``/one_pass_verify_batch``): ``{"codes": [{"custom_id", "proof" | "code"}],
  "timeout": 300, "infotree_type": null, "disable_cache": false}`` -> ``{"results":
  [{"custom_id", "error", "response": {...REPL fields..., "time"}}]}``.

``/verify`` honours ``disable_cache``: when false (the default, as in Kimina) identical codes of
one request run once and responses come from (and go to) the result cache that ``/v1/check``
uses (LRU + Redis, under their own keys; errors are never cached); when true every code runs.
``/api/check`` never caches (it has no such field).

Differences that only make things stricter or safer: unknown fields, empty code and
duplicate ids answer 422; every snippet runs on a pristine header environment (no leak between
header-less requests); ``reuse`` is accepted and ignored (there is nothing to reuse unsafely);
``time`` is the whole server-side time of the snippet (wait + import + check), not only the
pipe round trip. ``infotree`` / ``infotree_type`` go to the REPL request as its ``infotree``
option. A request is admitted whole (all its snippets at once) or answered 429 (with
``Retry-After``) before any of it runs, only when the pool's backlog limit is reached.

These routes are the hot path: no pydantic models, orjson in and out.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import Response

from lean_server.checker import BacklogFull, LeanError, Priority
from lean_server.http_util import (
    CLIENT_CLOSED_REQUEST,
    ClientGone,
    HttpError,
    check_auth,
    check_code,
    error_response,
    json_response,
    read_json_object,
    reject_unknown_fields,
    retry_after_header,
    unless_disconnected,
)
from lean_server.metrics import LeanMetrics
from sorryless.config import Settings

_CHECK_FIELDS = frozenset({"snippets", "timeout", "debug", "reuse", "infotree"})
_SNIPPET_FIELDS = frozenset({"id", "code"})
_VERIFY_FIELDS = frozenset({"codes", "timeout", "infotree_type", "disable_cache"})
_CODE_FIELDS = frozenset({"custom_id", "proof", "code"})
_INFOTREE_LEVELS = frozenset({"full", "tactics", "original", "substantive"})
_CHECK_DEFAULT_TIMEOUT = 30.0
_VERIFY_DEFAULT_TIMEOUT = 300.0
_COMPAT_PRIORITY = Priority.BATCH


class RawResultLike(Protocol):
    """What ``LeanService.run_raw`` returns: the REPL response (positions mapped back) or an error."""

    @property
    def response(self) -> dict[str, Any] | None: ...

    @property
    def error(self) -> str | None: ...

    @property
    def time(self) -> float: ...


class RawRunner(Protocol):
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


class KiminaRoutes:
    """The two Kimina endpoints bound to one service; ``check``/``verify`` are Starlette endpoints."""

    def __init__(self, settings: Settings, service: RawRunner, metrics: LeanMetrics) -> None:
        self._service = service
        self._metrics = metrics
        self._api_key = settings.lean_server_api_key
        self._max_code_bytes = settings.lean_max_code_bytes
        self._max_body_bytes = max(settings.max_request_bytes, 64 * settings.lean_max_code_bytes)
        self._default_timeout = settings.lean_check_timeout_s

    # -- endpoints ------------------------------------------------------------------------
    async def check(self, request: Request) -> Response:
        try:
            check_auth(request, self._api_key)
            data = await read_json_object(request, self._max_body_bytes)
            items, timeout_s, debug, infotree = self._parse_check(data)
            codes = [code for _, code in items]
            raws = await unless_disconnected(request, self._run_all(codes, timeout_s, infotree))
        except HttpError as exc:
            return self._fail(exc, "api_check")
        except ClientGone:
            return self._fail(HttpError(CLIENT_CLOSED_REQUEST, "Client disconnected"), "api_check")
        results = [
            _check_item(snippet_id, raw, debug) for (snippet_id, _), raw in zip(items, raws, strict=True)
        ]
        self._metrics.request_done("api_check", 200)
        return json_response({"results": results})

    async def verify(self, request: Request) -> Response:
        try:
            check_auth(request, self._api_key)
            data = await read_json_object(request, self._max_body_bytes)
            items, timeout_s, infotree, disable_cache = self._parse_verify(data)
            codes = [code for _, code in items]
            raws = await unless_disconnected(
                request, self._run_all(codes, timeout_s, infotree, use_cache=not disable_cache)
            )
        except HttpError as exc:
            return self._fail(exc, "verify")
        except ClientGone:
            return self._fail(HttpError(CLIENT_CLOSED_REQUEST, "Client disconnected"), "verify")
        results = [_verify_item(custom_id, raw) for (custom_id, _), raw in zip(items, raws, strict=True)]
        self._metrics.request_done("verify", 200)
        return json_response({"results": results})

    # -- running --------------------------------------------------------------------------
    async def _run_all(
        self, codes: Sequence[str], timeout_s: float, infotree: str | None, *, use_cache: bool = False
    ) -> list[RawResultLike | str]:
        """One result per code, in order; a per-snippet LeanError becomes its error text.

        The whole batch is admitted at once (``reserve``) or answered 429 before any snippet runs.
        ``use_cache``: identical codes run once, through the result cache.
        """
        if use_cache:
            unique = list(dict.fromkeys(codes))
            if len(unique) < len(codes):
                results = await self._run_all(unique, timeout_s, infotree, use_cache=True)
                by_code = dict(zip(unique, results, strict=True))
                return [by_code[code] for code in codes]
        options: dict[str, Any] = {"infotree": infotree} if infotree else {}
        if use_cache:
            options["use_cache"] = True
        reserve = getattr(self._service, "reserve", None)
        if reserve is not None:
            try:
                options["reservation"] = reserve(len(codes))
            except BacklogFull as exc:
                raise _backlog_full(exc) from None
        try:
            if len(codes) == 1:
                return [await self._run_one(codes[0], timeout_s, options)]
            tasks = [asyncio.ensure_future(self._run_one(code, timeout_s, options)) for code in codes]
            try:
                return list(await asyncio.gather(*tasks))
            except BaseException:
                for task in tasks:
                    task.cancel()
                raise
        finally:
            reservation = options.get("reservation")
            if reservation is not None:
                reservation.release()

    async def _run_one(self, code: str, timeout_s: float, options: dict[str, Any]) -> RawResultLike | str:
        try:
            raw = await self._service.run_raw(code, timeout_s=timeout_s, priority=_COMPAT_PRIORITY, **options)
        except BacklogFull as exc:
            raise _backlog_full(exc) from None
        except LeanError as exc:
            self._metrics.compat_errors.inc()
            return f"Lean server error: {exc}"
        self._metrics.observe_raw(raw.time)
        return raw

    def _fail(self, exc: HttpError, route: str) -> Response:
        self._metrics.request_done(route, exc.status)
        return error_response(exc)

    # -- parsing --------------------------------------------------------------------------
    def _timeout(self, value: object, default: float, field: str) -> float:
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise HttpError(422, f"{field} must be a number >= 0")
        return float(value) if value > 0 else self._default_timeout

    def _parse_check(self, data: dict[str, Any]) -> tuple[list[tuple[str, str]], float, bool, str | None]:
        reject_unknown_fields(data, _CHECK_FIELDS, "request")
        snippets = data.get("snippets")
        if not isinstance(snippets, list) or not snippets:
            raise HttpError(422, "`snippets` must be a non-empty list")
        timeout_s = self._timeout(
            data.get("timeout", _CHECK_DEFAULT_TIMEOUT), _CHECK_DEFAULT_TIMEOUT, "timeout"
        )
        debug = data.get("debug", False)
        reuse = data.get("reuse", True)
        if not isinstance(debug, bool) or not isinstance(reuse, bool):
            raise HttpError(422, "`debug` and `reuse` must be booleans")
        infotree = data.get("infotree")
        if infotree is not None and infotree not in _INFOTREE_LEVELS:
            raise HttpError(422, f"`infotree` must be null or one of {sorted(_INFOTREE_LEVELS)}")
        items: list[tuple[str, str]] = []
        seen: set[str] = set()
        max_bytes = self._max_code_bytes
        for index, snippet in enumerate(snippets):
            where = f"snippets[{index}]"
            if not isinstance(snippet, dict):
                raise HttpError(422, f"{where} must be an object with `id` and `code`")
            if len(snippet) != 2 or "id" not in snippet or "code" not in snippet:
                reject_unknown_fields(snippet, _SNIPPET_FIELDS, where)
                raise HttpError(422, f"{where} needs both `id` and `code`")
            snippet_id = snippet["id"]
            if not isinstance(snippet_id, str):
                raise HttpError(422, f"{where}.id must be a string")
            if snippet_id in seen:
                raise HttpError(422, "`snippets` must have unique ids")
            seen.add(snippet_id)
            items.append((snippet_id, check_code(snippet["code"], max_bytes, where)))
        return items, timeout_s, debug, infotree

    def _parse_verify(self, data: dict[str, Any]) -> tuple[list[tuple[str, str]], float, str | None, bool]:
        reject_unknown_fields(data, _VERIFY_FIELDS, "request")
        codes = data.get("codes")
        if not isinstance(codes, list):
            raise HttpError(422, "`codes` must be a list")
        timeout_s = self._timeout(
            data.get("timeout", _VERIFY_DEFAULT_TIMEOUT), _VERIFY_DEFAULT_TIMEOUT, "timeout"
        )
        infotree = data.get("infotree_type")
        if infotree is not None and infotree not in _INFOTREE_LEVELS:
            raise HttpError(422, f"`infotree_type` must be null or one of {sorted(_INFOTREE_LEVELS)}")
        disable_cache = data.get("disable_cache", False)
        if not isinstance(disable_cache, bool):
            raise HttpError(422, "`disable_cache` must be a boolean")
        items: list[tuple[str, str]] = []
        for index, entry in enumerate(codes):
            where = f"codes[{index}]"
            if not isinstance(entry, dict):
                raise HttpError(422, f"{where} must be an object with `custom_id` and `proof` or `code`")
            reject_unknown_fields(entry, _CODE_FIELDS, where)
            custom_id = entry.get("custom_id")
            if isinstance(custom_id, bool) or not isinstance(custom_id, str | int):
                raise HttpError(422, f"{where}.custom_id must be a string or an integer")
            content = entry.get("proof")
            if content is None:
                content = entry.get("code")
            if content is None:
                raise HttpError(422, f"{where} has no `proof` or `code`")
            items.append((str(custom_id), check_code(content, self._max_code_bytes, where)))
        return items, timeout_s, infotree, disable_cache


def _backlog_full(exc: BacklogFull) -> HttpError:
    return HttpError(
        429, "No available REPLs: verification backlog is full", retry_after_header(exc.retry_after)
    )


def _check_item(snippet_id: str, raw: RawResultLike | str, debug: bool) -> dict[str, Any]:
    if isinstance(raw, str):
        return {"id": snippet_id, "time": 0.0, "error": raw}
    item: dict[str, Any] = {"id": snippet_id, "time": raw.time}
    if raw.error is not None or raw.response is None:
        item["error"] = _error_text(raw)
    else:
        item["response"] = raw.response
    if debug:
        item["diagnostics"] = _diagnostics(raw)
    return item


def _verify_item(custom_id: str, raw: RawResultLike | str) -> dict[str, Any]:
    if isinstance(raw, str):
        return {"custom_id": custom_id, "error": raw}
    if raw.error is not None or raw.response is None:
        return {"custom_id": custom_id, "error": _error_text(raw)}
    return {"custom_id": custom_id, "error": None, "response": {**raw.response, "time": raw.time}}


def _error_text(raw: RawResultLike) -> str:
    """The error of a failed snippet (a timeout already reads like Kimina's: "... timed out in N seconds")."""
    return raw.error or "Lean REPL returned no response"


def _diagnostics(raw: RawResultLike) -> dict[str, Any]:
    """Kimina's ``debug`` diagnostics (``repl_uuid``, ``cpu_max``, ``memory_max``) when the service reports them."""
    extra = getattr(raw, "diagnostics", None)
    return dict(extra) if isinstance(extra, dict) else {}
