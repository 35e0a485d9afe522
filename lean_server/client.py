"""``LeanServerClient``: the :class:`~lean_server.checker.Checker` of a remote ``sorryless lean-server``.

One ``httpx.AsyncClient`` per client, explicit timeouts. ``check`` posts to ``/v1/check`` with
``stream: true`` and yields each certificate as its NDJSON line arrives (completion order).
429 raises :class:`BacklogFull` (``retry_after`` from the header); a server that cannot be
reached raises :class:`CheckerUnavailable`; other failures raise :class:`LeanError`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx
import orjson
from pydantic import ValidationError

from lean_server.checker import BacklogFull, CheckerUnavailable, LeanError, Priority, Snippet
from lean_server.verdict import Certificate
from sorryless.config import Settings

CONNECT_TIMEOUT_S = 5.0
# The server sends a keep-alive newline every 15 s while nothing finished; 4 missed in a row = dead.
READ_TIMEOUT_S = 60.0
_DEFAULT_RETRY_AFTER_S = 1.0


class BadServerResponse(LeanError):
    """The lean-server answered something that is not what the protocol promises."""


class LeanServerClient:
    """HTTP Checker over ``settings.lean_server_url``."""

    def __init__(self, settings: Settings, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        if not settings.lean_server_url:
            raise CheckerUnavailable("settings.lean_server_url is not set")
        headers = {"Accept": "application/x-ndjson"}
        if settings.lean_server_api_key:
            headers["Authorization"] = f"Bearer {settings.lean_server_api_key}"
        self._base_url = settings.lean_server_url.rstrip("/")
        self._http = httpx.AsyncClient(
            base_url=self._base_url,
            headers=headers,
            timeout=httpx.Timeout(connect=CONNECT_TIMEOUT_S, read=READ_TIMEOUT_S, write=30.0, pool=None),
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
            transport=transport,
        )

    async def check(
        self, snippets: Sequence[Snippet], *, priority: Priority = Priority.INTERACTIVE
    ) -> AsyncIterator[Certificate]:
        if not snippets:
            return
        body = {
            "snippets": [s.model_dump(exclude_defaults=True) for s in snippets],
            "priority": "batch" if priority is Priority.BATCH else "interactive",
            "stream": True,
        }
        try:
            async with self._http.stream(
                "POST", "/v1/check", content=orjson.dumps(body), headers={"Content-Type": "application/json"}
            ) as response:
                if response.status_code != 200:
                    await response.aread()
                    raise _status_error(response)
                async for line in response.aiter_lines():
                    if line.strip():
                        yield _certificate(line, self._base_url)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise CheckerUnavailable(f"lean-server at {self._base_url} is unreachable: {exc}") from exc
        except httpx.HTTPError as exc:
            raise LeanError(f"lean-server at {self._base_url} failed: {type(exc).__name__}: {exc}") from exc

    async def health(self) -> dict[str, Any]:
        """The server's ``/health`` report (``status`` is ``ok`` or ``unavailable``)."""
        try:
            response = await self._http.get("/health")
        except httpx.HTTPError as exc:
            raise CheckerUnavailable(f"lean-server at {self._base_url} is unreachable: {exc}") from exc
        try:
            data = response.json()
        except ValueError:
            data = None
        return data if isinstance(data, dict) else {"status": "unavailable", "reason": "bad /health body"}

    async def aclose(self) -> None:
        await self._http.aclose()


def _certificate(line: str, base_url: str) -> Certificate:
    try:
        return Certificate.model_validate_json(line)
    except ValidationError as exc:
        raise BadServerResponse(
            f"lean-server at {base_url} sent a line that is not a certificate: "
            f"{exc.error_count()} error(s), first: {exc.errors()[0]['msg']}; line: {line[:200]!r}"
        ) from None


def _status_error(response: httpx.Response) -> LeanError:
    detail = _detail(response)
    if response.status_code == 429:
        return BacklogFull(_retry_after(response), f"lean-server backlog is full: {detail}")
    if response.status_code == 503:
        return CheckerUnavailable(f"lean-server has no Lean backend: {detail}")
    return LeanError(f"lean-server answered {response.status_code}: {detail}")


def _detail(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:500]
    return str(data.get("detail", data)) if isinstance(data, dict) else str(data)


def _retry_after(response: httpx.Response) -> float:
    raw = response.headers.get("retry-after", "")
    try:
        return max(0.0, float(raw))
    except ValueError:
        return _DEFAULT_RETRY_AFTER_S
