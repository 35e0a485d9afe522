"""Cancellation: queued jobs leave the queue; running ones reach the fake LLM and the Lean check."""

from __future__ import annotations

import asyncio
import time

import httpx
import psutil
from fastapi import FastAPI

from api.app import create_app
from sorryless.config import Settings
from tests.api.conftest import WorkerHandle, wait_for_status, wait_until
from tests.fakes.fake_llm import FakeLLMScript, serve_fake_llm


def _fake_repls() -> set[int]:
    """Live (not zombie) fake REPL processes started by this test process."""
    live = set()
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE and "fake_repl.py" in " ".join(child.cmdline()):
                live.add(child.pid)
        except psutil.NoSuchProcess:
            continue
    return live


async def test_cancel_a_queued_job(app: FastAPI, client: httpx.AsyncClient, workers: WorkerHandle) -> None:
    answer = await client.post(
        "/v1/jobs", json={"kind": "verify", "params": {"code": "theorem t : True := trivial"}}
    )
    job_id = answer.json()["id"]
    assert (await app.state.sorryless.queue.depth("interactive")).queued == 1
    cancelled = await client.delete(f"/v1/jobs/{job_id}")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert (await app.state.sorryless.queue.depth("interactive")).queued == 0
    assert (await client.delete(f"/v1/jobs/{job_id}")).status_code == 200, "cancel is idempotent"
    await workers.start()
    await asyncio.sleep(0.5)
    job = (await client.get(f"/v1/jobs/{job_id}")).json()
    assert job["status"] == "cancelled" and job["started_at"] is None and job["result"] is None


async def test_cancel_a_finished_job_is_a_conflict(client: httpx.AsyncClient, workers: WorkerHandle) -> None:
    await workers.start()
    answer = await client.post(
        "/v1/jobs", json={"kind": "verify", "params": {"code": "theorem t : True := trivial"}}
    )
    await wait_for_status(client, answer.json()["id"])
    conflict = await client.delete(f"/v1/jobs/{answer.json()['id']}")
    assert conflict.status_code == 409
    assert conflict.json()["error"]["code"] == "already_finished"
    assert (await client.delete("/v1/jobs/job_missing")).status_code == 404


async def test_cancel_mid_lean_check(app: FastAPI, client: httpx.AsyncClient, workers: WorkerHandle) -> None:
    await workers.start()
    answer = await client.post(
        "/v1/jobs",
        json={"kind": "verify", "params": {"code": "theorem slow : True := trivial -- FAKE:slow=8000"}},
    )
    job_id = answer.json()["id"]
    events = app.state.sorryless.events

    async def checking() -> bool:
        return any(e.type == "progress" for e in await events.history(job_id))

    await wait_until(checking)
    await asyncio.sleep(0.3)  # the check is in the REPL now
    repls = _fake_repls()
    assert repls, "the worker's REPL processes are children of this test process"
    started = time.monotonic()
    assert (await client.delete(f"/v1/jobs/{job_id}")).status_code == 200
    record = app.state.sorryless.store

    async def worker_let_go() -> bool:
        # "aborted" only once the worker's handler task was cancelled and saq finished it
        return bool(await app.state.sorryless.queue.delivery_status(job_id, "interactive") == "aborted")

    await wait_until(worker_let_go, timeout_s=5)
    assert time.monotonic() - started < 4, "the 8 s check was abandoned, not waited for"

    async def a_repl_was_killed() -> bool:
        return bool(repls - _fake_repls())

    await wait_until(a_repl_was_killed, timeout_s=3)  # the REPL busy with the 8 s check was killed
    final = await record.get(job_id)
    assert final is not None and final.status == "cancelled" and final.result is None
    assert final.result_writes == 1
    history = [e.type for e in await events.history(job_id)]
    assert history[-1] == "cancelled" and "succeeded" not in history


async def test_cancel_reaches_the_llm(api_settings: Settings, workers: WorkerHandle) -> None:
    script = FakeLLMScript(replies=["```lean\ntheorem two_eq : 1 + 1 = 2 := by rfl\n```"], delay_s=20.0)
    with serve_fake_llm(script) as base_url:
        settings = api_settings.model_copy(update={"llm_base_url": base_url, "llm_model": "fake-model"})
        app = create_app(settings)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as client:
            await workers.start(settings=settings)
            answer = await client.post(
                "/v1/jobs",
                json={
                    "kind": "prove",
                    "params": {
                        "statement": "theorem two_eq : 1 + 1 = 2 := by sorry",
                        "budget": {"max_attempts": 1},
                    },
                },
            )
            job_id = answer.json()["id"]

            async def llm_called() -> bool:
                return bool(script.bodies())

            await wait_until(llm_called, timeout_s=15)
            started = time.monotonic()
            assert (await client.delete(f"/v1/jobs/{job_id}")).status_code == 200

            async def aborted() -> bool:
                return bool(script.aborted_rids)

            await wait_until(aborted, timeout_s=5)
            assert time.monotonic() - started < 5
            rids = {body.get("rid") for body in script.bodies() if body.get("rid")}
            assert set(script.aborted_rids) & rids, (script.aborted_rids, rids)
            job = (await client.get(f"/v1/jobs/{job_id}")).json()
            assert job["status"] == "cancelled" and job["result"] is None
