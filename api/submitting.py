"""Turn validated job requests into records + queue entries (shared by /v1/jobs and /v1/batches)."""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from api.auth import Principal
from api.deps import AppState
from api.errors import ApiError, QueueError, too_many
from api.queue import QueueName, Submission
from api.store import new_record_fields

QUEUE_FULL_RETRY_S = 5.0
ACTIVE_CAP_RETRY_S = 5.0


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


def request_hash(payload: Any) -> str:
    """sha256 of the canonical JSON of a validated request: same body (modulo formatting) = same hash."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Accepted:
    id: str
    created: bool


def to_submission(
    request: BaseModel, *, owner: str, queue: QueueName, batch_id: str | None, now: float, attempts: int = 0
) -> Submission:
    """A validated job request as a record to enqueue; ``attempts``: what it is charged of the
    owner's daily attempt quota (:meth:`api.kinds.JobKind.attempts`)."""
    body = request.model_dump(mode="json")
    job_id = new_id("job")
    record = new_record_fields(
        job_id=job_id,
        kind=body["kind"],
        queue=queue,
        owner=owner,
        params=body["params"],
        request_hash=request_hash(body),
        metadata=body.get("metadata"),
        batch_id=batch_id,
        created_at=now,
    )
    return Submission(job_id=job_id, queue=queue, record=record, attempts=attempts)


def _seconds_to_utc_midnight(now: float) -> float:
    return 86400 - (now % 86400)


async def submit(
    state: AppState,
    caller: Principal,
    submissions: list[Submission],
    *,
    idempotency_key: str | None,
    body_hash: str,
    batch: dict[str, str] | None = None,
) -> Accepted:
    """Enqueue atomically; map refusals to 409 / 429 and an unreachable queue to 503."""
    try:
        answer = await state.queue.submit(
            submissions,
            owner=caller.owner,
            limits=caller.limits,
            idempotency_key=idempotency_key,
            request_hash=body_hash,
            batch=batch,
        )
    except QueueError as exc:
        raise ApiError(
            503,
            "queue_unavailable",
            "the job queue is unavailable; retry (with the same Idempotency-Key, to be safe)",
            detail=str(exc),
            headers={"Retry-After": "5"},
        ) from exc
    if answer.outcome in ("created", "existing"):
        return Accepted(id=answer.value, created=answer.outcome == "created")
    state.metrics.requests_rejected.labels(answer.outcome).inc()
    if answer.outcome == "conflict":
        raise ApiError(
            409,
            "idempotency_conflict",
            "this Idempotency-Key was used with a different body",
            detail={"existing_id": answer.value},
        )
    if answer.outcome == "busy":
        raise too_many(
            "queue_full",
            "the queue is full; retry later",
            QUEUE_FULL_RETRY_S,
            detail={"depth": int(answer.value), "max_depth": state.settings.queue_max_depth},
        )
    if answer.outcome == "active":
        raise too_many(
            "too_many_active_jobs",
            "this key has too many unfinished jobs",
            ACTIVE_CAP_RETRY_S,
            detail={"active": int(answer.value), "max_active_jobs": caller.limits.max_active_jobs},
        )
    if answer.outcome == "quota":
        raise too_many(
            "quota_exceeded",
            "this key's daily job quota is used up",
            _seconds_to_utc_midnight(time.time()),
            detail={"used": int(answer.value), "daily_jobs": caller.limits.daily_jobs},
        )
    if answer.outcome == "attempts_quota":
        raise too_many(
            "attempt_quota_exceeded",
            "this key's daily prover-attempt quota does not cover this request's budget",
            _seconds_to_utc_midnight(time.time()),
            detail={
                "used": int(answer.value),
                "requested": sum(s.attempts for s in submissions),
                "daily_attempts": caller.limits.daily_attempts,
            },
        )
    raise ApiError(503, "queue_unavailable", f"unexpected queue answer {answer.outcome!r}")
