"""Helpers for the lean_server core tests (pool, tiers, cache) on the fake REPL."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lean_server.checker import Priority, Snippet
from lean_server.service import LeanService
from lean_server.verdict import Certificate
from sorryless.config import Settings


def tuned(settings: Settings, **updates: Any) -> Settings:
    """The test settings with pool knobs changed (no one-shot re-check unless asked)."""
    base: dict[str, Any] = {"lean_recheck_passing": False, "lean_max_processes": 2, "lean_warm_spares": 0}
    base.update(updates)
    return settings.model_copy(update=base)


async def check_all(
    service: LeanService, snippets: Sequence[Snippet], priority: Priority = Priority.INTERACTIVE
) -> dict[str, Certificate]:
    return {cert.id: cert async for cert in service.check(snippets, priority=priority)}


async def check_code(service: LeanService, code: str, **fields: Any) -> Certificate:
    certs = await check_all(service, [Snippet(id="s", code=code, **fields)])
    return certs["s"]


async def until(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    """Wait (polling every 10 ms) until ``condition()`` holds; fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


def read_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def body_requests(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Requests that ran a body on a stored env (not header imports)."""
    return [e for e in log if "env" in e["request"]]


def write_rules(path: Path, rules: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(rules))
    return path
