"""GET /health: every dependency, truthfully (redis, persistence, queue, workers, lean, llm)."""

from __future__ import annotations

import asyncio
import importlib

import httpx
from fastapi import APIRouter, Response
from redis.exceptions import RedisError

from api.deps import AppState, State
from api.keyspace import QUEUE_NAMES
from api.schemas import CheckResult, Health

router = APIRouter(tags=["health"])


async def _redis(state: AppState) -> CheckResult:
    try:
        await state.redis.ping()
    except RedisError as exc:
        return CheckResult(status="down", detail=f"redis unreachable: {exc}")
    return CheckResult(status="ok", detail=state.settings.redis_url.split("@")[-1])


async def _persistence(state: AppState) -> CheckResult:
    """Whether Redis writes an append-only file: without it a Redis restart loses accepted jobs.
    Off is a warning (development runs without it), not a failure."""
    try:
        info = await state.redis.info("persistence")
    except RedisError as exc:
        return CheckResult(status="down", detail=f"redis unreachable: {exc}")
    aof = bool(int(info.get("aof_enabled", 0)))
    data: dict[str, object] = {"aof_enabled": aof}
    try:  # CONFIG may be renamed away on managed Redis; the fsync policy is then unknown
        data["appendfsync"] = (await state.redis.config_get("appendfsync")).get("appendfsync")
    except RedisError:
        data["appendfsync"] = None
    if not aof:
        return CheckResult(
            status="warning",
            detail="Redis runs without the append-only file: a Redis restart loses accepted jobs "
            "(run redis-server with --appendonly yes; see README, Deployment)",
            data=data,
        )
    fsync = data["appendfsync"]
    detail = f"append-only file on (appendfsync {fsync})" if fsync else "append-only file on"
    return CheckResult(status="ok", detail=detail, data=data)


async def _queue(state: AppState) -> tuple[CheckResult, CheckResult]:
    try:
        depths = {name: await state.queue.depth(name) for name in QUEUE_NAMES}
        workers = {name: await state.queue.workers(name) for name in QUEUE_NAMES}
    except RedisError as exc:
        down = CheckResult(status="down", detail=f"redis unreachable: {exc}")
        return down, down
    depth_data = {
        name: {
            "queued": d.queued,
            "active": d.active,
            "scheduled": d.scheduled,
            "oldest_age_s": d.oldest_age_s,
        }
        for name, d in depths.items()
    }
    total = sum(d.queued for d in depths.values())
    queue = CheckResult(
        status="ok" if total < state.settings.queue_max_depth else "degraded",
        detail=f"{total} waiting (limit {state.settings.queue_max_depth})",
        data=depth_data,
    )
    counts = {name: len(ws) for name, ws in workers.items()}
    missing = [name for name, n in counts.items() if n == 0]
    worker_check = CheckResult(
        status="ok" if not missing else "unavailable",
        detail=("live heartbeats: " + ", ".join(f"{k}={v}" for k, v in counts.items()))
        + (f"; no worker serves {', '.join(missing)} (run: sorryless worker)" if missing else ""),
        data={"workers": {name: sorted(ws) for name, ws in workers.items()}},
    )
    return queue, worker_check


async def _lean(state: AppState) -> CheckResult:
    try:
        lean_env = importlib.import_module("sorryless.lean_env")
        status = await asyncio.to_thread(lean_env.probe_lean, state.settings)
    except Exception as exc:
        return CheckResult(status="unavailable", detail=f"cannot probe Lean: {type(exc).__name__}: {exc}")
    if state.settings.lean_server_url:
        return await _lean_server(state, status.backend)
    if status.available:
        return CheckResult(status="ok", detail=f"backend {status.backend}", data={"backend": status.backend})
    return CheckResult(
        status="unavailable", detail=status.reason or "no Lean backend", data={"backend": status.backend}
    )


async def _lean_server(state: AppState, backend: str) -> CheckResult:
    url = (state.settings.lean_server_url or "").rstrip("/")
    try:
        answer = await state.http.get(f"{url}/health", timeout=2.0)
    except httpx.HTTPError as exc:
        return CheckResult(
            status="unavailable", detail=f"lean-server {url} unreachable: {type(exc).__name__}"
        )
    ok = answer.status_code == 200
    return CheckResult(
        status="ok" if ok else "degraded", detail=f"lean-server {url} answered {answer.status_code}"
    )


async def _llm(state: AppState) -> CheckResult:
    base = state.settings.llm_base_url
    if not base:
        return CheckResult(
            status="unconfigured",
            detail="no LLM configured (set SORRYLESS_LLM_BASE_URL); prove uses LLM-free strategies",
        )
    try:
        answer = await state.http.get(f"{base.rstrip('/')}/models", timeout=2.0)
    except httpx.HTTPError as exc:
        return CheckResult(status="unavailable", detail=f"{base} unreachable: {type(exc).__name__}")
    if answer.status_code != 200:
        return CheckResult(status="degraded", detail=f"{base}/models answered {answer.status_code}")
    return CheckResult(status="ok", detail=f"{base} reachable")


@router.get(
    "/health",
    response_model=Health,
    summary="Health of every dependency",
    responses={503: {"model": Health, "description": "Redis is down: nothing can be accepted."}},
)
async def health(state: State, response: Response) -> Health:
    redis_check = await _redis(state)
    if redis_check.status == "down":
        queue_check = workers_check = persistence_check = CheckResult(status="down", detail="needs redis")
    else:
        queue_check, workers_check = await _queue(state)
        persistence_check = await _persistence(state)
    lean_check, llm_check = await asyncio.gather(_lean(state), _llm(state))
    checks = {
        "redis": redis_check,
        "persistence": persistence_check,
        "queue": queue_check,
        "workers": workers_check,
        "lean": lean_check,
        "llm": llm_check,
    }
    if redis_check.status == "down":
        response.status_code = 503
        overall = "down"
    elif all(c.status in ("ok", "warning", "unconfigured") for c in checks.values()):
        overall = "ok"
    else:
        overall = "degraded"
    warnings = [f"{name}: {c.detail}" for name, c in checks.items() if c.status == "warning"]
    return Health(status=overall, checks=checks, warnings=warnings)
