"""/v1/batches: submit many jobs at once (atomically), follow their aggregate progress.

(No ``from __future__ import annotations``: the body type is built from the job kinds.)
"""

import json
import time
from collections.abc import Awaitable
from typing import Any, cast

from fastapi import APIRouter, Response

from api.deps import Caller, IdempotencyKey, State
from api.errors import ApiError
from api.kinds import JobKind
from api.schemas import (
    BatchAccepted,
    BatchView,
    JobOutcome,
    batch_request_type,
    error_responses,
    job_request_type,
    submit_responses,
)
from api.submitting import new_id, request_hash, submit, to_submission

STATUSES = ("queued", "running", "succeeded", "failed", "cancelled")


def build_router(kinds: dict[str, JobKind]) -> APIRouter:
    batch_request = batch_request_type(job_request_type(kinds))
    router = APIRouter(prefix="/v1", tags=["batches"])

    @router.post(
        "/batches",
        status_code=201,
        response_model=BatchAccepted,
        summary="Submit a batch of jobs",
        responses=submit_responses(BatchAccepted, "batch"),
    )
    async def submit_batch(
        body: batch_request,  # type: ignore[valid-type]
        response: Response,
        caller: Caller,
        state: State,
        idempotency_key: IdempotencyKey = None,
    ) -> BatchAccepted:
        """All jobs are accepted together or none is."""
        request: Any = body
        for index, job in enumerate(request.jobs):
            if job.queue is not None and job.queue != request.queue:
                raise ApiError(
                    422,
                    "queue_mismatch",
                    f"jobs[{index}] names queue {job.queue!r}; the batch runs on {request.queue!r}",
                )
        batch_id = new_id("bat")
        now = time.time()
        submissions = [
            to_submission(
                job,
                owner=caller.owner,
                queue=request.queue,
                batch_id=batch_id,
                now=now,
                attempts=state.kinds[job.kind].attempts(job.params, state.settings),
            )
            for job in request.jobs
        ]
        record = {
            "id": batch_id,
            "owner": caller.owner,
            "created_at": repr(now),
            "total": str(len(submissions)),
            "unfinished": str(len(submissions)),  # the record's TTL starts when it reaches 0
            "job_ids": json.dumps([s.job_id for s in submissions]),
        }
        accepted = await submit(
            state,
            caller,
            submissions,
            idempotency_key=idempotency_key,
            body_hash=request_hash(request.model_dump(mode="json")),
            batch=record,
        )
        response.headers["Location"] = f"/v1/batches/{accepted.id}"
        if accepted.created:
            job_ids = [s.job_id for s in submissions]
        else:
            response.status_code = 200
            stored = await cast(
                Awaitable[str | None], state.redis.hget(state.keyspace.batch(accepted.id), "job_ids")
            )
            job_ids = json.loads(stored) if stored else []
        return BatchAccepted(id=accepted.id, job_ids=job_ids, location=f"/v1/batches/{accepted.id}")

    @router.get(
        "/batches/{batch_id}",
        response_model=BatchView,
        summary="Get a batch",
        responses=error_responses(401, 404, 422, 429),
    )
    async def get_batch(batch_id: str, caller: Caller, state: State) -> BatchView:
        """Counts per status, progress, and every job's status and result."""
        raw = await cast(Awaitable[dict[str, str]], state.redis.hgetall(state.keyspace.batch(batch_id)))
        if not raw or (not caller.is_admin and raw.get("owner") != caller.owner):
            raise ApiError(404, "not_found", f"no batch {batch_id!r}")
        job_ids: list[str] = json.loads(raw["job_ids"])
        records = await state.store.get_many(job_ids)
        counts = dict.fromkeys(STATUSES, 0)
        jobs: list[JobOutcome] = []
        for record in records:
            if record is None:
                continue
            counts[record.status] += 1
            jobs.append(JobOutcome.model_validate(record.model_dump()))
        total = len(job_ids)
        finished = counts["succeeded"] + counts["failed"] + counts["cancelled"]
        return BatchView(
            id=batch_id,
            created_at=float(raw["created_at"]),
            total=total,
            counts=counts,
            done=finished == total,
            progress=finished / total if total else 1.0,
            jobs=jobs,
        )

    return router
