"""Infrastructure failures retry with backoff, then dead-letter; job outcomes never retry."""

from __future__ import annotations

import httpx
from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict

from api.app import create_app
from api.errors import InfraError
from api.kinds import JobKind, KindContext, KindOutcome, load_kinds
from sorryless.config import Settings
from tests.api.conftest import WorkerHandle, wait_for_status
from tests.fakes.fake_llm import FakeLLMScript, serve_fake_llm

STUB = "theorem two_eq : 1 + 1 = 2 := by sorry"


class FlakyParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    fail_attempts: int
    crash: bool = False


async def _flaky(params: FlakyParams, ctx: KindContext) -> KindOutcome:
    await ctx.progress(attempt=ctx.attempt)
    if params.crash:
        raise ValueError("a bug in the kind")
    if ctx.attempt <= params.fail_attempts:
        raise InfraError(f"backend down on attempt {ctx.attempt}")
    return KindOutcome(result={"attempt": ctx.attempt})


def _kinds() -> dict[str, JobKind]:
    return {**load_kinds(), "flaky": JobKind("flaky", FlakyParams, _flaky, "test kind")}


async def test_infra_failures_are_retried_then_dead_lettered(
    api_settings: Settings, workers: WorkerHandle
) -> None:
    kinds = _kinds()
    app: FastAPI = create_app(api_settings.model_copy(update={"admin_key": "adm"}), kinds=kinds)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as client:
        await workers.start(kinds=kinds)
        recovers = (
            await client.post("/v1/jobs", json={"kind": "flaky", "params": {"fail_attempts": 2}})
        ).json()["id"]
        gives_up = (
            await client.post("/v1/jobs", json={"kind": "flaky", "params": {"fail_attempts": 9}})
        ).json()["id"]
        buggy = (
            await client.post(
                "/v1/jobs", json={"kind": "flaky", "params": {"fail_attempts": 0, "crash": True}}
            )
        ).json()["id"]
        ok = await wait_for_status(client, recovers)
        assert ok["status"] == "succeeded" and ok["result"] == {"attempt": 3} and ok["attempts"] == 3
        dead = await wait_for_status(client, gives_up)
        assert dead["status"] == "failed" and dead["error"]["code"] == "infra_error" and dead["attempts"] == 3
        bug = await wait_for_status(client, buggy)
        assert bug["status"] == "failed" and bug["error"]["code"] == "internal_error" and bug["attempts"] == 1
        listed = await client.get("/v1/dead-letters", headers={"Authorization": "Bearer adm"})
        assert listed.status_code == 200
        letters = listed.json()
        assert (await client.get("/v1/dead-letters")).status_code == 401
        assert [d["job_id"] for d in letters] == [gives_up]
        assert letters[0]["attempts"] == 3 and "backend down on attempt 3" in letters[0]["error"]["message"]
        history = [e.type for e in await app.state.sorryless.events.history(recovers)]
        assert history.count("retrying") == 2 and history.count("started") == 3 and history[-1] == "succeeded"
        metrics = (await client.get("/metrics")).text
        assert 'sorryless_jobs_total{status="dead_lettered"} 1.0' in metrics
        assert 'sorryless_job_latency_seconds_count{kind="flaky"} 1.0' in metrics
        assert 'sorryless_workers{queue="interactive"} 1.0' in metrics


async def test_cancel_while_waiting_for_a_retry(api_settings: Settings, workers: WorkerHandle) -> None:
    kinds = _kinds()
    settings = api_settings.model_copy(update={"job_retry_delay_s": 30.0, "job_retry_backoff_max_s": 60.0})
    app: FastAPI = create_app(settings, kinds=kinds)
    state = app.state.sorryless
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as client:
        await workers.start(kinds=kinds, settings=settings)
        job_id = (
            await client.post("/v1/jobs", json={"kind": "flaky", "params": {"fail_attempts": 9}})
        ).json()["id"]
        waiting = await wait_for_status(client, job_id, statuses=("queued",), timeout_s=10)
        while waiting["attempts"] < 1:
            waiting = await wait_for_status(client, job_id, statuses=("queued",), timeout_s=10)
        assert (await client.delete(f"/v1/jobs/{job_id}")).status_code == 200
        assert await state.queue.delivery_status(job_id, "interactive") == "aborted"
        job = (await client.get(f"/v1/jobs/{job_id}")).json()
        assert job["status"] == "cancelled" and job["attempts"] == 1


async def test_prove_with_the_llm_down_is_retried_then_dead_lettered(
    api_settings: Settings, workers: WorkerHandle
) -> None:
    """An LLM outage is an infrastructure failure: retried with backoff, then dead-lettered,
    never reported as "succeeded, unsolved"."""
    script = FakeLLMScript(replies=["```lean\ntheorem two_eq : 1 + 1 = 2 := by rfl\n```"])
    script.fail_next(10_000, 503)
    with serve_fake_llm(script) as base_url:
        settings = api_settings.model_copy(
            update={
                "llm_base_url": base_url,
                "llm_model": "fake-model",
                "llm_max_retries": 0,
                "admin_key": "adm",
            }
        )
        app = create_app(settings)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as client:
            await workers.start(settings=settings)
            params = {"statement": STUB, "strategy": "whole", "budget": {"max_attempts": 2}}
            job_id = (await client.post("/v1/jobs", json={"kind": "prove", "params": params})).json()["id"]
            job = await wait_for_status(client, job_id, timeout_s=30)
            letters = (await client.get("/v1/dead-letters", headers={"Authorization": "Bearer adm"})).json()
        history = [e.type for e in await app.state.sorryless.events.history(job_id)]
    assert job["status"] == "failed", job
    assert job["error"]["code"] == "infra_error" and "LLMUnavailable" in job["error"]["message"]
    assert job["attempts"] == settings.job_max_retries
    assert history.count("retrying") == settings.job_max_retries - 1
    assert [d["job_id"] for d in letters] == [job_id]
    assert len(script.bodies()) >= settings.job_max_retries, "every attempt reached the (failing) LLM"
