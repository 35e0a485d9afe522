"""LeanServerClient against a real uvicorn server on a free loopback port."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import orjson
import pytest
import uvicorn

from lean_server.app import create_app
from lean_server.checker import (
    BacklogFull,
    Checker,
    CheckerUnavailable,
    LeanError,
    Priority,
    Snippet,
    check_one,
)
from lean_server.client import LeanServerClient
from lean_server.verdict import Verdict
from sorryless.config import Settings
from tests.lean_server.test_app_helpers import GOOD, SORRY, FullBacklogService, small_pool


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def uvicorn_server(settings: Settings, service: Any = None) -> AsyncIterator[str]:
    port = _free_port()
    config = uvicorn.Config(
        create_app(settings, service), host="127.0.0.1", port=port, log_level="warning", access_log=False,
        lifespan="on",
    )  # fmt: skip
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        for _ in range(200):
            if server.started:
                break
            if task.done():
                task.result()
            await asyncio.sleep(0.02)
        assert server.started, "uvicorn did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 20)


async def test_round_trip_streams_certificates_in_completion_order(settings: Settings) -> None:
    pool_settings = small_pool(settings, lean_max_processes=3)
    async with uvicorn_server(pool_settings) as url:
        client = LeanServerClient(pool_settings.model_copy(update={"lean_server_url": url}))
        assert isinstance(client, Checker)
        try:
            snippets = [
                Snippet(id="slow", code="-- FAKE:slow=700\n" + GOOD),
                Snippet(id="good", code=GOOD),
                Snippet(id="sorry", code=SORRY),
            ]
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            certs, arrivals = [], []
            async for cert in client.check(snippets, priority=Priority.BATCH):
                certs.append(cert)
                arrivals.append(loop.time() - t0)
            single = await check_one(client, Snippet(id="one", code=GOOD))
            health = await client.health()
        finally:
            await client.aclose()
    assert [c.id for c in certs][-1] == "slow"
    assert arrivals[-1] - arrivals[0] > 0.3, "fast certificates must arrive before the slow one finishes"
    assert {c.id: c.verdict for c in certs} == {
        "slow": Verdict.PASS,
        "good": Verdict.PASS,
        "sorry": Verdict.SORRY,
    }
    assert single.id == "one" and single.verdict is Verdict.PASS
    assert health["status"] == "ok"


async def test_backlog_full_raises_with_retry_after(settings: Settings) -> None:
    async with uvicorn_server(settings, FullBacklogService(retry_after=4.2)) as url:
        client = LeanServerClient(settings.model_copy(update={"lean_server_url": url}))
        try:
            with pytest.raises(BacklogFull) as caught:
                await check_one(client, Snippet(id="a", code=GOOD))
        finally:
            await client.aclose()
    assert caught.value.retry_after == 5.0


async def test_wrong_key_is_a_lean_error_and_right_key_works(settings: Settings) -> None:
    server_settings = small_pool(settings, lean_server_api_key="k1")
    async with uvicorn_server(server_settings) as url:
        wrong = LeanServerClient(
            settings.model_copy(update={"lean_server_url": url, "lean_server_api_key": "k2"})
        )
        right = LeanServerClient(
            settings.model_copy(update={"lean_server_url": url, "lean_server_api_key": "k1"})
        )
        try:
            with pytest.raises(LeanError, match="401"):
                await check_one(wrong, Snippet(id="a", code=GOOD))
            cert = await check_one(right, Snippet(id="a", code=GOOD))
        finally:
            await wrong.aclose()
            await right.aclose()
    assert cert.verdict is Verdict.PASS


async def test_unreachable_server_is_checker_unavailable(settings: Settings) -> None:
    client = LeanServerClient(
        settings.model_copy(update={"lean_server_url": f"http://127.0.0.1:{_free_port()}"})
    )
    try:
        with pytest.raises(CheckerUnavailable):
            await check_one(client, Snippet(id="a", code=GOOD))
    finally:
        await client.aclose()


def test_client_needs_a_url(settings: Settings) -> None:
    with pytest.raises(CheckerUnavailable):
        LeanServerClient(settings.model_copy(update={"lean_server_url": None}))


async def test_keepalive_newlines_are_skipped(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("lean_server.app.HEARTBEAT_S", 0.05)
    pool_settings = small_pool(settings)
    async with uvicorn_server(pool_settings) as url:
        client = LeanServerClient(pool_settings.model_copy(update={"lean_server_url": url}))
        raw = LeanServerClient(pool_settings.model_copy(update={"lean_server_url": url}))
        try:
            snippets = [
                Snippet(id="fast", code=GOOD, use_cache=False),
                Snippet(id="slow", code="-- FAKE:slow=400\n" + GOOD, use_cache=False),
            ]
            certs = [c async for c in client.check(snippets)]
            body = {"snippets": [s.model_dump() for s in snippets], "stream": True}
            text = (await raw._http.post("/v1/check", json=body)).text
        finally:
            await client.aclose()
            await raw.aclose()
    assert [c.id for c in certs] == ["fast", "slow"]
    assert "\n\n" in text, "a keep-alive newline was expected while the slow snippet ran"


async def test_a_client_that_goes_away_frees_its_repl(settings: Settings) -> None:
    """The abandoned 10 s check is cancelled: the next request on the 1-process pool is served at once."""
    pool_settings = small_pool(settings, lean_max_processes=1)
    async with uvicorn_server(pool_settings) as url:
        host, port = url.removeprefix("http://").split(":")
        body = orjson.dumps({"snippets": [{"id": "slow", "code": "-- FAKE:slow=10000\n" + GOOD}]})
        _reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(
            b"POST /api/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        await asyncio.sleep(0.5)
        writer.close()
        await writer.wait_closed()
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        async with httpx.AsyncClient(base_url=url, timeout=20.0) as http:
            after = await http.post("/api/check", json={"snippets": [{"id": "next", "code": GOOD}]})
            metrics = (await http.get("/metrics")).text
        elapsed = loop.time() - t0
    assert after.status_code == 200 and "response" in after.json()["results"][0]
    assert elapsed < 5.0, f"the abandoned check still held the only REPL ({elapsed:.1f} s)"
    assert 'sorryless_lean_http_requests_total{route="api_check",status="499"} 1.0' in metrics


async def test_a_line_that_is_not_a_certificate_is_a_lean_error(settings: Settings) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/health":
            return httpx.Response(502, content=b"<html>bad gateway</html>")
        body = b'{"id": "a", "verdict": "MAYBE"}\n'
        return httpx.Response(200, content=body, headers={"content-type": "application/x-ndjson"})

    client = LeanServerClient(
        settings.model_copy(update={"lean_server_url": "http://lean-server"}),
        transport=httpx.MockTransport(answer),
    )
    try:
        with pytest.raises(LeanError, match="not a certificate"):
            await check_one(client, Snippet(id="a", code=GOOD))
        health = await client.health()  # a body that is not JSON at all
    finally:
        await client.aclose()
    assert health["status"] == "unavailable"
