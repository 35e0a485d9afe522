"""SSE: snapshot first, terminal last, SSE id = stream entry id, resumable with Last-Event-ID."""

from __future__ import annotations

import asyncio
import json

import httpx
from fastapi import FastAPI

from tests.api.conftest import WorkerHandle, parse_sse, wait_for_status


async def test_event_stream_of_a_finished_job(client: httpx.AsyncClient, workers: WorkerHandle) -> None:
    await workers.start()
    answer = await client.post(
        "/v1/jobs", json={"kind": "verify", "params": {"code": "theorem t : True := trivial"}}
    )
    job_id = answer.json()["id"]
    await wait_for_status(client, job_id)
    stream = await client.get(f"/v1/jobs/{job_id}/events")
    assert stream.status_code == 200
    assert stream.headers["content-type"].startswith("text/event-stream")
    frames = [f for f in parse_sse(stream.text) if "event" in f]
    assert frames[0]["event"] == "snapshot" and "id" not in frames[0]
    assert json.loads(frames[0]["data"])["status"] == "succeeded"
    types = [f["event"] for f in frames[1:]]
    assert types[0] == "queued" and "started" in types and types[-1] == "succeeded"
    ids = [f["id"] for f in frames[1:]]
    assert all(i.count("-") == 1 for i in ids) and ids == sorted(
        ids, key=lambda i: tuple(map(int, i.split("-")))
    )
    # resume after the second event: exactly the events after it
    resumed = await client.get(f"/v1/jobs/{job_id}/events", headers={"Last-Event-ID": ids[1]})
    again = [f for f in parse_sse(resumed.text) if "event" in f]
    assert again[0]["event"] == "snapshot"
    assert [f["id"] for f in again[1:]] == ids[2:]
    bad = await client.get(f"/v1/jobs/{job_id}/events", headers={"Last-Event-ID": "nonsense"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_last_event_id"
    missing = await client.get("/v1/jobs/job_nope/events")
    assert missing.status_code == 404


async def test_resume_after_disconnect_mid_job(live_url: str, workers: WorkerHandle) -> None:
    """Disconnect while a job runs; reconnecting with Last-Event-ID misses nothing and repeats nothing."""
    async with httpx.AsyncClient(base_url=live_url, timeout=30) as client:
        answer = await client.post(
            "/v1/jobs",
            json={"kind": "verify", "params": {"code": "theorem s : True := trivial -- FAKE:slow=1500"}},
        )
        job_id = answer.json()["id"]
        first: list[dict[str, str]] = []
        await workers.start()
        async with client.stream("GET", f"/v1/jobs/{job_id}/events") as response:
            buffer = ""
            async for chunk in response.aiter_text():
                buffer += chunk
                first = [f for f in parse_sse(buffer) if "id" in f]
                if any(f.get("event") == "started" for f in first) and buffer.endswith("\n\n"):
                    break  # disconnect mid-job
        assert first and first[-1]["event"] != "succeeded"
        comments_seen = False
        async with client.stream(
            "GET", f"/v1/jobs/{job_id}/events", headers={"Last-Event-ID": first[-1]["id"]}
        ) as response:
            text = ""
            async for chunk in response.aiter_text():
                text += chunk
                comments_seen = comments_seen or ": keep-alive" in chunk
        rest = [f for f in parse_sse(text) if "id" in f]
        assert rest, text
        assert rest[-1]["event"] == "succeeded"
        all_ids = [f["id"] for f in first] + [f["id"] for f in rest]
        assert len(all_ids) == len(set(all_ids)), "no event delivered twice"
        full = [f for f in parse_sse((await client.get(f"/v1/jobs/{job_id}/events")).text) if "id" in f]
        assert [f["id"] for f in full] == all_ids, "no event lost"
        assert comments_seen, "keep-alive comments while the job was quiet"


async def test_stream_waits_for_a_queued_job(app: FastAPI, live_url: str, workers: WorkerHandle) -> None:
    async with httpx.AsyncClient(base_url=live_url, timeout=30) as client:
        answer = await client.post(
            "/v1/jobs", json={"kind": "verify", "params": {"code": "theorem q : True := trivial"}}
        )
        job_id = answer.json()["id"]

        async def read_all() -> str:
            text = ""
            async with client.stream("GET", f"/v1/jobs/{job_id}/events") as response:
                async for chunk in response.aiter_text():
                    text += chunk
            return text

        reader = asyncio.create_task(read_all())
        await asyncio.sleep(0.5)
        assert not reader.done(), "the stream stays open while the job waits"
        await workers.start()
        text = await asyncio.wait_for(reader, 20)
    frames = [f for f in parse_sse(text) if "event" in f]
    assert frames[0]["event"] == "snapshot" and json.loads(frames[0]["data"])["status"] == "queued"
    assert frames[-1]["event"] == "succeeded"
