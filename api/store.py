"""The durable job record: one Redis hash per job, written with compare-and-set scripts.

A job's record is created by the submit script in :mod:`api.queue` (together with the queue
entry, atomically) and ends with exactly one terminal write: :meth:`JobStore.finalize` only
writes while the record is not yet terminal, so a job that runs twice (at-least-once delivery,
saq sweep races) still has its result written once; later writes are refused and counted
(``stale_writes_refused`` in the stats hash). Records, their event streams and batch records
expire ``job_result_ttl_s`` after they finish (a batch: after its last job), never while a job
waits or runs.

Redis persistence: run Redis with ``appendonly yes`` so an acknowledged job survives a Redis
restart. ``appendfsync always`` fsyncs every write before Redis answers (nothing acknowledged is
ever lost, at a latency cost); ``everysec`` risks about the last second of writes on a host crash
or power loss. ``GET /health`` warns when the append-only file is off.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Literal, cast

import redis.asyncio as aioredis
from pydantic import BaseModel, Field

from api.events import JobEvents
from api.keyspace import Keyspace
from sorryless.config import Settings

if TYPE_CHECKING:
    from api.queue import QueueEnding

JobStatus = Literal["queued", "running", "succeeded", "failed", "cancelled"]
TERMINAL_STATUSES: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
STALE_WRITES_FIELD = "stale_writes_refused"
"""Field of the stats hash counting refused writes of stale deliveries (the scripts spell it out)."""
LATENCY_BUCKETS_S: tuple[float, ...] = (
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
    60,
    120,
    300,
    600,
    1800,
    3600,
)

_MARK_RUNNING = """
local st = redis.call('HGET', KEYS[1], 'status')
if not st then return 'missing' end
if st == 'succeeded' or st == 'failed' or st == 'cancelled' then return st end
redis.call('HSET', KEYS[1], 'status', 'running', 'started_at', ARGV[1], 'attempts', ARGV[2], 'worker', ARGV[3])
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[5], '*', 'type', 'started', 'data', ARGV[4])
return 'running'
"""

# KEYS: record, events, stats. ARGV: event json, maxlen, worker, attempt.
# Only the delivery that holds the job (same worker and attempt as the record) may put it back: a
# stale delivery (swept, then woken up) must not flip a job another worker is running.
_SET_QUEUED = """
local held = redis.call('HMGET', KEYS[1], 'status', 'worker', 'attempts')
if held[1] ~= 'running' then return 0 end
if held[2] ~= ARGV[3] or held[3] ~= ARGV[4] then
  redis.call('HINCRBY', KEYS[3], 'stale_writes_refused', 1)
  return 0
end
redis.call('HSET', KEYS[1], 'status', 'queued')
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', 'type', 'retrying', 'data', ARGV[1])
return 1
"""

# KEYS: record, events, active set, stats, latency hash, latency kinds set, deadletter,
#       batch record, batch index (both the unused key when the job has no batch)
# ARGV: status, finished_at, ttl, event json, maxlen, job id, bucket ('' = none), seconds,
#       kind, deadletter json ('' = none), deadletter maxlen, in a batch ('1'/'0'),
#       then field/value pairs
# The record and its event stream expire ttl after this write (never before: a job waits in the
# queue as long as it must); a batch record when its last job ends.
_FINALIZE = """
local st = redis.call('HGET', KEYS[1], 'status')
if not st then return false end
if st == 'succeeded' or st == 'failed' or st == 'cancelled' then
  redis.call('HINCRBY', KEYS[4], 'stale_writes_refused', 1)
  return false
end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'finished_at', ARGV[2])
for i = 13, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('HINCRBY', KEYS[1], 'result_writes', 1)
redis.call('EXPIRE', KEYS[1], ARGV[3])
local owner = redis.call('HGET', KEYS[1], 'owner')
redis.call('SREM', KEYS[3], ARGV[6])
redis.call('HINCRBY', KEYS[4], ARGV[1], 1)
if ARGV[7] ~= '' then
  redis.call('HINCRBY', KEYS[5], ARGV[7], 1)
  redis.call('HINCRBY', KEYS[5], 'count', 1)
  redis.call('HINCRBYFLOAT', KEYS[5], 'sum', ARGV[8])
  redis.call('SADD', KEYS[6], ARGV[9])
end
if ARGV[10] ~= '' then
  redis.call('XADD', KEYS[7], 'MAXLEN', '~', ARGV[11], '*', 'job_id', ARGV[6], 'data', ARGV[10])
  redis.call('HINCRBY', KEYS[4], 'dead_lettered', 1)
