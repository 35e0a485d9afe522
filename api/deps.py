"""Shared state of one gateway app and the FastAPI dependencies that hand it out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import httpx
import redis.asyncio as aioredis
from fastapi import Depends, Header, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from api.auth import ApiKeys, Principal
from api.errors import ApiError
from api.events import JobEvents
from api.keyspace import Keyspace
from api.kinds import JobKind
from api.metrics import ApiMetrics
from api.queue import JobQueue
from api.store import JobRecord, JobStore
from sorryless.config import Settings

_bearer = HTTPBearer(auto_error=False, description="API key: `Authorization: Bearer <key>`.")
_api_key_header = APIKeyHeader(
    name="X-API-Key", auto_error=False, description="API key (alternative header)."
)


@dataclass
class AppState:
    """Everything the routes share; built by :func:`api.app.create_app`, one per app."""

    settings: Settings
    keyspace: Keyspace
    redis: aioredis.Redis
    store: JobStore
    events: JobEvents
    queue: JobQueue
    keys: ApiKeys
    kinds: dict[str, JobKind]
    metrics: ApiMetrics
    http: httpx.AsyncClient


async def get_state(request: Request) -> AppState:
    state: AppState = request.app.state.sorryless
    return state


State = Annotated[AppState, Depends(get_state)]


async def get_caller(
    request: Request,
    state: State,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    api_key: Annotated[str | None, Depends(_api_key_header)],
) -> Principal:
    """Authenticate (401), then spend one token of the caller's rate limit (429)."""
    token = api_key.strip() if api_key else (bearer.credentials.strip() if bearer else None)
    if token is None and request.headers.get("authorization"):
        raise ApiError(
            401,
            "invalid_authorization",
            "use `Authorization: Bearer <key>`",
            headers={"WWW-Authenticate": "Bearer"},
        )
    principal = await state.keys.authenticate(token or None)
    await state.keys.take_token(principal)
    return principal


Caller = Annotated[Principal, Depends(get_caller)]


async def get_admin(caller: Caller, state: State) -> Principal:
    if caller.is_admin:
        return caller
    if caller.key_id is None:
        if not state.settings.admin_key:
            raise ApiError(403, "admin_disabled", "no admin key is configured (set SORRYLESS_ADMIN_KEY)")
        raise ApiError(
            401, "unauthenticated", "the admin key is required", headers={"WWW-Authenticate": "Bearer"}
        )
    raise ApiError(403, "forbidden", "this operation needs the admin key")


Admin = Annotated[Principal, Depends(get_admin)]


async def get_owned_job(job_id: str, caller: Caller, state: State) -> JobRecord:
    """The job, when it exists and belongs to the caller (admin sees all); else 404."""
    record = await state.store.get(job_id) if len(job_id) <= 100 else None
    if record is None or (not caller.is_admin and record.owner != caller.owner):
        raise ApiError(404, "not_found", f"no job {job_id!r}")
    return record


OwnedJob = Annotated[JobRecord, Depends(get_owned_job)]

IdempotencyKey = Annotated[
    str | None,
    Header(
        min_length=1,
        max_length=200,
        description="Same key + same body answers the first submission (for the result TTL); "
        "same key + another body is a 409.",
    ),
]
