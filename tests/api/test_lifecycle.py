"""The whole job lifecycle per kind, on real Redis, with the fake REPL and the fake LLM."""

from __future__ import annotations

import json
from typing import Any

import httpx
from fastapi import FastAPI

from api.store import JobRecord
from sorryless.config import Settings
from tests.api.conftest import WorkerHandle, parse_sse, wait_for_status
from tests.fakes.fake_llm import FakeLLMScript, serve_fake_llm

STUB = "theorem two_eq : 1 + 1 = 2 := by sorry"


async def test_verify_job_runs_to_a_certificate(client: httpx.AsyncClient, workers: WorkerHandle) -> None:
    await workers.start()
    answer = await client.post(
        "/v1/jobs", json={"kind": "verify", "params": {"code": "theorem t : True := trivial"}}
    )
    assert answer.status_code == 201, answer.text
    job_id = answer.json()["id"]
    assert answer.headers["location"] == f"/v1/jobs/{job_id}"
    job = await wait_for_status(client, job_id)
    assert job["status"] == "succeeded"
    assert job["result"]["verdict"] == "PASS" and job["result"]["passed"] is True
    cert = job["certificate"]
    assert cert["id"] == job_id and cert["verdict"] == "PASS"
    assert {t["tier"] for t in cert["tiers"]} >= {"compile"}
    assert job["attempts"] == 1
    assert job["created_at"] <= job["started_at"] <= job["finished_at"]


async def test_verify_reports_a_failing_verdict_as_a_finished_job(
    client: httpx.AsyncClient, workers: WorkerHandle
) -> None:
    await workers.start()
    answer = await client.post(
        "/v1/jobs",
        json={"kind": "verify", "params": {"code": "theorem t : 1 = 1 := by sorry", "policy": "strict"}},
    )
    job = await wait_for_status(client, answer.json()["id"])
    assert job["status"] == "succeeded"
    assert job["result"]["verdict"] == "SORRY" and job["result"]["passed"] is False
    assert job["attempts"] == 1, "a verdict is never retried"


async def test_prove_job_with_the_fake_llm(api_settings: Settings, workers: WorkerHandle) -> None:
    script = FakeLLMScript(replies=["```lean\ntheorem two_eq : 1 + 1 = 2 := by rfl\n```"])
    with serve_fake_llm(script) as base_url:
        settings = api_settings.model_copy(update={"llm_base_url": base_url, "llm_model": "fake-model"})
        app = _app(settings)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as client:
            await workers.start(settings=settings)
            answer = await client.post(
                "/v1/jobs",
                json={"kind": "prove", "params": {"statement": STUB, "budget": {"max_attempts": 2}}},
            )
            assert answer.status_code == 201, answer.text
            job = await wait_for_status(client, answer.json()["id"], timeout_s=30)
            events = await client.get(f"/v1/jobs/{job['id']}/events")
    assert job["status"] == "succeeded", job
    assert job["result"]["solved"] is True
    proof = job["result"]["proofs"][0]
    assert "rfl" in proof["proof"]
    assert job["certificate"]["verdict"] == "PASS"
    assert job["cost"]["llm_calls"] >= 1
    assert len(script.bodies()) >= 1
    kinds = [
        json.loads(e["data"]).get("kind") for e in parse_sse(events.text) if e.get("event") == "progress"
    ]
    assert any(k for k in kinds), "prover events were forwarded into the job stream"


def _app(settings: Settings) -> FastAPI:
    from api.app import create_app

    return create_app(settings)


async def test_prove_without_llm_uses_llm_free_strategies(
    client: httpx.AsyncClient, workers: WorkerHandle
) -> None:
    await workers.start()
    answer = await client.post(
        "/v1/jobs", json={"kind": "prove", "params": {"statement": STUB, "budget": {"max_attempts": 4}}}
    )
    job = await wait_for_status(client, answer.json()["id"], timeout_s=30)
    # the fake REPL accepts the portfolio's first sorry-free tactic: a verified proof
    assert job["status"] == "succeeded" and job["error"] is None, job
    assert job["result"]["solved"] is True and job["result"]["solved_count"] == 1, job
    proof = job["result"]["proofs"][0]
    assert proof["strategy"] == "portfolio" and proof["stopped"] == "solved" and proof["model"] is None
    assert "sorry" not in proof["proof"] and job["certificate"]["verdict"] == "PASS"


