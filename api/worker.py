"""Workers: run job kinds for queued jobs (``sorryless worker``).

A worker process serves the interactive and batch queues with separate concurrency, shares one
Checker and one prover runner between its jobs (created on first use), beats the job's
heartbeat while it runs, and writes the result once (:meth:`api.store.JobStore.finalize`).

Failure rules: params that do not validate, unknown kinds, the job's own deadline and bugs fail
the job (never retried); infrastructure failures (:data:`INFRA_ERRORS`, including a
``TimeoutError`` of a backend inside the kind) are retried with exponential backoff while
attempts remain, then failed with a dead-letter entry; a worker that stops (SIGTERM) or dies
mid-job puts the job back in the queue (or stops beating, and its job is swept and retried on
another worker).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import httpx
import redis.asyncio as aioredis
import structlog
from pydantic import ValidationError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from api.errors import InfraError
from api.events import JobEvents
from api.keyspace import QUEUE_NAMES
from api.kinds import JobKind, KindContext, KindOutcome, load_kinds
from api.queue import AttemptInfo, JobExecutor, JobQueue
from api.store import JobRecord, JobStore, build_store, job_error
from lean_server.checker import Checker, LeanError
from prover.errors import LLMTimeout, LLMUnavailable
from sorryless.config import Settings
from sorryless.logging import get_logger

if TYPE_CHECKING:
    from prover.runner import ProverRunner

log = get_logger(__name__)

INFRA_ERRORS: tuple[type[BaseException], ...] = (
    InfraError,
    LeanError,
    LLMUnavailable,
    LLMTimeout,
    ConnectionError,
    httpx.TransportError,
    RedisConnectionError,
    RedisTimeoutError,
    TimeoutError,
)


class _JobDeadline(Exception):
    """The job ran past ``settings.job_timeout_s``."""


class WorkerResources:
    """The Checker and prover runner of one worker process, built on first use."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._lock = asyncio.Lock()
        self._checker: Checker | None = None
        self._prover: ProverRunner | None = None
        self._prover_without_memory: ProverRunner | None = None  # shares _prover's clients

    async def checker(self) -> Checker:
        async with self._lock:
            if self._checker is None:
                from lean_server.connect import connect

                checker = connect(self._settings)
                start = getattr(checker, "start", None)  # the in-process LeanService starts its pool
                if start is not None:
                    await start()
                self._checker = checker
            return self._checker

    async def prover(self, *, memory: bool = True) -> ProverRunner:
        """The shared runner; ``memory=False``: a runner sharing its checker and LLM client but
        with no retrieval memory, so the job neither reads nor records verified proofs."""
        checker = await self.checker()
        async with self._lock:
            if self._prover is None:
                from prover.runner import build_runner

                self._prover = build_runner(self._settings, checker)
            if memory:
                return self._prover
            if self._prover_without_memory is None:
                from prover.runner import ProverRunner

                shared = self._prover
                self._prover_without_memory = ProverRunner(
                    self._settings, shared.checker, shared.llm, None, priority=shared.priority
                )
            return self._prover_without_memory

    async def aclose(self) -> None:
        for resource in (self._prover, self._checker):
            if resource is not None:
                with contextlib.suppress(Exception):
                    await resource.aclose()
        self._prover = self._prover_without_memory = self._checker = None


