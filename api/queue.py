"""The job queue: the only module that knows saq.

Two saq queues, ``interactive`` and ``batch`` (saq names ``<prefix>:interactive`` and
``<prefix>:batch``), served by workers with separate concurrency so batch work never starves
interactive work. Every saq job gets explicit ``timeout``, ``heartbeat``, ``retries``,
``retry_delay``, ``retry_backoff`` and ``ttl`` (saq's defaults are 10 s and no retry).

Submitting is one Lua script round trip that, atomically: honours the Idempotency-Key, refuses
when the queue is deeper than ``queue_max_depth`` or the key is over its active-job cap, daily
job quota or daily attempt quota, writes each job record (:mod:`api.store`), its first event,
the indexes, and the saq job exactly as saq's own enqueue script would (job body, ``incomplete``
zset, ``queued`` list). So a job is acknowledged only when both its record and its queue entry
exist, and never one without the other. The script is safe to run twice with the same arguments (a replay finds the
first job's record and answers ``existing``), so a submit whose connection broke before the
answer is sent again once: the caller learns whether the job was accepted instead of guessing.

Terminal saq transitions are reconciled with the job record through a ``finish`` hook: a job
whose worker died (swept after its heartbeat stopped) is retried by saq while it has attempts
left, and is failed with a dead-letter entry when it has none; a saq abort becomes "cancelled".

Redis persistence: ``appendonly yes`` (see :mod:`api.store`); ``/health`` warns when it is off.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, cast

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from saq import Job, Status, Worker
from saq.queue.redis import RedisQueue

from api.errors import QueueError
from api.keyspace import QUEUE_NAMES, Keyspace
from api.store import TERMINAL_STATUSES
from lean_server.checker import Priority
from sorryless.config import Settings
from sorryless.logging import get_logger

log = get_logger(__name__)

JOB_FUNCTION = "sorryless_job"
CANCELLED_ERROR = "cancelled by client"
SAQ_JOB_TTL_S = 3600
_SAQ_TIMEOUT_MARGIN_S = 60
QueueName = Literal["interactive", "batch"]

# KEYS: 1 idem, 2 saq queued, 3 saq incomplete, 4 jobs index, 5 owner index, 6 active set,
#       7 quota, 8 batch index, 9 batch record, 10 stats, 11 attempts quota;
#       then per job: record, saq job, events
# ARGV: 1 use idem, 2 request hash, 3 answer id, 4 max depth, 5 max active, 6 daily quota,
#       7 ttl, 8 score, 9 events maxlen, 10 n jobs, 11 batch record json, 12 quota ttl,
#       13 attempts charged, 14 daily attempts quota, 15 job record key prefix;
#       then per job: job id, record json, saq payload, event json
# Nothing written here expires before the job ends: the record and its event stream get their
# TTL from the result write (api.store), a batch record when its last job ends; only the
# idempotency key and the quota counters expire on their own.
_SUBMIT = """
if ARGV[1] == '1' then
  local seen = redis.call('GET', KEYS[1])
  if seen then
    local sep = string.find(seen, '|', 1, true)
    local hash = string.sub(seen, 1, sep - 1)
    local id = string.sub(seen, sep + 1)
    if hash == ARGV[2] then return {'existing', id} end
    return {'conflict', id}
  end
end
if redis.call('EXISTS', KEYS[12]) == 1 then return {'existing', ARGV[3]} end
local n = tonumber(ARGV[10])
local depth = redis.call('LLEN', KEYS[2])
if depth + n > tonumber(ARGV[4]) then return {'busy', tostring(depth)} end
if tonumber(ARGV[5]) > 0 then
  local active = redis.call('SCARD', KEYS[6])
  if active + n > tonumber(ARGV[5]) then return {'active', tostring(active)} end
end
if tonumber(ARGV[6]) > 0 then
  local used = tonumber(redis.call('GET', KEYS[7]) or '0')
  if used + n > tonumber(ARGV[6]) then return {'quota', tostring(used)} end
