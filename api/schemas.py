"""Request and response models of the gateway (every field documented for OpenAPI)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

from api.kinds import JobKind
from api.store import JobRecord, JobStatus

QueueName = Literal["interactive", "batch"]
MAX_BATCH_JOBS = 1000


class ErrorDetail(BaseModel):
    """One error: a stable code, a message and optional structured detail."""

    code: str = Field(description="Stable machine-readable error code, e.g. `not_found`, `rate_limited`.")
    message: str = Field(description="Human-readable explanation.")
    detail: Any = Field(default=None, description="Extra structured detail (validation errors, limits).")


class ErrorResponse(BaseModel):
    """The one error shape of the API."""

    error: ErrorDetail = Field(description="What went wrong.")


_ERROR_TEXT: dict[int, str] = {
    400: "Malformed request (invalid JSON, invalid UTF-8, bad header).",
    401: "Missing or invalid API key.",
    403: "The key may not do this (admin only).",
    404: "No such resource (or not yours).",
    409: "Conflict (Idempotency-Key reused with another body; job already finished).",
    413: "Request body larger than the limit.",
    422: "The body does not validate (unknown kind or field, wrong type).",
    429: "Rate limit, concurrency cap, daily job or attempt quota, or queue backpressure; see Retry-After.",
    503: "A dependency (Redis) is unavailable; retry after Retry-After (same Idempotency-Key).",
}


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` entries documenting error answers with the error model (JSON routes)."""
    return {code: {"model": ErrorResponse, "description": _ERROR_TEXT[code]} for code in codes}


def stream_error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The same for a route whose success is not JSON (SSE): its errors are still JSON."""
    schema = {"$ref": "#/components/schemas/ErrorResponse"}
    return {
        code: {"description": _ERROR_TEXT[code], "content": {"application/json": {"schema": schema}}}
        for code in codes
    }


V1_ERRORS = error_responses(503)
"""Declared on every /v1 router: any route answers 503 while Redis is unreachable."""


def submit_responses(model: type[BaseModel], what: str) -> dict[int | str, dict[str, Any]]:
    """``responses=`` of a submit route: the idempotent replay (200) and its errors."""
    replay = {"model": model, "description": f"Idempotent replay: the {what} this Idempotency-Key created."}
    return {200: replay, **error_responses(400, 401, 409, 413, 422, 429, 503)}


class JobSummary(BaseModel):
    """A job in a listing."""

    id: str = Field(description="Job id.")
    kind: str = Field(description="Job kind (`verify`, `prove`, ...).")
    status: JobStatus = Field(description="queued, running, succeeded, failed or cancelled.")
    queue: QueueName = Field(description="Queue it runs on.")
    batch_id: str | None = Field(default=None, description="Batch it belongs to, if any.")
    created_at: float = Field(description="Unix seconds when accepted.")
    finished_at: float | None = Field(default=None, description="Unix seconds when it reached a final state.")


class JobOutcome(JobSummary):
    """A job in a batch: its summary plus what it produced."""

    result: dict[str, Any] | None = Field(default=None, description="Kind-specific result (when finished).")
    error: dict[str, Any] | None = Field(default=None, description="Why the job failed or was cancelled.")


class JobView(JobOutcome):
    """A job: its request, state, result and cost."""

    params: dict[str, Any] = Field(description="The validated params of the kind.")
    metadata: dict[str, str] = Field(default_factory=dict, description="Client tags given at submit.")
    certificate: dict[str, Any] | None = Field(
        default=None, description="The verification certificate (verify; prove of one statement when solved)."
    )
    cost: dict[str, Any] | None = Field(
        default=None, description="What was spent (prove: the prover's Cost)."
    )
    attempts: int = Field(description="Deliveries so far (infrastructure retries included).")
    started_at: float | None = Field(default=None, description="Unix seconds when the last delivery started.")

    @classmethod
    def of(cls, record: JobRecord) -> JobView:
        return cls.model_validate(
            record.model_dump(exclude={"owner", "request_hash", "worker", "result_writes"})
        )


class JobList(BaseModel):
    """One page of jobs."""

    items: list[JobSummary] = Field(description="Newest first.")
    next_cursor: str | None = Field(
        default=None, description="Pass as `cursor` for the next page; null at the end."
    )


class JobAccepted(BaseModel):
    """The answer to a submitted job."""

    id: str = Field(description="Job id.")
    status: JobStatus = Field(description="Status at the time of the answer.")
    location: str = Field(description="URL of the job.")
    events: str = Field(description="URL of its Server-Sent Events stream.")


class CancelAnswer(BaseModel):
    """The answer to a cancel."""

    id: str = Field(description="Job id.")
    status: JobStatus = Field(description="`cancelled`.")


class BatchAccepted(BaseModel):
    """The answer to a submitted batch."""

    id: str = Field(description="Batch id.")
    job_ids: list[str] = Field(description="Ids of its jobs, in request order.")
    location: str = Field(description="URL of the batch.")


class BatchView(BaseModel):
    """A batch: aggregate progress and every job's state and result."""

    id: str = Field(description="Batch id.")
    created_at: float = Field(description="Unix seconds when accepted.")
    total: int = Field(description="Jobs in the batch.")
    counts: dict[str, int] = Field(description="Jobs per status.")
    done: bool = Field(description="Every job reached a final state.")
    progress: float = Field(description="Fraction of jobs finished, 0..1.")
    jobs: list[JobOutcome] = Field(description="Per-job state and result, in request order.")


