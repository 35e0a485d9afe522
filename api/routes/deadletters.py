"""GET /v1/dead-letters: jobs that exhausted their attempts on infrastructure failures (admin)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from api.deps import Admin, State
from api.schemas import error_responses

router = APIRouter(prefix="/v1", tags=["admin"])


class DeadLetter(BaseModel):
    """A job given up after its last attempt, with what is needed to resubmit it."""

    job_id: str = Field(description="The failed job.")
    kind: str = Field(description="Its kind.")
    owner: str = Field(description="Who submitted it (`anonymous`, `key-<id>`, `admin`).")
    queue: str = Field(description="Queue it ran on.")
    params: dict[str, Any] = Field(description="Its params, to resubmit.")
    attempts: int = Field(description="Deliveries it had.")
    error: dict[str, Any] | None = Field(default=None, description="The last error.")
    at: float = Field(description="Unix seconds when it was given up.")


@router.get(
    "/dead-letters",
    response_model=list[DeadLetter],
    summary="Jobs given up after their last attempt (admin)",
    responses=error_responses(401, 403, 422, 429),
)
async def dead_letters(
    _admin: Admin,
    state: State,
    limit: Annotated[int, Query(ge=1, le=1000, description="Newest first, at most this many.")] = 100,
) -> list[DeadLetter]:
    return [DeadLetter.model_validate(d) for d in await state.store.dead_letters(limit)]
