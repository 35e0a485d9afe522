"""Helpers for the lean-server HTTP tests (an app in front of a real LeanService + fake REPL)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from fastapi import FastAPI

from lean_server.app import create_app
from lean_server.checker import BacklogFull, Priority, Snippet
from lean_server.verdict import Certificate
from sorryless.config import Settings

GOOD = "theorem good_one : 1 + 1 = 2 := by rfl"
SORRY = "theorem uses_sorry : 1 + 1 = 2 := by sorry"


def small_pool(settings: Settings, **overrides: Any) -> Settings:
    """The test settings with a small pool and no one-shot re-check (fast, deterministic)."""
    values: dict[str, Any] = {
        "lean_max_processes": 2,
        "lean_warm_spares": 0,
        "lean_recheck_passing": False,
        "lean_check_timeout_s": 10.0,
        "lean_import_timeout_s": 10.0,
    }
    values.update(overrides)
    return settings.model_copy(update=values)


@asynccontextmanager
async def served(settings: Settings, service: Any = None) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    """The app with its lifespan running, and an httpx client talking to it in-process."""
    app = create_app(settings, service)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://lean-server", timeout=30.0
        ) as client:
            yield app, client


@dataclass
class RawAnswer:
    response: dict[str, Any] | None
    error: str | None
    time: float


class FullBacklogService:
    """A service whose wait queue is always full: every check and run_raw raises BacklogFull."""

    def __init__(self, retry_after: float = 2.5) -> None:
        self.retry_after = retry_after
        self.started = False
        self.closed = False

    async def check(
        self, snippets: Sequence[Snippet], *, priority: Priority = Priority.INTERACTIVE
    ) -> AsyncIterator[Certificate]:
        raise BacklogFull(self.retry_after)
        yield  # pragma: no cover - makes this an async generator

    async def run_raw(
        self,
        code: str,
        *,
        timeout_s: float,
        priority: Priority,
        infotree: str | None = None,
        reservation: Any = None,
        use_cache: bool = False,
    ) -> RawAnswer:
        raise BacklogFull(self.retry_after)

    async def start(self) -> None:
        self.started = True

    async def aclose(self) -> None:
        self.closed = True

    def health(self) -> dict[str, Any]:
        return {"available": True, "backends": ["stub"]}

    def stats(self) -> dict[str, Any]:
        return {"waiting": 10_000}
