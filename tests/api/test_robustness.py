"""Races and failure paths: late events, lost streams, replayed submits, stale caps, timeouts, shutdown."""

from __future__ import annotations

import asyncio
import logging
import time

import httpx
import pytest
from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict

from api.app import create_app
from api.kinds import JobKind, KindContext, KindOutcome, load_kinds
from api.queue import SubmitLimits
from api.submitting import to_submission
from sorryless.config import Settings
from tests.api.conftest import WorkerHandle, parse_sse, wait_for_status, wait_until

JOB = {"kind": "verify", "params": {"code": "theorem t : True := trivial"}}


async def test_no_event_after_the_terminal_one(app: FastAPI, client: httpx.AsyncClient) -> None:
    """A kind still emitting for a moment after a cancel cannot append past the terminal event."""
    job_id = (await client.post("/v1/jobs", json=JOB)).json()["id"]
    events = app.state.sorryless.events
    assert await events.emit(job_id, "progress", {"stage": "checking"}) is not None
    assert (await client.delete(f"/v1/jobs/{job_id}")).status_code == 200
    assert await events.emit(job_id, "progress", {"stage": "late"}) is None
    assert await events.emit("job_never_submitted", "progress", {}) is None
    history = [e.type for e in await events.history(job_id)]
    assert history == ["queued", "progress", "cancelled"]