class Executor(JobExecutor):
    """Runs one delivery of a job and writes its outcome."""

    def __init__(
        self,
        settings: Settings,
        store: JobStore,
        events: JobEvents,
        kinds: dict[str, JobKind],
        resources: WorkerResources,
    ) -> None:
        self._settings = settings
        self._store = store
        self._events = events
        self._kinds = kinds
        self._resources = resources

    async def execute(self, job_id: str, attempt: AttemptInfo) -> dict[str, Any]:
        with structlog.contextvars.bound_contextvars(job_id=job_id, attempt=attempt.number):
            return await self._execute(job_id, attempt)

    async def _execute(self, job_id: str, attempt: AttemptInfo) -> dict[str, Any]:
        bound = log.bind(job_id=job_id, attempt=attempt.number)
        state = await self._store.mark_running(job_id, attempt=attempt.number, worker=attempt.worker_id)
        if state != "running":
            bound.info("job not run", state=state)
            return {"skipped": state}
        record = await self._store.get(job_id)
        if record is None:
            return {"skipped": "missing"}
        kind = self._kinds.get(record.kind)
        if kind is None:
            await self._store.finalize(
                record, "failed", error=job_error("unknown_kind", f"no job kind {record.kind!r}")
            )
            return {"status": "failed"}
        try:
            params = kind.params_model.model_validate(record.params)
        except ValidationError as exc:
            await self._store.finalize(record, "failed", error=job_error("invalid_params", str(exc)))
            return {"status": "failed"}

        async def emit(event_type: str, data: dict[str, Any]) -> None:
            await self._events.emit(job_id, event_type, data)

        ctx = KindContext(
            settings=self._settings,
            job_id=job_id,
            attempt=attempt.number,
            priority=attempt.priority,
            resources=self._resources,
            emit=emit,
        )
        run_task = asyncio.create_task(self._run(kind, params, ctx))
        watch_task = asyncio.create_task(self._watch(job_id, attempt, run_task))
        try:
            outcome = await run_task
        except asyncio.CancelledError:
            if run_task.cancelled() and not _current_task_cancelling():
                # cancelled by the watcher: the record already says "cancelled"
                return {"status": "cancelled"}
            # the worker is stopping or saq swept the job: saq delivers it again, so the record
            # says queued (after a client's cancel it is terminal already and this writes nothing)
            with contextlib.suppress(Exception):
                await self._store.set_queued(
                    job_id, "worker stopped", attempt=attempt.number, worker=attempt.worker_id
                )
            raise
        except _JobDeadline:
            message = f"job exceeded {self._settings.job_timeout_s:g} s"
            await self._store.finalize(record, "failed", error=job_error("timeout", message))
            return {"status": "failed"}
        except INFRA_ERRORS as exc:
            message = f"{type(exc).__name__}: {exc}"
            if not attempt.final:
                bound.warning("infrastructure failure, will retry", error=message)
                await self._store.set_queued(
                    job_id, message, attempt=attempt.number, worker=attempt.worker_id
                )
                raise InfraError(message) from exc
            record.attempts = attempt.number
            await self._store.finalize(
                record, "failed", error=job_error("infra_error", message), dead_letter=True
            )
            bound.error("infrastructure failure, attempts exhausted", error=message)
            return {"status": "failed"}
        except Exception as exc:
            bound.exception("job failed")
            await self._store.finalize(
                record, "failed", error=job_error("internal_error", f"{type(exc).__name__}: {exc}")
            )
            return {"status": "failed"}
        finally:
            watch_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch_task
        await self._store.finalize(
            record,
            outcome.status,
            result=outcome.result,
            certificate=outcome.certificate,
            cost=outcome.cost,
            error=outcome.error,
        )
        return {"status": outcome.status}

    async def _run(self, kind: JobKind, params: Any, ctx: KindContext) -> KindOutcome:
        deadline = asyncio.timeout(self._settings.job_timeout_s)
        try:
            async with deadline:
                return await kind.run(params, ctx)
        except TimeoutError as exc:
            if deadline.expired():
                raise _JobDeadline from exc
            raise  # a backend's own timeout inside the kind: infrastructure

    async def _watch(self, job_id: str, attempt: AttemptInfo, run_task: asyncio.Task[KindOutcome]) -> None:
        """Beat the heartbeat; cancel the run when the record says the job was cancelled."""
        period = max(0.2, min(self._settings.job_heartbeat_s / 3, self._settings.worker_abort_poll_s * 4))
        beat_every = max(0.5, self._settings.job_heartbeat_s / 3)
        since_beat = 0.0
        while not run_task.done():
            await asyncio.sleep(period)
            since_beat += period
            try:
                if since_beat >= beat_every:
                    since_beat = 0.0
                    await attempt.heartbeat()
                if await self._store.status(job_id) == "cancelled":
                    run_task.cancel()
                    return
            except Exception:
                log.warning("heartbeat failed", job_id=job_id, exc_info=True)


def _current_task_cancelling() -> bool:
    task = asyncio.current_task()
    return bool(task is not None and task.cancelling())


async def run_worker(
    settings: Settings,
    *,
    queues: tuple[str, ...] = QUEUE_NAMES,
    concurrency: int | None = None,
    batch_concurrency: int | None = None,
    kinds: dict[str, JobKind] | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve jobs until ``stop`` is set (or SIGINT/SIGTERM when none is given), then clean up."""
    redis = aioredis.Redis.from_url(settings.redis_url, decode_responses=True)
    store, events = build_store(settings, redis)
    queue = JobQueue(settings, on_finish=store.reconcile)
    resources = WorkerResources(settings)
    executor = Executor(settings, store, events, kinds if kinds is not None else load_kinds(), resources)
    own_stop = stop is None
    stop_event = stop or asyncio.Event()
    if own_stop:
        import signal

        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop_event.set)
    log.info("worker starting", queues=list(queues), concurrency=concurrency or settings.worker_concurrency)
    try:
        await queue.run_workers(
            executor,
            queues=queues,
            concurrency=concurrency,
            batch_concurrency=batch_concurrency,
            stop=stop_event,
        )
    finally:
        await resources.aclose()
        await queue.aclose()
        await redis.aclose()
        log.info("worker stopped")


__all__ = ["INFRA_ERRORS", "Executor", "JobRecord", "WorkerResources", "run_worker"]