async def test_idempotency_key(client: httpx.AsyncClient) -> None:
    body = {"kind": "verify", "params": {"code": "theorem t : True := trivial"}}
    first = await client.post("/v1/jobs", json=body, headers={"Idempotency-Key": "abc"})
    assert first.status_code == 201
    again = await client.post(
        "/v1/jobs",
        content=json.dumps(body, indent=2),
        headers={"Idempotency-Key": "abc", "content-type": "application/json"},
    )
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    other = await client.post(
        "/v1/jobs",
        json={**body, "params": {"code": "theorem u : True := trivial"}},
        headers={"Idempotency-Key": "abc"},
    )
    assert other.status_code == 409
    assert other.json()["error"]["code"] == "idempotency_conflict"
    fresh = await client.post("/v1/jobs", json=body, headers={"Idempotency-Key": "def"})
    assert fresh.status_code == 201 and fresh.json()["id"] != first.json()["id"]


async def test_list_jobs_with_cursor_pagination_and_filters(client: httpx.AsyncClient) -> None:
    ids = []
    for i in range(7):
        answer = await client.post(
            "/v1/jobs", json={"kind": "verify", "params": {"code": f"theorem t{i} : True := trivial"}}
        )
        ids.append(answer.json()["id"])
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        page = (await client.get("/v1/jobs", params=params)).json()
        pages += 1
        seen += [item["id"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(ids) and len(seen) == len(set(seen))
    assert pages >= 3
    cancelled = await client.delete(f"/v1/jobs/{ids[2]}")
    assert cancelled.status_code == 200
    only = (await client.get("/v1/jobs", params={"status": "cancelled"})).json()
    assert [item["id"] for item in only["items"]] == [ids[2]]
    assert (await client.get("/v1/jobs", params={"cursor": "!!nope"})).status_code == 400


async def test_batch_submit_and_aggregate_progress(client: httpx.AsyncClient, workers: WorkerHandle) -> None:
    jobs = [{"kind": "verify", "params": {"code": f"theorem b{i} : True := trivial"}} for i in range(4)]
    jobs.append({"kind": "verify", "params": {"code": "theorem bad : 1 = 1 := by sorry"}})
    answer = await client.post("/v1/batches", json={"jobs": jobs}, headers={"Idempotency-Key": "b1"})
    assert answer.status_code == 201, answer.text
    batch = answer.json()
    assert len(batch["job_ids"]) == 5
    replay = await client.post("/v1/batches", json={"jobs": jobs}, headers={"Idempotency-Key": "b1"})
    assert replay.status_code == 200 and replay.json() == batch
    changed = await client.post("/v1/batches", json={"jobs": jobs[:2]}, headers={"Idempotency-Key": "b1"})
    assert changed.status_code == 409
    pending = (await client.get(f"/v1/batches/{batch['id']}")).json()
    assert pending["counts"]["queued"] == 5 and pending["done"] is False
    await workers.start()
    for job_id in batch["job_ids"]:
        await wait_for_status(client, job_id)
    view = (await client.get(f"/v1/batches/{batch['id']}")).json()
    assert view["done"] is True and view["progress"] == 1.0
    assert view["counts"]["succeeded"] == 5
    verdicts = [j["result"]["verdict"] for j in view["jobs"]]
    assert verdicts == ["PASS"] * 4 + ["SORRY"]
    listed = (await client.get("/v1/jobs", params={"batch": batch["id"], "limit": 10})).json()
    assert sorted(i["id"] for i in listed["items"]) == sorted(batch["job_ids"])
    job = (await client.get(f"/v1/jobs/{batch['job_ids'][0]}")).json()
    assert job["queue"] == "batch" and job["batch_id"] == batch["id"]


async def test_duplicate_delivery_writes_the_result_once(
    app: FastAPI, client: httpx.AsyncClient, workers: WorkerHandle
) -> None:
    """At-least-once: a second run of a finished job neither reruns nor rewrites it."""
    from api.queue import AttemptInfo
    from api.worker import Executor, WorkerResources
    from lean_server.checker import Priority

    await workers.start()
    answer = await client.post(
        "/v1/jobs", json={"kind": "verify", "params": {"code": "theorem t : True := trivial"}}
    )
    job = await wait_for_status(client, answer.json()["id"])
    state = app.state.sorryless
    executor = Executor(
        state.settings, state.store, state.events, state.kinds, WorkerResources(state.settings)
    )

    async def beat() -> None:
        return None

    again = await executor.execute(job["id"], AttemptInfo(2, 3, "dup-worker", Priority.INTERACTIVE, beat))
    assert again == {"skipped": "succeeded"}
    record: JobRecord | None = await state.store.get(job["id"])
    assert record is not None and record.result_writes == 1 and record.worker != "dup-worker"
    # a direct second terminal write is refused too
    assert await state.store.finalize(record, "failed", error={"code": "x", "message": "late"}) is None
    events = await state.events.history(job["id"])
    assert [e.type for e in events if e.terminal] == ["succeeded"]


async def test_prove_a_file_with_several_sorries(client: httpx.AsyncClient, workers: WorkerHandle) -> None:
    file = (
        "theorem first_one : True := by sorry\n\n"
        "theorem second_one : 1 = 1 := by sorry\n\n"
        "theorem done_already : 2 = 2 := rfl\n"
    )
    await workers.start()
    budget = {"max_attempts": 2}
    every = await client.post("/v1/jobs", json={"kind": "prove", "params": {"file": file, "budget": budget}})
    chosen = await client.post(
        "/v1/jobs",
        json={"kind": "prove", "params": {"file": file, "budget": budget, "targets": ["second_one"]}},
    )
    unknown = await client.post(
        "/v1/jobs", json={"kind": "prove", "params": {"file": file, "targets": ["nope"]}}
    )
    all_job = await wait_for_status(client, every.json()["id"], timeout_s=30)
    one_job = await wait_for_status(client, chosen.json()["id"], timeout_s=30)
    bad_job = await wait_for_status(client, unknown.json()["id"], timeout_s=30)
    assert all_job["status"] == "succeeded", all_job
    assert [p["task_id"].split(":")[-1] for p in all_job["result"]["proofs"]] == ["first_one", "second_one"]
    assert [p["task_id"].split(":")[-1] for p in one_job["result"]["proofs"]] == ["second_one"]
    assert bad_job["status"] == "failed" and bad_job["error"]["code"] == "no_targets"
    assert "second_one" in bad_job["error"]["message"]


async def test_prove_without_memory_neither_reads_nor_writes_it(
    api_settings: Settings, workers: WorkerHandle
) -> None:
    """``memory: false`` (independent evaluation samples): no retrieved proofs in the prompt, no
    memory_hit, nothing recorded; the same job with the memory on does both."""
    proofs = {
        "two_eq": "theorem two_eq : 1 + 1 = 2 := by rfl",
        "three_eq": "theorem three_eq : 2 + 1 = 3 := by rfl",
    }

    def reply(body: dict[str, Any]) -> list[Any]:
        text = json.dumps(body)
        target = "three_eq" if "three_eq : 2 + 1 = 3 := by sorry" in text else "two_eq"
        return [f"```lean\n{proofs[target]}\n```"] * int(body.get("n") or 1)

    script = FakeLLMScript(replies=reply)
    memory_file = api_settings.data_dir / "prover" / "memory.jsonl"

    def remembered() -> list[str]:
        lines = memory_file.read_text().splitlines() if memory_file.exists() else []
        return [json.loads(line)["task_id"] for line in lines]

    with serve_fake_llm(script) as base_url:
        settings = api_settings.model_copy(update={"llm_base_url": base_url, "llm_model": "fake-model"})
        app = _app(settings)
        state = app.state.sorryless
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as client:
            await workers.start(settings=settings)

            async def prove(statement: str, memory: bool) -> tuple[dict[str, Any], list[str], list[str]]:
                seen = len(script.bodies())
                params = {"statement": statement, "strategy": "retrieval", "memory": memory}
                params["budget"] = {"max_attempts": 1}
                answer = await client.post("/v1/jobs", json={"kind": "prove", "params": params})
                assert answer.status_code == 201, answer.text
                job = await wait_for_status(client, answer.json()["id"], timeout_s=30)
                kinds = [e.data.get("kind") for e in await state.events.history(job["id"])]
                prompts = [json.dumps(b) for b in script.bodies()[seen:]]
                return job, [k for k in kinds if k], prompts

            first, _, _ = await prove("theorem two_eq : 1 + 1 = 2 := by sorry", memory=True)
            assert first["result"]["solved"] is True, first
            assert remembered() == [first["id"]], "a job with the memory on records its proof"
            three = "theorem three_eq : 2 + 1 = 3 := by sorry"
            isolated, isolated_events, isolated_prompts = await prove(three, memory=False)
            assert remembered() == [first["id"]], "memory off: the proof is not recorded"
            shared, shared_events, shared_prompts = await prove(three, memory=True)
    assert isolated["status"] == "succeeded" and isolated["result"]["solved"] is True, isolated
    assert "memory_hit" not in isolated_events
    assert isolated_prompts and not any("by rfl" in p for p in isolated_prompts)
    assert shared["result"]["solved"] is True and remembered() == [first["id"], shared["id"]]
    assert "memory_hit" in shared_events, "the check above could see a read"
    assert any(proofs["two_eq"] in p for p in shared_prompts)
