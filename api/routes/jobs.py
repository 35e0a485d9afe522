"""/v1/jobs: submit, list, get, stream events (SSE), cancel.

(No ``from __future__ import annotations`` here: the request body type is built from the
registered job kinds at app creation, and FastAPI must see it as a real object.)
"""

import base64
import math
import time
from collections.abc import AsyncIterator, Awaitable
from typing import Annotated, Any, cast

from fastapi import APIRouter, Depends, Header, Query, Response
from fastapi.sse import EventSourceResponse, ServerSentEvent

from api.deps import Caller, IdempotencyKey, OwnedJob, State
from api.errors import ApiError
from api.events import is_stream_id
from api.kinds import JobKind
from api.schemas import (
    CancelAnswer,
    JobAccepted,
    JobList,
    JobSummary,
    JobView,
    error_responses,
    job_request_type,
    stream_error_responses,
    submit_responses,
)
from api.store import JobRecord, JobStatus
from api.submitting import submit, to_submission


def _accepted(job_id: str, status: JobStatus) -> JobAccepted:
    return JobAccepted(
        id=job_id, status=status, location=f"/v1/jobs/{job_id}", events=f"/v1/jobs/{job_id}/events"
    )


def _encode_cursor(score: float, member: str) -> str:
    return base64.urlsafe_b64encode(f"{score!r}:{member}".encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[float, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        score_text, member = raw.split(":", 1)
        score = float(score_text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, "invalid_cursor", "cursor is not one this API gave out") from exc
    if not math.isfinite(score):  # Redis refuses nan as a score bound: a 400, not a 503
        raise ApiError(400, "invalid_cursor", "cursor is not one this API gave out")
    return score, member


async def _resume_point(
    last_event_id: Annotated[
        str | None, Header(max_length=50, description="Resume after this event id.")
    ] = None,
) -> str:
    """The stream id to read after (validated before the stream starts, so a bad one is a 400)."""
    if not last_event_id:
        return "0-0"
    if not is_stream_id(last_event_id):
        raise ApiError(400, "invalid_last_event_id", "Last-Event-ID must be an id this stream sent")
    return last_event_id


def _ending_from_record(record: JobRecord | None) -> ServerSentEvent:
    """The terminal event of a job whose stream lost it (trimmed, or the job expired)."""
    if record is None:
        error = {"code": "expired", "message": "the job's record expired"}
        return ServerSentEvent(event="failed", data={"status": "failed", "result": None, "error": error})
    data = {"status": record.status, "result": record.result, "error": record.error}
    return ServerSentEvent(event=record.status, data=data)


def build_router(kinds: dict[str, JobKind]) -> APIRouter:
    job_request = job_request_type(kinds)
    router = APIRouter(prefix="/v1", tags=["jobs"])

    @router.post(
        "/jobs",
        status_code=201,
        response_model=JobAccepted,
        summary="Submit a job",
        responses=submit_responses(JobAccepted, "job"),
    )
    async def submit_job(
        body: job_request,  # type: ignore[valid-type]
        response: Response,
        caller: Caller,
        state: State,
        idempotency_key: IdempotencyKey = None,
    ) -> JobAccepted:
        """Accept a job: its record and queue entry are written before the answer (201 + Location)."""
        started = time.perf_counter()
        request: Any = body
        queue = request.queue or state.kinds[request.kind].default_queue
        attempts = state.kinds[request.kind].attempts(request.params, state.settings)
        submission = to_submission(
            request, owner=caller.owner, queue=queue, batch_id=None, now=time.time(), attempts=attempts
        )
        accepted = await submit(
            state,
            caller,
            [submission],
            idempotency_key=idempotency_key,
            body_hash=submission.record["request_hash"],
        )
        response.headers["Location"] = f"/v1/jobs/{accepted.id}"
        status: JobStatus = "queued"
        if not accepted.created:
            response.status_code = 200
            record = await state.store.get(accepted.id)
            status = record.status if record else "queued"
        state.metrics.submit_seconds.observe(time.perf_counter() - started)
        return _accepted(accepted.id, status)

    @router.get(
        "/jobs",
        response_model=JobList,
        summary="List jobs",
        responses=error_responses(400, 401, 404, 422, 429),
    )
    async def list_jobs(
        caller: Caller,
        state: State,
        status: Annotated[JobStatus | None, Query(description="Only jobs with this status.")] = None,
        batch: Annotated[str | None, Query(max_length=100, description="Only jobs of this batch.")] = None,
        limit: Annotated[int, Query(ge=1, le=200, description="Page size.")] = 50,
        cursor: Annotated[
            str | None, Query(max_length=400, description="`next_cursor` of the previous page.")
        ] = None,
    ) -> JobList:
        """Your jobs, newest first (a batch's jobs in reverse request order), with cursor pagination."""
        keys = state.keyspace
        if batch is not None:
            owner = await cast(Awaitable[str | None], state.redis.hget(keys.batch(batch), "owner"))
            if owner is None or (not caller.is_admin and owner != caller.owner):
                raise ApiError(404, "not_found", f"no batch {batch!r}")
            index = keys.batch_jobs(batch)
        else:
            index = keys.jobs_index if caller.is_admin else keys.owner_index(caller.owner)
        max_score: Any = "+inf"
        after: tuple[float, str] | None = None
        if cursor:
            after = _decode_cursor(cursor)
            max_score = after[0]
        items: list[JobSummary] = []
        scores: list[float] = []
        offset = 0
        chunk = max(limit * 2, 50)
        exhausted = False
        while len(items) < limit:
            page = await state.redis.zrevrangebyscore(
                index, max_score, "-inf", start=offset, num=chunk, withscores=True
            )
            if not page:
                exhausted = True
                break
            offset += len(page)
            candidates = [
                (m, s) for m, s in page if after is None or s < after[0] or (s == after[0] and m < after[1])
            ]
            records = await state.store.get_many([m for m, _ in candidates])
            for (_member, score), record in zip(candidates, records, strict=True):
                if record is None or (status is not None and record.status != status):
                    continue
                items.append(JobSummary.model_validate(record.model_dump()))
                scores.append(score)
                if len(items) == limit:
                    break
            if len(page) < chunk and len(items) < limit:
                exhausted = True
                break
        next_cursor = None
        if items and not exhausted and len(items) == limit:
            next_cursor = _encode_cursor(scores[-1], items[-1].id)
        return JobList(items=items, next_cursor=next_cursor)

    @router.get(
        "/jobs/{job_id}",
        response_model=JobView,
        summary="Get a job",
        responses=error_responses(401, 404, 422, 429),
    )
    async def get_job(job: OwnedJob) -> JobView:
        """Status, result, certificate, cost and timestamps."""
        return JobView.of(job)

    @router.get(
        "/jobs/{job_id}/events",
        response_class=EventSourceResponse,
        summary="Stream a job's events (SSE)",
        responses={
            200: {
                "description": "`snapshot` first (the job now), then the job's events from `Last-Event-ID` "
                "(or the start), each with its stream id as SSE id, ending with `succeeded`, `failed` or "
                "`cancelled`; `: keep-alive` comments while idle."
            },
            **stream_error_responses(400, 401, 404, 422, 429, 503),
        },
    )
    async def job_events(
        job: OwnedJob, state: State, resume_after: Annotated[str, Depends(_resume_point)]
    ) -> AsyncIterator[ServerSentEvent]:
        after = resume_after
        yield ServerSentEvent(event="snapshot", data=JobView.of(job).model_dump(mode="json"), retry=2000)
        while True:
            batch = await state.events.read(job.id, after=after, block_ms=state.settings.sse_block_ms)
            ending: ServerSentEvent | None = None
            if not batch:
                record = await state.store.get(job.id)
                if record is not None and not record.terminal:
                    yield ServerSentEvent(comment="keep-alive")
                    continue
                # finished meanwhile: its terminal event is in the stream now (same script as the
                # record), unless the stream was trimmed or expired; then the record ends the stream
                batch = await state.events.read(job.id, after=after)
                ending = _ending_from_record(record)
            for event in batch:
                after = event.id
                yield ServerSentEvent(id=event.id, event=event.type, data=event.data)
                if event.terminal:
                    return
            if ending is not None:
                yield ending
                return

    @router.delete(
        "/jobs/{job_id}",
        response_model=CancelAnswer,
        summary="Cancel a job",
        responses=error_responses(401, 404, 409, 422, 429, 503),
    )
    async def cancel_job(job: OwnedJob, state: State) -> CancelAnswer:
        """Cancel a queued or running job (in-flight LLM requests and Lean checks are abandoned).

        Cancelling a cancelled job answers 200 again; a job that succeeded or failed answers 409.
        """
        if job.status == "cancelled":
            return CancelAnswer(id=job.id, status="cancelled")
        if not job.terminal:
            written = await state.store.finalize(
                job, "cancelled", error={"code": "cancelled", "message": "cancelled by client"}
            )
            if written is not None:
                await state.queue.abort(job.id, job.queue)
                return CancelAnswer(id=job.id, status="cancelled")
        current = await state.store.get(job.id)
        status = current.status if current else job.status
        if status == "cancelled":
            return CancelAnswer(id=job.id, status="cancelled")
        raise ApiError(409, "already_finished", f"job {job.id} already {status}", detail={"status": status})

    return router
