"""/health tells the truth about each dependency; /metrics exposes queue, worker and job numbers."""

from __future__ import annotations

import asyncio
import re

import httpx

from api.app import create_app
from sorryless.config import Settings
from tests.api.conftest import WorkerHandle, wait_for_status
from tests.fakes.fake_llm import FakeLLMScript, serve_fake_llm

JOB = {"kind": "verify", "params": {"code": "theorem t : True := trivial"}}


def metric(text: str, name: str, labels: str = "") -> float:
    pattern = re.escape(name) + (re.escape("{" + labels + "}") if labels else "") + r" (\S+)"
    match = re.search(pattern, text)
    assert match, f"{name}{{{labels}}} not in metrics"
    return float(match.group(1))


async def test_health_without_workers_llm_or_lean(api_settings: Settings) -> None:
    settings = api_settings.model_copy(
        update={
            "lean_repl_cmd": None,
            "lean_bin": "/nonexistent/lean",
            "data_dir": api_settings.data_dir / "empty",
        }
    )
    app = create_app(settings)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as client:
        health = (await client.get("/health")).json()
    assert health["status"] == "degraded"
    checks = health["checks"]
    assert checks["redis"]["status"] == "ok"
    assert checks["queue"]["status"] == "ok"
    assert checks["workers"]["status"] == "unavailable" and "sorryless worker" in checks["workers"]["detail"]
    assert checks["lean"]["status"] == "unavailable" and checks["lean"]["detail"]
    assert checks["llm"]["status"] == "unconfigured"


async def test_health_with_everything_up(api_settings: Settings, workers: WorkerHandle) -> None:
    script = FakeLLMScript()
    with serve_fake_llm(script) as base_url:
        settings = api_settings.model_copy(update={"llm_base_url": base_url})
        app = create_app(settings)
        await workers.start(settings=settings)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as client:
            health = (await client.get("/health")).json()
            script.healthy = False
            unreachable_llm = create_app(
                settings.model_copy(update={"llm_base_url": "http://127.0.0.1:9/v1"})
            )
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=unreachable_llm), base_url="http://api"
            ) as other:
                degraded = (await other.get("/health")).json()
    assert health["status"] == "ok", health
    assert health["checks"]["lean"]["data"]["backend"] == "repl"
    assert len(health["checks"]["workers"]["data"]["workers"]["interactive"]) == 1
    assert health["checks"]["llm"]["status"] == "ok"
    assert degraded["checks"]["llm"]["status"] == "unavailable" and degraded["status"] == "degraded"


async def test_metrics(client: httpx.AsyncClient, workers: WorkerHandle) -> None:
    for _ in range(3):
        assert (await client.post("/v1/jobs", json=JOB)).status_code == 201
    await asyncio.sleep(0.2)
    text = (await client.get("/metrics")).text
    assert metric(text, "sorryless_queue_depth", 'queue="interactive"') == 3
    assert metric(text, "sorryless_queue_oldest_age_seconds", 'queue="interactive"') >= 0.2
    assert metric(text, "sorryless_workers", 'queue="interactive"') == 0
    assert metric(text, "sorryless_jobs_total", 'status="submitted"') == 3
    assert metric(text, "sorryless_submit_seconds_count") == 3
    await workers.start()
    page = (await client.get("/v1/jobs")).json()
    for item in page["items"]:
        await wait_for_status(client, item["id"])
    text = (await client.get("/metrics")).text
    assert metric(text, "sorryless_queue_depth", 'queue="interactive"') == 0
    assert metric(text, "sorryless_jobs_total", 'status="succeeded"') == 3
    assert metric(text, "sorryless_job_latency_seconds_count", 'kind="verify"') == 3
    assert metric(text, "sorryless_workers", 'queue="interactive"') == 1
    assert 'sorryless_worker_uptime_seconds{queue="interactive"' in text