end
if ARGV[12] == '1' and redis.call('HEXISTS', KEYS[8], 'unfinished') == 1 then
  if redis.call('HINCRBY', KEYS[8], 'unfinished', -1) <= 0 then
    redis.call('EXPIRE', KEYS[8], ARGV[3])
    redis.call('EXPIRE', KEYS[9], ARGV[3])
  end
end
local id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[5], '*', 'type', ARGV[1], 'data', ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[3])
return id
"""


class JobRecord(BaseModel):
    """The stored state of one job (decoded from its Redis hash)."""

    id: str
    kind: str
    queue: str
    status: JobStatus
    owner: str
    batch_id: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    request_hash: str = ""
    metadata: dict[str, str] = Field(default_factory=dict)
    created_at: float
    started_at: float | None = None
    finished_at: float | None = None
    attempts: int = 0
    worker: str | None = None
    result: dict[str, Any] | None = None
    certificate: dict[str, Any] | None = None
    cost: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    result_writes: int = 0

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @classmethod
    def from_hash(cls, raw: dict[str, str]) -> JobRecord:
        def _json(name: str) -> Any:
            value = raw.get(name)
            return json.loads(value) if value else None

        def _float(name: str) -> float | None:
            value = raw.get(name)
            return float(value) if value else None

        return cls(
            id=raw["id"],
            kind=raw["kind"],
            queue=raw["queue"],
            status=raw["status"],
            owner=raw.get("owner", ""),
            batch_id=raw.get("batch_id") or None,
            params=_json("params") or {},
            request_hash=raw.get("request_hash", ""),
            metadata=_json("metadata") or {},
            created_at=float(raw["created_at"]),
            started_at=_float("started_at"),
            finished_at=_float("finished_at"),
            attempts=int(raw.get("attempts") or 0),
            worker=raw.get("worker") or None,
            result=_json("result"),
            certificate=_json("certificate"),
            cost=_json("cost"),
            error=_json("error"),
            result_writes=int(raw.get("result_writes") or 0),
        )


def new_record_fields(
    *,
    job_id: str,
    kind: str,
    queue: str,
    owner: str,
    params: dict[str, Any],
    request_hash: str,
    metadata: dict[str, str] | None,
    batch_id: str | None,
    created_at: float,
) -> dict[str, str]:
    """The hash fields of a freshly submitted job (all strings, as Redis stores them)."""
    return {
        "id": job_id,
        "kind": kind,
        "queue": queue,
        "status": "queued",
        "owner": owner,
        "batch_id": batch_id or "",
        "params": json.dumps(params, separators=(",", ":")),
        "request_hash": request_hash,
        "metadata": json.dumps(metadata or {}, separators=(",", ":")),
        "created_at": repr(created_at),
        "attempts": "0",
    }


def job_error(code: str, message: str) -> dict[str, str]:
    """The ``error`` of a job record: a stable code and a (bounded) message."""
    return {"code": code, "message": message[:4000]}


def build_store(settings: Settings, redis: aioredis.Redis) -> tuple[JobStore, JobEvents]:
    """The job store and event log of ``settings`` on ``redis``."""
    keys = Keyspace(settings.redis_key_prefix)
    store = JobStore(
        redis,
        keys,
        ttl_s=settings.job_result_ttl_s,
        events_maxlen=settings.job_events_maxlen,
        deadletter_maxlen=settings.deadletter_maxlen,
    )
    events = JobEvents(redis, keys, maxlen=settings.job_events_maxlen)
    return store, events


def _bucket(seconds: float) -> str:
    for bound in LATENCY_BUCKETS_S:
        if seconds <= bound:
            return repr(float(bound))
    return "+Inf"


class JobStore:
    """Reads and compare-and-set writes of job records."""

    def __init__(
        self, redis: aioredis.Redis, keys: Keyspace, *, ttl_s: int, events_maxlen: int, deadletter_maxlen: int
    ) -> None:
        self._redis = redis
        self._keys = keys
        self._ttl_s = ttl_s
        self._events_maxlen = events_maxlen
        self._deadletter_maxlen = deadletter_maxlen
        self._mark_running = redis.register_script(_MARK_RUNNING)
        self._set_queued = redis.register_script(_SET_QUEUED)
        self._finalize = redis.register_script(_FINALIZE)

    async def get(self, job_id: str) -> JobRecord | None:
        raw: dict[str, str] = await cast(
            Awaitable[dict[str, str]], self._redis.hgetall(self._keys.job(job_id))
        )
        return JobRecord.from_hash(raw) if raw else None

    async def get_many(self, job_ids: list[str]) -> list[JobRecord | None]:
        if not job_ids:
            return []
        async with self._redis.pipeline(transaction=False) as pipe:
            for job_id in job_ids:
                pipe.hgetall(self._keys.job(job_id))
            raws = await pipe.execute()
        return [JobRecord.from_hash(raw) if raw else None for raw in raws]

    async def status(self, job_id: str) -> str | None:
        """The job's status alone (None when there is no such job)."""
        return await cast(Awaitable[str | None], self._redis.hget(self._keys.job(job_id), "status"))

    async def mark_running(self, job_id: str, *, attempt: int, worker: str) -> str:
        """Mark a job running; answers 'running', 'missing' or the terminal status it already has."""
        event = json.dumps({"attempt": attempt, "worker": worker})
        answer = await self._mark_running(
            keys=[self._keys.job(job_id), self._keys.events(job_id)],
            args=[repr(time.time()), attempt, worker, event, self._events_maxlen],
        )
        return str(answer)

    async def set_queued(self, job_id: str, reason: str, *, attempt: int, worker: str) -> bool:
        """The delivery ``attempt`` on ``worker`` puts its running job back in the queue (to be
        retried as attempt + 1). Refused (False) unless the record is running *that* delivery:
        a stale one must not flip a job that another worker now runs."""
        event = json.dumps({"reason": reason, "attempt": attempt + 1})
        return bool(
            await self._set_queued(
                keys=[self._keys.job(job_id), self._keys.events(job_id), self._keys.stats],
                args=[event, self._events_maxlen, worker, str(attempt)],
            )
        )

    async def finalize(
        self,
        record: JobRecord,
        status: JobStatus,
        *,
        result: dict[str, Any] | None = None,
        certificate: dict[str, Any] | None = None,
        cost: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        dead_letter: bool = False,
    ) -> str | None:
        """Write the terminal state once. Returns the terminal event id, or None when already
        terminal (that late write is refused and counted in the stats' ``stale_writes_refused``)."""
        finished_at = time.time()
        fields: list[str] = []
        for name, value in (
            ("result", result),
            ("certificate", certificate),
            ("cost", cost),
            ("error", error),
        ):
            if value is not None:
                fields += [name, json.dumps(value, separators=(",", ":"))]
        event: dict[str, Any] = {"status": status}
        if result is not None:
            event["result"] = result
        if error is not None:
            event["error"] = error
        seconds = max(0.0, finished_at - record.created_at)
        bucket = _bucket(seconds) if status == "succeeded" else ""
        deadletter = ""
        if dead_letter:
            deadletter = json.dumps(
                {
                    "job_id": record.id,
                    "kind": record.kind,
                    "owner": record.owner,
                    "queue": record.queue,
                    "params": record.params,
                    "attempts": record.attempts,
                    "error": error,
                    "at": finished_at,
                }
            )
        answer = await self._finalize(
            keys=[
                self._keys.job(record.id),
                self._keys.events(record.id),
                self._keys.active(record.owner),
                self._keys.stats,
                self._keys.latency(record.kind),
                self._keys.latency_kinds,
                self._keys.deadletter,
                self._keys.batch(record.batch_id) if record.batch_id else self._keys.unused,
                self._keys.batch_jobs(record.batch_id) if record.batch_id else self._keys.unused,
            ],
            args=[
                status,
                repr(finished_at),
                self._ttl_s,
                json.dumps(event),
                self._events_maxlen,
                record.id,
                bucket,
                repr(seconds),
                record.kind,
                deadletter,
                self._deadletter_maxlen,
                "1" if record.batch_id else "0",
                *fields,
            ],
        )
        return answer if answer else None

    async def reconcile(self, job_id: str, ending: QueueEnding, error: str | None) -> None:
        """saq ended a job without the job's code writing its result: write the record's end."""
        record = await self.get(job_id)
        if record is None or record.terminal:
            return
        if ending == "cancelled":
            await self.finalize(record, "cancelled", error=job_error("cancelled", error or "cancelled"))
        elif ending == "lost":
            reason = "worker lost (no heartbeat), attempts exhausted"
            await self.finalize(record, "failed", error=job_error("worker_lost", reason), dead_letter=True)
        else:
            reason = error or "failed by the queue"
            await self.finalize(record, "failed", error=job_error("infra_error", reason), dead_letter=True)

    async def dead_letters(self, count: int = 100) -> list[dict[str, Any]]:
        entries = await self._redis.xrevrange(self._keys.deadletter, count=count)
        return [json.loads(fields["data"]) for _, fields in entries]
