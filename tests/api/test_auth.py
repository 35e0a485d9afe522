"""API keys, the admin key, rate limits, active-job caps, daily quotas and queue backpressure."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from api.app import create_app
from sorryless.config import Settings

ADMIN = "admin-secret-for-tests"
JOB = {"kind": "verify", "params": {"code": "theorem t : True := trivial"}}


@pytest.fixture
async def secured(api_settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    settings = api_settings.model_copy(update={"auth_required": True, "admin_key": ADMIN})
    app = create_app(settings)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as client:
        yield client


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def make_key(client: httpx.AsyncClient, **limits: float) -> tuple[str, str]:
    answer = await client.post("/v1/keys", json={"name": "test", "limits": limits}, headers=bearer(ADMIN))
    assert answer.status_code == 201, answer.text
    body = answer.json()
    return body["id"], body["key"]


async def test_keys_are_required_and_checked(
    secured: httpx.AsyncClient, redis_client, redis_prefix: str
) -> None:
    missing = await secured.post("/v1/jobs", json=JOB)
    assert missing.status_code == 401 and missing.json()["error"]["code"] == "unauthenticated"
    assert missing.headers["www-authenticate"] == "Bearer"
    wrong = await secured.get("/v1/jobs", headers=bearer("sl_nope_nope"))
    assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "invalid_key"
    key_id, key = await make_key(secured)
    # only the hash is stored
    stored = await redis_client.hgetall(f"{redis_prefix}:apikey:{key_id}")
    assert stored and key.encode() not in b"".join(stored.values())
    ok = await secured.post("/v1/jobs", json=JOB, headers=bearer(key))
    assert ok.status_code == 201
    also = await secured.get(f"/v1/jobs/{ok.json()['id']}", headers={"X-API-Key": key})
    assert also.status_code == 200
    revoked = await secured.delete(f"/v1/keys/{key_id}", headers=bearer(ADMIN))
    assert revoked.status_code == 200 and revoked.json()["revoked"] is True
    after = await secured.get(f"/v1/jobs/{ok.json()['id']}", headers=bearer(key))
    assert after.status_code == 401


async def test_admin_only_routes(secured: httpx.AsyncClient) -> None:
    _, key = await make_key(secured)
    forbidden = await secured.post("/v1/keys", json={"name": "x"}, headers=bearer(key))
    assert forbidden.status_code == 403 and forbidden.json()["error"]["code"] == "forbidden"
    anonymous = await secured.get("/v1/keys")
    assert anonymous.status_code == 401
    listed = await secured.get("/v1/keys", headers=bearer(ADMIN))
    assert listed.status_code == 200 and len(listed.json()) == 1 and "key" not in listed.json()[0]
    assert (await secured.delete("/v1/keys/nope", headers=bearer(ADMIN))).status_code == 404


async def test_jobs_are_private_to_their_key(secured: httpx.AsyncClient) -> None:
    _, alice = await make_key(secured)
    _, bob = await make_key(secured)
    job_id = (await secured.post("/v1/jobs", json=JOB, headers=bearer(alice))).json()["id"]
    assert (await secured.get(f"/v1/jobs/{job_id}", headers=bearer(bob))).status_code == 404
    assert (await secured.delete(f"/v1/jobs/{job_id}", headers=bearer(bob))).status_code == 404
    assert (await secured.get("/v1/jobs", headers=bearer(bob))).json()["items"] == []
    assert len((await secured.get("/v1/jobs", headers=bearer(alice))).json()["items"]) == 1
    assert (await secured.get(f"/v1/jobs/{job_id}", headers=bearer(ADMIN))).status_code == 200


async def test_rate_limit_answers_429_with_retry_after(secured: httpx.AsyncClient) -> None:
    _, key = await make_key(secured, rate_per_s=0.5, burst=3)
    codes = [(await secured.get("/v1/jobs", headers=bearer(key))).status_code for _ in range(5)]
    assert codes[:3] == [200, 200, 200] and codes[3:] == [429, 429]
    limited = await secured.get("/v1/jobs", headers=bearer(key))
    assert limited.json()["error"]["code"] == "rate_limited"
    assert 1 <= int(limited.headers["retry-after"]) <= 2


async def test_active_job_cap_and_daily_quota(secured: httpx.AsyncClient) -> None:
    _, capped = await make_key(secured, max_active_jobs=2, rate_per_s=0)
    ids = [(await secured.post("/v1/jobs", json=JOB, headers=bearer(capped))).json()["id"] for _ in range(2)]
    third = await secured.post("/v1/jobs", json=JOB, headers=bearer(capped))
    assert third.status_code == 429 and third.json()["error"]["code"] == "too_many_active_jobs"
    assert int(third.headers["retry-after"]) >= 1
    assert (await secured.delete(f"/v1/jobs/{ids[0]}", headers=bearer(capped))).status_code == 200
    assert (await secured.post("/v1/jobs", json=JOB, headers=bearer(capped))).status_code == 201

    _, quota = await make_key(secured, daily_jobs=3, rate_per_s=0)
    batch = await secured.post("/v1/batches", json={"jobs": [JOB, JOB]}, headers=bearer(quota))
    assert batch.status_code == 201
    assert (await secured.post("/v1/jobs", json=JOB, headers=bearer(quota))).status_code == 201
    over = await secured.post("/v1/jobs", json=JOB, headers=bearer(quota))
    assert over.status_code == 429 and over.json()["error"]["code"] == "quota_exceeded"
    assert int(over.headers["retry-after"]) > 0


async def test_queue_backpressure(api_settings: Settings) -> None:
    app = create_app(api_settings.model_copy(update={"queue_max_depth": 3}))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as client:
        codes = [(await client.post("/v1/jobs", json=JOB)).status_code for _ in range(4)]
        assert codes == [201, 201, 201, 429]
        full = await client.post("/v1/jobs", json=JOB)
        assert full.json()["error"]["code"] == "queue_full" and full.headers["retry-after"] == "5"
        too_big = await client.post("/v1/batches", json={"jobs": [JOB] * 4, "queue": "interactive"})
        assert too_big.status_code == 429
        # the batch queue has its own depth
        assert (await client.post("/v1/batches", json={"jobs": [JOB] * 3})).status_code == 201


async def test_anonymous_when_auth_is_off(client: httpx.AsyncClient) -> None:
    assert (await client.post("/v1/jobs", json=JOB)).status_code == 201
    assert (await client.post("/v1/keys", json={"name": "x"})).status_code == 403  # no admin key configured


async def test_daily_attempt_quota(secured: httpx.AsyncClient, api_settings: Settings) -> None:
    """Each prove job is charged its budget's max_attempts when accepted; over the key's daily
    attempt quota: 429 with Retry-After and a JSON body saying what was used and asked."""
    _, key = await make_key(secured, daily_attempts=50, rate_per_s=0)
    listed = (await secured.get("/v1/keys", headers=bearer(ADMIN))).json()
    assert [k["daily_attempts"] for k in listed] == [50]

    def prove(attempts: int | None) -> dict[str, object]:
        params: dict[str, object] = {"statement": "theorem t : True := by sorry"}
        if attempts is not None:
            params["budget"] = {"max_attempts": attempts}
        return {"kind": "prove", "params": params}

    assert (await secured.post("/v1/jobs", json=prove(30), headers=bearer(key))).status_code == 201
    over = await secured.post("/v1/jobs", json=prove(21), headers=bearer(key))
    assert over.status_code == 429, over.text
    error = over.json()["error"]
    assert error["code"] == "attempt_quota_exceeded"
    assert error["detail"] == {"used": 30, "requested": 21, "daily_attempts": 50}
    assert 1 <= int(over.headers["retry-after"]) <= 86400
    # verify jobs spend no prover attempts; what fits still fits, and a batch is charged in full
    assert (await secured.post("/v1/jobs", json=JOB, headers=bearer(key))).status_code == 201
    assert (await secured.post("/v1/jobs", json=prove(20), headers=bearer(key))).status_code == 201
    batch = await secured.post("/v1/batches", json={"jobs": [prove(1)]}, headers=bearer(key))
    assert batch.status_code == 429 and batch.json()["error"]["detail"]["used"] == 50
    # no budget: charged the default budget
    _, small = await make_key(secured, daily_attempts=api_settings.prover_default_budget - 1, rate_per_s=0)
    refused = await secured.post("/v1/jobs", json=prove(None), headers=bearer(small))
    assert refused.status_code == 429
    assert refused.json()["error"]["detail"]["requested"] == api_settings.prover_default_budget
    # a file is charged per sorried theorem it will prove
    _, files = await make_key(secured, daily_attempts=3, rate_per_s=0)
    two_sorries = "theorem a : True := by sorry\n\ntheorem b : 1 = 1 := by sorry\n"
    body = {"kind": "prove", "params": {"file": two_sorries, "budget": {"max_attempts": 2}}}
    by_file = await secured.post("/v1/jobs", json=body, headers=bearer(files))
    assert by_file.status_code == 429 and by_file.json()["error"]["detail"]["requested"] == 4
    body["params"]["targets"] = ["b"]  # type: ignore[index]
    assert (await secured.post("/v1/jobs", json=body, headers=bearer(files))).status_code == 201