async def test_stream_that_lost_its_events_ends_with_the_record(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    state = app.state.sorryless
    job_id = (await client.post("/v1/jobs", json=JOB)).json()["id"]
    assert (await client.delete(f"/v1/jobs/{job_id}")).status_code == 200
    await state.redis.delete(state.keyspace.events(job_id))  # trimmed or expired
    frames = [f for f in parse_sse((await client.get(f"/v1/jobs/{job_id}/events")).text) if "event" in f]
    assert [f["event"] for f in frames] == ["snapshot", "cancelled"]
    assert "id" not in frames[-1]


async def test_a_replayed_submit_enqueues_once(app: FastAPI) -> None:
    """The submit script is safe to run twice (what a retry after a broken connection does)."""
    state = app.state.sorryless
    submission = to_submission(
        _verify_request(app), owner="anonymous", queue="interactive", batch_id=None, now=time.time()
    )
    first = await state.queue.submit([submission], owner="anonymous", limits=SubmitLimits())
    again = await state.queue.submit([submission], owner="anonymous", limits=SubmitLimits())
    assert (first.outcome, first.value) == ("created", submission.job_id)
    assert (again.outcome, again.value) == ("existing", submission.job_id)
    assert (await state.queue.depth("interactive")).queued == 1


def _verify_request(app: FastAPI) -> BaseModel:
    from api.schemas import job_request_models

    model = next(m for m in job_request_models(app.state.sorryless.kinds) if m.__name__ == "VerifyJobRequest")
    return model.model_validate(JOB)


async def test_stale_active_entries_do_not_block_a_key(app: FastAPI) -> None:
    """An active-set entry whose record is gone (expired unfinished) does not count against the cap."""
    state = app.state.sorryless
    owner = "key-stale"
    await state.redis.sadd(state.keyspace.active(owner), "job_expired_long_ago")
    limits = SubmitLimits(max_active_jobs=1)
    submission = to_submission(
        _verify_request(app), owner=owner, queue="interactive", batch_id=None, now=time.time()
    )
    answer = await state.queue.submit([submission], owner=owner, limits=limits)
    assert answer.outcome == "created"
    assert await state.redis.smembers(state.keyspace.active(owner)) == {submission.job_id}
    second = to_submission(
        _verify_request(app), owner=owner, queue="interactive", batch_id=None, now=time.time()
    )
    refused = await state.queue.submit([second], owner=owner, limits=limits)
    assert refused.outcome == "active", "a live unfinished job still counts"


class _SleepParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    backend_timeout_attempts: int = 0
    sleep_s: float = 0.0


async def _sleepy(params: _SleepParams, ctx: KindContext) -> KindOutcome:
    if ctx.attempt <= params.backend_timeout_attempts:
        raise TimeoutError("the backend did not answer")
    await ctx.progress(sleeping=params.sleep_s)
    await asyncio.sleep(params.sleep_s)
    return KindOutcome(result={"attempt": ctx.attempt})


def _kinds() -> dict[str, JobKind]:
    return {**load_kinds(), "sleepy": JobKind("sleepy", _SleepParams, _sleepy, "test kind")}


async def test_backend_timeouts_retry_but_the_job_deadline_does_not(
    api_settings: Settings, workers: WorkerHandle
) -> None:
    kinds = _kinds()
    settings = api_settings.model_copy(update={"job_timeout_s": 1.0})
    app = create_app(settings, kinds=kinds)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as client:
        await workers.start(kinds=kinds, settings=settings)
        flaky = await client.post(
            "/v1/jobs", json={"kind": "sleepy", "params": {"backend_timeout_attempts": 1}}
        )
        slow = await client.post("/v1/jobs", json={"kind": "sleepy", "params": {"sleep_s": 5}})
        recovered = await wait_for_status(client, flaky.json()["id"])
        assert recovered["status"] == "succeeded" and recovered["attempts"] == 2
        late = await wait_for_status(client, slow.json()["id"])
        assert late["status"] == "failed" and late["error"]["code"] == "timeout" and late["attempts"] == 1


async def test_a_stopping_worker_hands_its_job_back(api_settings: Settings, workers: WorkerHandle) -> None:
    """SIGTERM-style stop mid-job: the record goes back to queued and another worker finishes it once."""
    kinds = _kinds()
    app = create_app(api_settings, kinds=kinds)
    state = app.state.sorryless
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as client:
        await workers.start(kinds=kinds)
        job_id = (await client.post("/v1/jobs", json={"kind": "sleepy", "params": {"sleep_s": 1.5}})).json()[
            "id"
        ]
        await wait_for_status(client, job_id, statuses=("running",))

        async def sleeping() -> bool:
            return any(e.type == "progress" for e in await state.events.history(job_id))

        await wait_until(sleeping)
        await workers.stop_all()
        handed_back = (await client.get(f"/v1/jobs/{job_id}")).json()
        assert handed_back["status"] == "queued", handed_back
        await workers.start(kinds=kinds)
        done = await wait_for_status(client, job_id)
        assert done["status"] == "succeeded" and done["attempts"] == 2
        record = await state.store.get(job_id)
        assert record is not None and record.result_writes == 1
        history = [e.type for e in await state.events.history(job_id)]
        assert history.count("retrying") == 1 and history[-1] == "succeeded"


async def test_finished_jobs_expire_after_the_result_ttl(app: FastAPI, client: httpx.AsyncClient) -> None:
    state = app.state.sorryless
    ttl = state.settings.job_result_ttl_s
    job_id = (await client.post("/v1/jobs", json=JOB)).json()["id"]
    assert (await client.delete(f"/v1/jobs/{job_id}")).status_code == 200
    for key in (state.keyspace.job(job_id), state.keyspace.events(job_id)):
        assert ttl - 5 <= await state.redis.ttl(key) <= ttl, key
    short = create_app(state.settings.model_copy(update={"job_result_ttl_s": 1}))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=short), base_url="http://api") as fast:
        brief = (await fast.post("/v1/jobs", json=JOB)).json()["id"]
        assert (await fast.delete(f"/v1/jobs/{brief}")).status_code == 200
        await asyncio.sleep(1.2)
        assert (await fast.get(f"/v1/jobs/{brief}")).status_code == 404


async def test_queue_endings_reconcile_the_record_once(app: FastAPI, client: httpx.AsyncClient) -> None:
    """saq ending a job on its own (worker lost, failed, aborted) writes the record's end once."""
    store = app.state.sorryless.store
    lost, failed, aborted = [(await client.post("/v1/jobs", json=JOB)).json()["id"] for _ in range(3)]
    await store.reconcile(lost, "lost", "swept")
    await store.reconcile(failed, "failed", "Traceback: saq timeout")
    await store.reconcile(aborted, "cancelled", "cancelled by client")
    await store.reconcile(lost, "cancelled", "too late")  # already ended: no second write
    records = {job_id: await store.get(job_id) for job_id in (lost, failed, aborted)}
    ends = {
        job_id: (r.status, (r.error or {}).get("code"), r.result_writes) for job_id, r in records.items() if r
    }
    assert ends == {
        lost: ("failed", "worker_lost", 1),
        failed: ("failed", "infra_error", 1),
        aborted: ("cancelled", "cancelled", 1),
    }
    assert {d["job_id"] for d in await store.dead_letters()} == {lost, failed}


