"""Faults: a worker killed mid-job (SIGKILL) and a Redis restart while jobs are queued."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import redis

from api.app import create_app
from sorryless.config import Settings
from tests.api.conftest import WorkerHandle, free_port, wait_for_status, wait_until

REPO = Path(__file__).resolve().parents[2]


def _worker_env(settings: Settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SORRYLESS_")}
    env.update(
        {
            "PYTHONPATH": str(REPO),
            "SORRYLESS_REDIS_URL": settings.redis_url,
            "SORRYLESS_REDIS_KEY_PREFIX": settings.redis_key_prefix,
            "SORRYLESS_DATA_DIR": str(settings.data_dir),
            "SORRYLESS_LEAN_REPL_CMD": settings.lean_repl_cmd or "",
            "SORRYLESS_JOB_HEARTBEAT_S": str(settings.job_heartbeat_s),
            "SORRYLESS_WORKER_SWEEP_S": str(settings.worker_sweep_s),
            "SORRYLESS_JOB_RETRY_DELAY_S": str(settings.job_retry_delay_s),
            "SORRYLESS_JOB_RETRY_BACKOFF_MAX_S": str(settings.job_retry_backoff_max_s),
            "SORRYLESS_LOG_LEVEL": "WARNING",
        }
    )
    return env


def _spawn_worker(settings: Settings) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.api.worker_main"],
        cwd=REPO,
        env=_worker_env(settings),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@pytest.mark.slow
async def test_worker_killed_mid_job_completes_elsewhere_once(
    api_settings: Settings, workers: WorkerHandle
) -> None:
    app = create_app(api_settings)
    state = app.state.sorryless
    victim = _spawn_worker(api_settings)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as client:
            answer = await client.post(
                "/v1/jobs",
                json={"kind": "verify", "params": {"code": "theorem k : True := trivial -- FAKE:slow=2500"}},
            )
            job_id = answer.json()["id"]

            async def running() -> bool:
                record = await state.store.get(job_id)
                return record is not None and record.status == "running"

            await wait_until(running, timeout_s=20)
            first_worker = (await state.store.get(job_id)).worker
            await asyncio.sleep(0.3)
            os.killpg(victim.pid, signal.SIGKILL)  # the worker and its REPL children, no goodbye
            victim.wait(5)
            await workers.start()
            job = await wait_for_status(client, job_id, timeout_s=40)
        record = await state.store.get(job_id)
        assert job["status"] == "succeeded" and job["result"]["verdict"] == "PASS"
        assert record is not None and record.worker != first_worker and record.attempts == 2
        assert record.result_writes == 1
        history = [e.type for e in await state.events.history(job_id)]
        assert history.count("started") == 2
        assert [t for t in history if t in ("succeeded", "failed", "cancelled")] == ["succeeded"]
    finally:
        if victim.poll() is None:
            os.killpg(victim.pid, signal.SIGKILL)
        await state.queue.aclose()


@pytest.mark.slow
async def test_redis_restart_loses_no_acknowledged_job(api_settings: Settings, tmp_path: Path) -> None:
    server = shutil.which("redis-server")
    assert server
    port = free_port()
    data = tmp_path / "redis"
    data.mkdir()
    argv = [
        server,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(data),
        "--appendonly",
        "yes",
        "--appendfsync",
        "everysec",
        "--save",
        "",
        "--protected-mode",
        "no",
    ]

    def start() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=port)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                assert time.monotonic() < deadline, "private redis did not start"
                time.sleep(0.05)
        client.close()
        return proc

    proc = start()
    settings = api_settings.model_copy(update={"redis_url": f"redis://127.0.0.1:{port}/0"})
    app = create_app(settings)
    handle = WorkerHandle(settings)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as client:
            accepted = []
            for i in range(20):
                answer = await client.post(
                    "/v1/jobs", json={"kind": "verify", "params": {"code": f"theorem r{i} : True := trivial"}}
                )
                assert answer.status_code == 201
                accepted.append(answer.json()["id"])
            batch = await client.post(
                "/v1/batches",
                json={
                    "jobs": [
                        {"kind": "verify", "params": {"code": f"theorem s{i} : True := trivial"}}
                        for i in range(5)
                    ]
                },
            )
            assert batch.status_code == 201
            accepted += batch.json()["job_ids"]
            await asyncio.sleep(1.5)  # appendfsync everysec: the last second reaches the disk
            proc.send_signal(signal.SIGKILL)
            proc.wait(5)
            down = await client.post(
                "/v1/jobs", json={"kind": "verify", "params": {"code": "theorem d : True := trivial"}}
            )
            assert down.status_code == 503, down.text
            assert down.json()["error"]["code"] in ("queue_unavailable", "redis_unavailable")
            proc = start()
            await handle.start()
            for job_id in accepted:
                job = await wait_for_status(client, job_id, timeout_s=30)
                assert job["status"] == "succeeded", job
            assert (await client.get("/v1/jobs", params={"limit": 200})).json()["items"].__len__() == len(
                accepted
            )
    finally:
        await handle.stop_all()
        await app.state.sorryless.queue.aclose()
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
