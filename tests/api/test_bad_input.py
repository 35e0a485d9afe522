"""Every bad input gets a precise 4xx in the one error shape; none can crash a worker."""

from __future__ import annotations

import base64
import time
from collections.abc import AsyncIterator

import httpx
from fastapi import FastAPI

from api.queue import SubmitLimits
from api.store import new_record_fields
from api.submitting import new_id
from sorryless.config import Settings
from tests.api.conftest import WorkerHandle, wait_for_status

JOB = {"kind": "verify", "params": {"code": "theorem t : True := trivial"}}


def assert_error(answer: httpx.Response, status: int, code: str | None = None) -> None:
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert set(error) <= {"code", "message", "detail"} and error["message"]
    if code is not None:
        assert error["code"] == code, error


async def test_malformed_bodies(client: httpx.AsyncClient) -> None:
    headers = {"content-type": "application/json"}
    assert_error(await client.post("/v1/jobs", content=b"{not json", headers=headers), 400, "invalid_json")
    assert_error(
        await client.post("/v1/jobs", content=b'{"kind": "verify\xff"}', headers=headers), 400, "invalid_utf8"
    )
    assert_error(await client.post("/v1/jobs", content=b"", headers=headers), 422)
    assert_error(await client.post("/v1/jobs", json=[1, 2]), 422, "invalid_request")


async def test_unknown_kind_and_fields(client: httpx.AsyncClient) -> None:
    assert_error(await client.post("/v1/jobs", json={"kind": "solve", "params": {}}), 422, "invalid_request")
    assert_error(await client.post("/v1/jobs", json={**JOB, "colour": "red"}), 422)
    assert_error(
        await client.post("/v1/jobs", json={"kind": "verify", "params": {"code": "x", "extra": 1}}), 422
    )
    assert_error(await client.post("/v1/jobs", json={"kind": "verify", "params": {"code": ""}}), 422)
    assert_error(
        await client.post("/v1/jobs", json={"kind": "verify", "params": {"code": "x", "policy": "loose"}}),
        422,
    )
    bad_override = {"kind": "verify", "params": {"code": "x", "policy_overrides": {"allow_sorry": "maybe"}}}
    assert_error(await client.post("/v1/jobs", json=bad_override), 422)
    assert_error(await client.post("/v1/jobs", json={"kind": "prove", "params": {}}), 422)
    bad_profile = {"kind": "prove", "params": {"statement": "a", "profile": "gpt-unknown"}}
    assert_error(await client.post("/v1/jobs", json=bad_profile), 422)
    bad_policy = {"kind": "prove", "params": {"statement": "a", "policy": "anything-goes"}}
    assert_error(await client.post("/v1/jobs", json=bad_policy), 422)
    both = {"kind": "prove", "params": {"statement": "a", "file": "b"}}
    assert_error(await client.post("/v1/jobs", json=both), 422)
    assert_error(await client.post("/v1/jobs", json={**JOB, "queue": "urgent"}), 422)
    mismatch = {"jobs": [{**JOB, "queue": "interactive"}], "queue": "batch"}
    assert_error(await client.post("/v1/batches", json=mismatch), 422, "queue_mismatch")
    assert_error(await client.post("/v1/batches", json={"jobs": []}), 422)


def _reason(answer: httpx.Response) -> str:
    """The validation messages of a 422, joined (where the precise reason must be)."""
    return " | ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in answer.json()["error"]["detail"])


