"""Fixtures of the API tests: short timers, an in-process app, worker and live server (real Redis)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from api.app import create_app
from api.kinds import JobKind
from api.worker import run_worker
from sorryless.config import Settings

TERMINAL = ("succeeded", "failed", "cancelled")


@pytest.fixture
def api_settings(settings: Settings) -> Settings:
    return settings.model_copy(
        update={
            "job_heartbeat_s": 2,
            "worker_sweep_s": 1.0,
            "worker_abort_poll_s": 0.2,
            "job_retry_delay_s": 0.05,
            "job_retry_backoff_max_s": 0.2,
            "sse_block_ms": 200,
            "job_max_retries": 3,
            "worker_concurrency": 4,
        }
    )


@pytest.fixture
async def app(api_settings: Settings) -> AsyncIterator[FastAPI]:
    application = create_app(api_settings)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as c:
        yield c


class WorkerHandle:
    """Start/stop an in-process worker (asyncio task) on demand."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._runs: list[tuple[asyncio.Event, asyncio.Task[None]]] = []

    async def start(
        self, *, kinds: dict[str, JobKind] | None = None, settings: Settings | None = None, **kwargs: Any
    ) -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(run_worker(settings or self.settings, stop=stop, kinds=kinds, **kwargs))
        self._runs.append((stop, task))
        await asyncio.sleep(0.05)

    async def stop_all(self) -> None:
        for stop, _ in self._runs:
            stop.set()
        for _, task in self._runs:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(task, 15)
        self._runs.clear()


@pytest.fixture
async def workers(api_settings: Settings) -> AsyncIterator[WorkerHandle]:
    handle = WorkerHandle(api_settings)
    yield handle
    await handle.stop_all()


async def wait_for_status(
    client: httpx.AsyncClient,
    job_id: str,
    statuses: tuple[str, ...] = TERMINAL,
    timeout_s: float = 20.0,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        answer = await client.get(f"/v1/jobs/{job_id}", headers=headers)
        assert answer.status_code == 200, answer.text
        job: dict[str, Any] = answer.json()
        if job["status"] in statuses:
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} still {job['status']} after {timeout_s} s: {job}")
        await asyncio.sleep(0.05)


async def wait_until(predicate: Callable[[], Awaitable[bool]], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not await predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
async def live_url(app: FastAPI) -> AsyncIterator[str]:
    """The app served by uvicorn on a loopback port (real streaming, real disconnects)."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    await asyncio.wait_for(task, 10)


def parse_sse(text: str) -> list[dict[str, str]]:
    """SSE frames -> dicts with id/event/data/comment keys."""
    events: list[dict[str, str]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        frame: dict[str, str] = {}
        for line in block.split("\n"):
            if not line:
                continue
            if line.startswith(":"):
                frame["comment"] = line[1:].strip()
                continue
            name, _, value = line.partition(":")
            frame[name] = value[1:] if value.startswith(" ") else value
        if frame:
            events.append(frame)
    return events