async def test_a_stale_delivery_cannot_requeue_a_job_another_worker_runs(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """A swept delivery that wakes up (or is cancelled) after the job was handed to another
    worker must not flip the running job back to queued."""
    state = app.state.sorryless
    store = state.store
    job_id = (await client.post("/v1/jobs", json=JOB)).json()["id"]
    assert await store.mark_running(job_id, attempt=1, worker="worker-old") == "running"
    assert await store.mark_running(job_id, attempt=2, worker="worker-new") == "running"  # swept, redelivered
    assert not await store.set_queued(job_id, "worker stopped", attempt=1, worker="worker-old")
    assert not await store.set_queued(job_id, "worker stopped", attempt=1, worker="worker-new")
    record = await store.get(job_id)
    assert record is not None
    assert (record.status, record.worker, record.attempts) == ("running", "worker-new", 2)
    history = [e.type for e in await state.events.history(job_id)]
    assert "retrying" not in history
    assert await state.redis.hget(state.keyspace.stats, "stale_writes_refused") == "2"
    metrics = (await client.get("/metrics")).text
    assert "sorryless_stale_writes_refused_total 2.0" in metrics
    assert 'sorryless_jobs_total{status="stale_writes_refused"}' not in metrics
    # the delivery that holds the job still can
    assert await store.set_queued(job_id, "backend down", attempt=2, worker="worker-new")
    events = await state.events.history(job_id)
    assert (await store.status(job_id)) == "queued"
    assert [e.data.get("attempt") for e in events if e.type == "retrying"] == [3]


async def test_nothing_accepted_expires_before_it_ends(api_settings: Settings) -> None:
    """A job (and its batch) waiting longer than the result TTL is still there; the TTL starts
    when the job ends (a batch: when its last job ends)."""
    app = create_app(api_settings.model_copy(update={"job_result_ttl_s": 1}))
    state = app.state.sorryless
    keys, redis = state.keyspace, state.redis
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as client:
        job_id = (await client.post("/v1/jobs", json=JOB)).json()["id"]
        batch = (await client.post("/v1/batches", json={"jobs": [JOB, JOB]})).json()
        await redis.zadd(keys.jobs_index, {"job_gone_long_ago": 1.0})  # an entry whose record expired
        for key in (
            keys.job(job_id),
            keys.events(job_id),
            keys.batch(batch["id"]),
            keys.batch_jobs(batch["id"]),
        ):
            assert await redis.ttl(key) == -1, key
        await asyncio.sleep(1.3)  # longer than the TTL, still queued
        await client.post("/v1/jobs", json=JOB)  # a submit prunes the listing index
        waiting = await client.get(f"/v1/jobs/{job_id}")
        assert waiting.status_code == 200 and waiting.json()["status"] == "queued"
        listed = {item["id"] for item in (await client.get("/v1/jobs", params={"limit": 50})).json()["items"]}
        assert job_id in listed and set(batch["job_ids"]) <= listed
        assert await redis.zscore(keys.jobs_index, "job_gone_long_ago") is None
        assert (await client.get(f"/v1/batches/{batch['id']}")).json()["counts"]["queued"] == 2
        first, second = batch["job_ids"]
        assert (await client.delete(f"/v1/jobs/{first}")).status_code == 200
        assert await redis.ttl(keys.batch(batch["id"])) == -1, "a job of the batch is unfinished"
        assert 0 < await redis.ttl(keys.job(first)) <= 1
        assert (await client.delete(f"/v1/jobs/{second}")).status_code == 200
        for key in (keys.batch(batch["id"]), keys.batch_jobs(batch["id"]), keys.events(second)):
            assert 0 < await redis.ttl(key) <= 1, key
        await asyncio.sleep(1.2)
        assert (await client.get(f"/v1/batches/{batch['id']}")).status_code == 404
        assert (await client.get(f"/v1/jobs/{job_id}")).json()["status"] == "queued"
    await state.queue.aclose()


async def test_an_idle_worker_stops_quietly(
    api_settings: Settings, workers: WorkerHandle, caplog: pytest.LogCaptureFixture
) -> None:
    """Ctrl-C on an idle worker logs no warning (saq's shutdown-grace notice is about its own
    upkeep and dequeue loops, which always end by cancellation)."""
    caplog.set_level(logging.INFO)
    await workers.start()
    await asyncio.sleep(0.3)
    await workers.stop_all()
    noisy = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert noisy == []
    assert any("Working shutting down" in r.getMessage() for r in caplog.records), "saq's logs are captured"