end
local charged = tonumber(ARGV[13])
if tonumber(ARGV[14]) > 0 and charged > 0 then
  local spent = tonumber(redis.call('GET', KEYS[11]) or '0')
  if spent + charged > tonumber(ARGV[14]) then return {'attempts_quota', tostring(spent)} end
end
local ttl = tonumber(ARGV[7])
for i = 0, n - 1 do
  local k = 11 + 3 * i
  local a = 15 + 4 * i
  local record = cjson.decode(ARGV[a + 2])
  for field, value in pairs(record) do redis.call('HSET', KEYS[k + 1], field, value) end
  redis.call('XADD', KEYS[k + 3], 'MAXLEN', '~', ARGV[9], '*', 'type', 'queued', 'data', ARGV[a + 4])
  redis.call('SET', KEYS[k + 2], ARGV[a + 3])
  redis.call('ZADD', KEYS[3], 0, KEYS[k + 2])
  redis.call('RPUSH', KEYS[2], KEYS[k + 2])
  redis.call('ZADD', KEYS[4], ARGV[8], ARGV[a + 1])
  redis.call('ZADD', KEYS[5], ARGV[8], ARGV[a + 1])
  if ARGV[11] ~= '' then redis.call('ZADD', KEYS[8], i, ARGV[a + 1]) end
  if tonumber(ARGV[5]) > 0 then redis.call('SADD', KEYS[6], ARGV[a + 1]) end
end
if ARGV[11] ~= '' then
  local batch = cjson.decode(ARGV[11])
  for field, value in pairs(batch) do redis.call('HSET', KEYS[9], field, value) end
end
if tonumber(ARGV[6]) > 0 then
  redis.call('INCRBY', KEYS[7], n)
  redis.call('EXPIRE', KEYS[7], ARGV[12])
end
if tonumber(ARGV[14]) > 0 and charged > 0 then
  redis.call('INCRBY', KEYS[11], charged)
  redis.call('EXPIRE', KEYS[11], ARGV[12])
end
redis.call('HINCRBY', KEYS[10], 'submitted', n)
-- prune listing entries older than the TTL whose record is gone (a few per submit; an old job
-- still queued or running keeps its entry)
local horizon = '(' .. (tonumber(ARGV[8]) - ttl * 1000)
for _, index in ipairs({KEYS[4], KEYS[5]}) do
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', index, '-inf', horizon, 'LIMIT', 0, 8)) do
    if redis.call('EXISTS', ARGV[15] .. id) == 0 then redis.call('ZREM', index, id) end
  end
end
if ARGV[1] == '1' then redis.call('SET', KEYS[1], ARGV[2] .. '|' .. ARGV[3], 'EX', ttl) end
return {'created', ARGV[3]}
"""


# saq's cleanup script: under a lock, every job id in the active list with its body
_SWEEP_SNAPSHOT = """
local id_jobs = {}
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SETEX', KEYS[1], ARGV[1], 1)
  for i, v in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
    id_jobs[i] = {v, redis.call('GET', v)}
  end
end
return id_jobs
"""
_DEQUEUE_GRACE_S = 1.0


@dataclass(frozen=True)
class Submission:
    """One job to enqueue: its record fields (see :func:`api.store.new_record_fields`)."""

    job_id: str
    queue: QueueName
    record: dict[str, str]
    attempts: int = 0
    """Prover attempts charged to the owner's daily attempt quota."""


@dataclass(frozen=True)
class SubmitLimits:
    """A key's caps (0 = none): unfinished jobs, jobs per UTC day, prover attempts per UTC day."""

    max_active_jobs: int = 0
    daily_jobs: int = 0
    daily_attempts: int = 0


@dataclass(frozen=True)
class SubmitAnswer:
    """``created`` / ``existing`` (idempotent replay) / ``conflict`` / ``busy`` / ``active`` /
    ``quota`` / ``attempts_quota``; ``value``: the id, or the number behind a refusal."""

    outcome: str
    value: str