async def test_prove_budget_strategy_and_profile_are_validated(client: httpx.AsyncClient) -> None:
    """A misspelt budget cap, a non-finite or huge bound, an unknown strategy: 422, never a
    201 that runs unbounded or fails inside the worker."""
    stub = "theorem t : True := by sorry"

    async def prove(**params: object) -> httpx.Response:
        return await client.post("/v1/jobs", json={"kind": "prove", "params": {"statement": stub, **params}})

    typo = await prove(budget={"max_attemps": 5})
    assert_error(typo, 422, "invalid_request")
    assert "max_attemps" in _reason(typo) and "extra" in _reason(typo).lower()
    infinite = await client.post(
        "/v1/jobs",
        content=b'{"kind": "prove", "params": {"statement": "theorem t : True := by sorry", '
        b'"budget": {"max_wall_s": Infinity}}}',
        headers={"content-type": "application/json"},
    )
    assert_error(infinite, 422, "invalid_request")
    assert "max_wall_s" in _reason(infinite) and "finite" in _reason(infinite)
    for budget in ({"max_attempts": 0}, {"max_attempts": 10**9}, {"max_tokens": 10**12}, {"max_wall_s": -1}):
        answer = await prove(budget=budget)
        assert_error(answer, 422, "invalid_request")
        assert next(iter(budget)) in _reason(answer), budget
    unknown = await prove(strategy="nope")
    assert_error(unknown, 422, "invalid_request")
    assert "unknown strategy 'nope'" in _reason(unknown) and "portfolio" in _reason(unknown)
    assert_error(await prove(strategy="portfolio,nope"), 422, "invalid_request")
    assert_error(await prove(strategy=""), 422, "invalid_request")
    bad_profile = await prove(profile="gpt-unknown")
    assert "unknown profile 'gpt-unknown'" in _reason(bad_profile)
    # what the prover accepts still goes through (the eval gateway sends a full Budget dump)
    full = {"max_attempts": 8, "max_repair_rounds": 2, "max_tokens": None, "max_compile_calls": None}
    accepted = await prove(strategy="Portfolio, whole", profile="kimina", budget={**full, "max_wall_s": 60.5})
    assert accepted.status_code == 201, accepted.text


async def test_oversized_bodies(api_settings: Settings) -> None:
    from api.app import create_app

    app = create_app(api_settings.model_copy(update={"max_request_bytes": 1000}))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as client:
        big = {"kind": "verify", "params": {"code": "x" * 2000}}
        assert_error(await client.post("/v1/jobs", json=big), 413, "payload_too_large")

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it streams
            yield b'{"kind": "verify", "params": {"code": "'
            for _ in range(20):
                yield b"y" * 100
            yield b'"}}'

        streamed = await client.post(
            "/v1/jobs", content=chunks(), headers={"content-type": "application/json"}
        )
        assert_error(streamed, 413, "payload_too_large")
        lying = await client.post("/v1/jobs", content=b"{}", headers={"content-length": "abc"})
        assert lying.status_code == 400
        assert (await client.post("/v1/jobs", json=JOB)).status_code == 201


async def test_unknown_ids_and_routes(client: httpx.AsyncClient) -> None:
    assert_error(await client.get("/v1/jobs/job_doesnotexist"), 404, "not_found")
    assert_error(await client.get("/v1/batches/bat_doesnotexist"), 404, "not_found")
    assert_error(await client.get("/v1/jobs", params={"batch": "bat_nope"}), 404)
    assert_error(await client.get("/v1/nothing-here"), 404, "not_found")
    assert_error(await client.put("/v1/jobs", json=JOB), 405, "method_not_allowed")
    assert_error(await client.get("/v1/jobs", params={"limit": 0}), 422)
    assert_error(await client.get("/v1/jobs", params={"status": "sleeping"}), 422)
    for forged in ("nan:job_x", "inf:job_x", "1.5"):
        cursor = base64.urlsafe_b64encode(forged.encode()).decode()
        assert_error(await client.get("/v1/jobs", params={"cursor": cursor}), 400, "invalid_cursor")


async def test_params_that_fail_in_the_worker_fail_the_job_once(
    app: FastAPI, client: httpx.AsyncClient, workers: WorkerHandle
) -> None:
    """A record that slipped past the gateway (old schema, manual enqueue) fails cleanly, no retry."""
    state = app.state.sorryless
    submissions = []
    from api.queue import Submission

    for kind, params in (("verify", {"code": 42}), ("no-such-kind", {})):
        job_id = new_id("job")
        record = new_record_fields(
            job_id=job_id,
            kind=kind,
            queue="interactive",
            owner="anonymous",
            params=params,
            request_hash="",
            metadata=None,
            batch_id=None,
            created_at=time.time(),
        )
        submissions.append(Submission(job_id=job_id, queue="interactive", record=record))
    for sub in submissions:
        answer = await state.queue.submit([sub], owner="anonymous", limits=SubmitLimits())
        assert answer.outcome == "created"
    await workers.start()
    invalid = await wait_for_status(client, submissions[0].job_id)
    unknown = await wait_for_status(client, submissions[1].job_id)
    assert (
        invalid["status"] == "failed"
        and invalid["error"]["code"] == "invalid_params"
        and invalid["attempts"] == 1
    )
    assert unknown["status"] == "failed" and unknown["error"]["code"] == "unknown_kind"
    # the worker is still fine
    ok = await client.post("/v1/jobs", json=JOB)
    assert (await wait_for_status(client, ok.json()["id"]))["status"] == "succeeded"