class KeyLimits(BaseModel):
    """Per-key limits; a field left out takes the server default."""

    model_config = ConfigDict(extra="forbid")

    rate_per_s: float | None = Field(
        default=None, ge=0, le=100_000, description="Requests per second (0 = none)."
    )
    burst: int | None = Field(default=None, ge=1, le=1_000_000, description="Token bucket size.")
    max_active_jobs: int | None = Field(
        default=None, ge=0, le=1_000_000, description="Unfinished jobs (0 = none)."
    )
    daily_jobs: int | None = Field(
        default=None, ge=0, le=100_000_000, description="Jobs per UTC day (0 = none)."
    )
    daily_attempts: int | None = Field(
        default=None,
        ge=0,
        le=10_000_000_000,
        description="Prover attempts per UTC day, charged at submit from each prove job's "
        "`budget.max_attempts` (0 = none).",
    )


class KeyCreate(BaseModel):
    """A new API key request."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200, description="Who or what the key is for.")
    limits: KeyLimits = Field(default_factory=KeyLimits, description="Overrides of the default limits.")


class KeyView(BaseModel):
    """An API key as stored (never its secret)."""

    id: str = Field(description="Key id (not secret; used to revoke).")
    name: str = Field(description="Who or what the key is for.")
    created_at: float = Field(description="Unix seconds when created.")
    revoked: bool = Field(description="Revoked keys are refused (401).")
    rate_per_s: float = Field(description="Requests per second refilled into its bucket (0 = unlimited).")
    burst: int = Field(description="Token bucket size.")
    max_active_jobs: int = Field(
        description="Unfinished (queued or running) jobs allowed at once (0 = unlimited)."
    )
    daily_jobs: int = Field(description="Jobs accepted per UTC day (0 = unlimited).")
    daily_attempts: int = Field(
        description="Prover attempts (budget.max_attempts of its prove jobs) per UTC day (0 = unlimited)."
    )


class KeyCreated(KeyView):
    """A new API key, with its secret."""

    key: str = Field(description="The secret API key. Shown once; only its hash is stored.")


class CheckResult(BaseModel):
    """The state of one dependency."""

    status: Literal["ok", "warning", "degraded", "unavailable", "down", "unconfigured"] = Field(
        description="ok; warning (works, but a setting puts something at risk: the service stays ok); "
        "degraded (answers, but not well); unavailable (not reachable or not running); "
        "down (Redis: nothing works); unconfigured (optional and not set up)."
    )
    detail: str | None = Field(default=None, description="What was found, and what to do about it.")
    data: dict[str, Any] = Field(default_factory=dict, description="Numbers behind the status.")


class Health(BaseModel):
    """The state of the service and of every dependency."""

    status: Literal["ok", "degraded", "down"] = Field(
        description="down: Redis unreachable; degraded: a dependency is."
    )
    checks: dict[str, CheckResult] = Field(
        description="redis, persistence (Redis AOF), queue, workers, lean, llm."
    )
    warnings: list[str] = Field(
        default_factory=list, description="What the checks with status `warning` found (not failures)."
    )


def job_request_models(kinds: dict[str, JobKind]) -> list[type[BaseModel]]:
    """One request model per kind: ``{"kind": <name>, "params": <kind params>, "queue"?, "metadata"?}``."""
    models: list[type[BaseModel]] = []
    for name, kind in kinds.items():
        title = "".join(part.capitalize() for part in name.replace("-", "_").split("_"))
        model = create_model(
            f"{title}JobRequest",
            __config__=ConfigDict(extra="forbid"),
            __doc__=kind.description,
            kind=(Literal[name], Field(description="Job kind.")),  # type: ignore[arg-type]
            params=(kind.params_model, Field(description="Parameters of this kind.")),
            queue=(QueueName | None, Field(default=None, description="interactive (default) or batch.")),
            metadata=(
                dict[Annotated[str, Field(max_length=64)], Annotated[str, Field(max_length=256)]] | None,
                Field(default=None, max_length=32, description="Client tags, echoed back."),
            ),
        )
        models.append(model)
    return models


def job_request_type(kinds: dict[str, JobKind]) -> Any:
    """The discriminated union of the kinds' request models (the body of POST /v1/jobs)."""
    models = job_request_models(kinds)
    if len(models) == 1:
        return models[0]
    return Annotated[Union[tuple(models)], Field(discriminator="kind")]  # noqa: UP007


def batch_request_type(job_type: Any) -> type[BaseModel]:
    return create_model(
        "BatchRequest",
        __config__=ConfigDict(extra="forbid"),
        __doc__="Many jobs, accepted together or not at all.",
        jobs=(list[job_type], Field(min_length=1, max_length=MAX_BATCH_JOBS, description="The jobs.")),
        queue=(
            QueueName,
            Field(
                default="batch",
                description="Queue of every job of the batch (a job naming another is refused).",
            ),
        ),
    )