@dataclass(frozen=True)
class AttemptInfo:
    """What a running job knows about its delivery."""

    number: int
    max_attempts: int
    worker_id: str
    priority: Priority
    heartbeat: Callable[[], Awaitable[None]]

    @property
    def final(self) -> bool:
        return self.number >= self.max_attempts


class JobExecutor(Protocol):
    """What the workers call (implemented in :mod:`api.worker`)."""

    async def execute(self, job_id: str, attempt: AttemptInfo) -> dict[str, Any]: ...


QueueEnding = Literal["cancelled", "lost", "failed"]
"""How saq ended a job without the job's code writing a result: aborted by a client, swept
after its worker stopped beating (attempts exhausted), or failed by saq itself."""
FinishHook = Callable[[str, QueueEnding, str | None], Awaitable[None]]


@dataclass(frozen=True)
class QueueDepth:
    queued: int
    active: int
    scheduled: int
    oldest_age_s: float | None


class _Queue(RedisQueue):
    """saq's RedisQueue plus a hook on terminal transitions and a shorter sweep wait."""

    def __init__(
        self, redis: Any, name: str, on_finish: FinishHook | None, sweep_abort_wait_s: float
    ) -> None:
        super().__init__(redis, name=name)
        self._on_finish = on_finish
        self._sweep_abort_wait_s = sweep_abort_wait_s
        self._sweep_script = self.redis.register_script(_SWEEP_SNAPSHOT)

    async def sweep(self, lock: int = 60, abort: float = 5.0) -> list[str]:
        """saq's sweep, except that a job found in the active list but not yet marked active is
        looked at again after a grace period: a live worker marks it within milliseconds of its
        BLMOVE (saq #277 would otherwise requeue, and so run twice, jobs caught in that window)."""
        snapshot = await self._sweep_script(
            keys=[self.namespace("sweep"), self.namespace("active")], args=[lock], client=self.redis
        )
        swept: list[str] = []
        for raw_id, job_bytes in snapshot:
            job_id = _text(raw_id)
            job = self.deserialize(job_bytes)
            if job is not None and job.status != Status.ACTIVE and not job.stuck:
                await asyncio.sleep(_DEQUEUE_GRACE_S)
                job = await self.job(job.key)
                if job is None or job.status == Status.ACTIVE:
                    continue
                if (
                    await cast(Awaitable[int | None], self.redis.lpos(self.namespace("active"), job_id))
                    is None
                ):
                    continue
            elif job is not None and not job.stuck:
                continue
            swept.append(job_id)
            if job is None:
                async with self.redis.pipeline(transaction=True) as pipe:
                    pipe.lrem(self.namespace("active"), 0, job_id)
                    pipe.zrem(self.namespace("incomplete"), job_id)
                    await pipe.execute()
                continue
            log.info("sweeping job", job_id=job.key, status=job.status.value, attempts=job.attempts)
            await self.abort(job, error=self.swept_error_message)
            with contextlib.suppress(asyncio.TimeoutError):
                await job.refresh(self._sweep_abort_wait_s)
            if job.retryable:
                await self.retry(job, error=self.swept_error_message)
            else:
                await self.finish(job, Status.ABORTED, error=self.swept_error_message)
        return swept

    async def finish(
        self, job: Job, status: Status, *, result: Any = None, error: str | None = None, **kwargs: Any
    ) -> None:
        await super().finish(job, status, result=result, error=error, **kwargs)
        if self._on_finish is None or status == Status.COMPLETE:
            return
        swept = status == Status.ABORTED and error == self.swept_error_message
        if swept and job.retryable:
            return  # the sweeper retries it right after this
        ending: QueueEnding = "lost" if swept else "cancelled" if status == Status.ABORTED else "failed"
        try:
            await self._on_finish(job.key, ending, error)
        except Exception:  # a hook failure must not break saq's bookkeeping
            log.exception("finish hook failed", job_id=job.key)


