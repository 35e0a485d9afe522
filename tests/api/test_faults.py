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
async def test_a_paused_worker_wakes_up_after_its_job_finished_elsewhere(
    api_settings: Settings, workers: WorkerHandle
) -> None:
    """SIGSTOP a worker mid-job: its heartbeat stops, the job is swept and finished on another
    worker; then SIGCONT: the victim finishes its stale run, and its late write is refused (the
    record and the event stream stay exactly as the finishing worker left them)."""
    app = create_app(api_settings)
    state = app.state.sorryless
    victim = _spawn_worker(api_settings)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as client:
            answer = await client.post(
                "/v1/jobs",
                json={"kind": "verify", "params": {"code": "theorem p : True := trivial -- FAKE:slow=1500"}},
            )
            job_id = answer.json()["id"]

            async def running() -> bool:
                return bool(await state.store.status(job_id) == "running")

            await wait_until(running, timeout_s=20)
            paused_worker = (await state.store.get(job_id)).worker
            os.killpg(victim.pid, signal.SIGSTOP)  # the worker and its REPL: mid-check, no goodbye
            await workers.start()
            job = await wait_for_status(client, job_id, timeout_s=20)
            assert job["status"] == "succeeded" and job["result"]["verdict"] == "PASS", job
            key = state.keyspace.job(job_id)
            finished = await state.redis.hgetall(key)
            finished_events = await state.events.history(job_id)
            refused_before = int(await state.redis.hget(state.keyspace.stats, "stale_writes_refused") or 0)
            os.killpg(victim.pid, signal.SIGCONT)

            async def late_write_refused() -> bool:
                count = await state.redis.hget(state.keyspace.stats, "stale_writes_refused")
                return int(count or 0) > refused_before

            await wait_until(late_write_refused, timeout_s=10)
            assert victim.poll() is None, "the victim resumed (it was not killed)"
            assert await state.redis.hgetall(key) == finished, "the late write changed the record"
            events = await state.events.history(job_id)
        assert [(e.id, e.type) for e in events] == [(e.id, e.type) for e in finished_events]
        assert [e.type for e in events if e.terminal] == ["succeeded"]
        assert finished["worker"] != paused_worker and finished["result_writes"] == "1"
        assert finished["attempts"] == "2"
    finally:
        if victim.poll() is None:
            os.killpg(victim.pid, signal.SIGKILL)
            victim.wait(5)
        await state.queue.aclose()


class _PrivateRedis:
    """A redis-server of the test's own (it gets killed and restarted; the shared one never is)."""

    def __init__(self, data_dir: Path, *options: str) -> None:
        server = shutil.which("redis-server")
        assert server
        self.port = free_port()
        data_dir.mkdir(exist_ok=True)
        self.argv = [
            server,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(data_dir),
            "--save",
            "",
            "--protected-mode",
            "no",
            *options,
        ]
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                assert time.monotonic() < deadline, "private redis did not start"
                time.sleep(0.05)
        client.close()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


@pytest.mark.slow
async def test_redis_restart_loses_no_acknowledged_job(api_settings: Settings, tmp_path: Path) -> None:
    # appendfsync always: Redis writes and fsyncs the AOF before it answers, so every job that got
    # its 201 is on disk at once and the kill can follow the last answer without any wait (with
    # everysec a write can be postponed up to ~2 s while a background fsync runs)
    server = _PrivateRedis(tmp_path / "redis", "--appendonly", "yes", "--appendfsync", "always")
    server.start()
    settings = api_settings.model_copy(update={"redis_url": server.url})
    app = create_app(settings)
    handle = WorkerHandle(settings)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as client:
            persistence = (await client.get("/health")).json()["checks"]["persistence"]
            assert persistence["status"] == "ok", persistence
            assert persistence["data"] == {"aof_enabled": True, "appendfsync": "always"}
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
            server.kill()  # SIGKILL right after the last 201
            down = await client.post(
                "/v1/jobs", json={"kind": "verify", "params": {"code": "theorem d : True := trivial"}}
            )
            assert down.status_code == 503, down.text
            assert down.json()["error"]["code"] in ("queue_unavailable", "redis_unavailable")
            server.start()
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
        server.kill()


async def test_health_warns_when_redis_does_not_persist(api_settings: Settings, tmp_path: Path) -> None:
    server = _PrivateRedis(tmp_path / "redis", "--appendonly", "no")
    server.start()
    app = create_app(api_settings.model_copy(update={"redis_url": server.url}))
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as client:
            off = (await client.get("/health")).json()
            persistence = off["checks"]["persistence"]
            assert persistence["status"] == "warning" and "--appendonly yes" in persistence["detail"]
            assert persistence["data"]["aof_enabled"] is False
            assert off["warnings"] == [f"persistence: {persistence['detail']}"]
            others = {name: c["status"] for name, c in off["checks"].items() if name != "persistence"}
            assert off["status"] == ("ok" if set(others.values()) <= {"ok", "unconfigured"} else "degraded")
            direct = redis.Redis(port=server.port)
            direct.config_set("appendonly", "yes")
            direct.close()
            on = (await client.get("/health")).json()
        assert on["checks"]["persistence"]["status"] == "ok" and on["warnings"] == []
    finally:
        await app.state.sorryless.queue.aclose()
        server.kill()