class _Worker(Worker):  # type: ignore[type-arg]
    SIGNALS: list[Any] = []  # noqa: RUF012 - run_workers handles signals for all queues at once


class JobQueue:
    """Enqueue, cancel, inspect and serve jobs."""

    def __init__(self, settings: Settings, *, on_finish: FinishHook | None = None) -> None:
        self._settings = settings
        self._keys = Keyspace(settings.redis_key_prefix)
        self._redis: aioredis.Redis = aioredis.Redis.from_url(settings.redis_url)
        sweep_wait = min(5.0, max(0.5, settings.worker_sweep_s / 2))
        self._queues: dict[str, _Queue] = {
            name: _Queue(self._redis, self._keys.queue_name(name), on_finish, sweep_wait)
            for name in QUEUE_NAMES
        }
        self._submit = self._redis.register_script(_SUBMIT)

    async def aclose(self) -> None:
        for queue in self._queues.values():  # closes saq's pub/sub listeners, then the shared client
            with contextlib.suppress(RedisError, RuntimeError):
                await queue.disconnect()
        await self._redis.aclose()

    def _saq_job(self, queue: _Queue, job_id: str, now_ms: int) -> Job:
        """saq's copy of a job, every knob explicit (saq's defaults are 10 s and no retry). The
        worker enforces ``job_timeout_s`` itself, so saq's timeout is only a backstop; our record
        is the archive, so saq's copy is kept at most :data:`SAQ_JOB_TTL_S` after it ends."""
        s = self._settings
        job = Job(
            function=JOB_FUNCTION,
            kwargs={"job_id": job_id},
            queue=queue,
            key=job_id,
            timeout=int(s.job_timeout_s) + _SAQ_TIMEOUT_MARGIN_S,
            heartbeat=s.job_heartbeat_s,
            retries=max(1, s.job_max_retries),
            ttl=min(s.job_result_ttl_s, SAQ_JOB_TTL_S),
            retry_delay=s.job_retry_delay_s,
            retry_backoff=s.job_retry_backoff_max_s,
        )
        job.queued = now_ms
        job.status = Status.QUEUED
        return job

    async def submit(
        self,
        jobs: Sequence[Submission],
        *,
        owner: str,
        limits: SubmitLimits,
        idempotency_key: str | None = None,
        request_hash: str = "",
        batch: dict[str, str] | None = None,
    ) -> SubmitAnswer:
        """Create records and enqueue, atomically (all jobs or none)."""
        if not jobs:
            raise QueueError("nothing to submit")
        queue_name = jobs[0].queue
        if any(j.queue != queue_name for j in jobs):
            raise QueueError("one submission goes to one queue")
        queue = self._queues[queue_name]
        k = self._keys
        now = time.time()
        now_ms = int(now * 1000)
        day = time.strftime("%Y%m%d", time.gmtime(now))
        scope = "batch" if batch else "job"
        answer_id = batch["id"] if batch else jobs[0].job_id
        keys = [
            k.idempotency(owner, scope, idempotency_key) if idempotency_key else k.unused,
            queue.namespace("queued"),
            queue.namespace("incomplete"),
            k.jobs_index,
            k.owner_index(owner),
            k.active(owner),
            k.quota(owner, day),
            k.batch_jobs(batch["id"]) if batch else k.unused,
            k.batch(batch["id"]) if batch else k.unused,
            k.stats,
            k.attempts_quota(owner, day),
        ]
        args: list[Any] = [
            "1" if idempotency_key else "0",
            request_hash,
            answer_id,
            self._settings.queue_max_depth,
            limits.max_active_jobs,
            limits.daily_jobs,
            self._settings.job_result_ttl_s,
            now_ms,
            self._settings.job_events_maxlen,
            len(jobs),
            json.dumps(batch) if batch else "",
            2 * 86400,
            sum(sub.attempts for sub in jobs),
            limits.daily_attempts,
            k.job(""),
        ]
        for sub in jobs:
            saq_job = self._saq_job(queue, sub.job_id, now_ms)
            keys += [k.job(sub.job_id), saq_job.id, k.events(sub.job_id)]
            event = json.dumps({"queue": sub.queue, "kind": sub.record.get("kind")})
            args += [sub.job_id, json.dumps(sub.record), queue.serialize(saq_job), event]
        try:
            answer = await self._run_submit(keys, args, answer_id)
            if answer.outcome == "active" and await self._prune_active(owner):
                answer = await self._run_submit(keys, args, answer_id)
        except RedisError as exc:
            raise QueueError(f"could not enqueue: {exc}") from exc
        return answer

    async def _run_submit(self, keys: list[str], args: list[Any], answer_id: str) -> SubmitAnswer:
        try:
            outcome, value = await self._submit(keys=keys, args=args)
        except (RedisConnectionError, RedisTimeoutError):
            # the script may have run before the connection broke: replay it (it is idempotent)
            outcome, value = await self._submit(keys=keys, args=args)
            if _text(outcome) == "existing" and _text(value) == answer_id:
                outcome = "created"  # our own first run got through
        return SubmitAnswer(outcome=_text(outcome), value=_text(value))

    async def _prune_active(self, owner: str) -> int:
        """Drop the owner's active-job entries whose record is gone or finished (a record that
        expired before its result was written); returns how many were dropped."""
        active_key = self._keys.active(owner)
        members = [_text(m) for m in await cast(Awaitable[set[Any]], self._redis.smembers(active_key))]
        if not members:
            return 0
        async with self._redis.pipeline(transaction=False) as pipe:
            for job_id in members:
                pipe.hget(self._keys.job(job_id), "status")
            statuses = await pipe.execute()
        stale = [
            m for m, st in zip(members, statuses, strict=True) if st is None or _text(st) in TERMINAL_STATUSES
        ]
        if stale:
            await cast(Awaitable[int], self._redis.srem(active_key, *stale))
        return len(stale)

    async def abort(self, job_id: str, queue_name: str) -> None:
        """Cancel a saq job: dequeued when waiting, CancelledError in its handler when running."""
        queue = self._queues[queue_name]
        job = await queue.job(job_id)
        if job is None or job.status in (Status.COMPLETE, Status.FAILED, Status.ABORTED):
            return
        was_active = job.status == Status.ACTIVE
        await queue.abort(job, error=CANCELLED_ERROR)
        if not was_active:
            # saq finishes an aborted job itself only when it was still in the queued list; one
            # waiting for a retry (scheduled) would stay "aborting" with no TTL, so finish it here
            current = await queue.job(job_id)
            if current is not None and current.status == Status.ABORTING:
                await queue.finish(current, Status.ABORTED, error=CANCELLED_ERROR)

    async def delivery_status(self, job_id: str, queue_name: str) -> str | None:
        """The queue's own view of a job (new, queued, active, aborting, aborted, failed, complete)."""
        job = await self._queues[queue_name].job(job_id)
        return job.status.value if job is not None else None

    async def depth(self, queue_name: str) -> QueueDepth:
        queue = self._queues[queue_name]
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.llen(queue.namespace("queued"))
            pipe.llen(queue.namespace("active"))
            pipe.zcard(queue.namespace("incomplete"))
            pipe.lindex(queue.namespace("queued"), 0)
            queued, active, incomplete, head = await pipe.execute()
        oldest: float | None = None
        if head is not None:
            body = await self._redis.get(head)
            if body:
                queued_ms = json.loads(body).get("queued") or 0
                oldest = max(0.0, time.time() - queued_ms / 1000) if queued_ms else None
        return QueueDepth(
            queued=queued, active=active, scheduled=max(0, incomplete - queued - active), oldest_age_s=oldest
        )

    async def workers(self, queue_name: str) -> dict[str, dict[str, Any]]:
        """Live workers (their heartbeat key has not expired) and their stats."""
        info = await self._queues[queue_name].info()
        return {wid: dict(w) for wid, w in info["workers"].items()}

    async def run_workers(
        self,
        executor: JobExecutor,
        *,
        queues: Sequence[str] = QUEUE_NAMES,
        concurrency: int | None = None,
        batch_concurrency: int | None = None,
        stop: asyncio.Event | None = None,
    ) -> None:
        """Serve the given queues until ``stop`` is set or this coroutine is cancelled."""
        s = self._settings
        interactive_n = concurrency or s.worker_concurrency
        batch_n = batch_concurrency or s.worker_batch_concurrency or interactive_n
        metadata = {"host": socket.gethostname(), "pid": os.getpid()}
        # A bounded BLMOVE: Redis serves a blocked dequeue even when its worker is paused (SIGSTOP,
        # a frozen VM), so an unbounded one lets a paused worker take a job (one per idle slot)
        # that then waits for a sweep each time. Bounded, a paused worker's dequeues end before
        # its running job is found stuck (heartbeat), and swept jobs go to live workers.
        dequeue_timeout = max(0.5, min(5.0, s.job_heartbeat_s / 2))
        workers: list[_Worker] = []
        for name in queues:
            queue = self._queues[name]
            priority = Priority.INTERACTIVE if name == "interactive" else Priority.BATCH
            workers.append(
                _Worker(
                    queue,
                    functions=[(JOB_FUNCTION, _job_function(executor, priority))],
                    concurrency=interactive_n if name == "interactive" else batch_n,
                    timers=cast(
                        Any,
                        {
                            "sweep": max(1, round(s.worker_sweep_s)),
                            "abort": s.worker_abort_poll_s,
                            "worker_info": 5,
                            "schedule": 1,
                        },
                    ),
                    shutdown_grace_period_s=None,
                    cancellation_hard_deadline_s=5.0,
                    metadata=metadata,
                    dequeue_timeout=dequeue_timeout,
                )
            )
        tasks = [asyncio.create_task(w.start(), name=f"saq-worker-{w.queue.name}") for w in workers]
        try:
            if stop is None:
                await asyncio.gather(*tasks)
            else:
                await stop.wait()
        finally:
            running = sum(len(w.job_task_contexts) for w in workers)
            if running:
                log.info("stopping: cancelling running jobs, they go back to the queue", running=running)
            saq_log = logging.getLogger("saq")
            saq_log.addFilter(_saq_shutdown_notice)
            try:
                for worker in workers:
                    await worker.stop()
            finally:
                saq_log.removeFilter(_saq_shutdown_notice)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def _saq_shutdown_notice(record: logging.LogRecord) -> bool:
    """Drop saq's "Some tasks did not finish within the shutdown grace period, requesting
    cancellation" warning. saq logs it on every stop, idle or not: ``Worker.stop`` waits
    ``shutdown_grace_period_s`` (ours is 0: a stopping worker hands its jobs back at once) for
    *all* its tasks, and its own upkeep pollers and dequeue loops (blocked in BLMOVE) never end
    by themselves, so the wait always times out and saq cancels them, which is the normal way
    they end. Not caused by our heartbeat/watch tasks (those exist only while a job runs).
    :meth:`JobQueue.run_workers` logs the running jobs it cancels itself."""
    return not str(record.msg).startswith("Some tasks did not finish within the shutdown grace period")


def _job_function(executor: JobExecutor, priority: Priority) -> Callable[..., Awaitable[dict[str, Any]]]:
    async def sorryless_job(ctx: dict[str, Any], *, job_id: str) -> dict[str, Any]:
        job: Job = ctx["job"]
        worker: Worker = ctx["worker"]  # type: ignore[type-arg]

        async def heartbeat() -> None:
            await job.update()

        attempt = AttemptInfo(
            number=job.attempts,
            max_attempts=job.retries,
            worker_id=str(worker.id),
            priority=priority,
            heartbeat=heartbeat,
        )
        return await executor.execute(job_id, attempt)

    return sorryless_job


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
