"""Run n independent samples per problem with bounded concurrency, logging as it goes, resumable.

Budget mapping: one *sample* = one ``prove`` call with the per-sample :class:`Budget`
(``--budget``). ``--n N`` runs N such calls per problem, independently, so pass@k over the N
samples is the unbiased estimator of "k independent prove runs". What each sample really spent
(attempts with repairs, tool calls, tokens, compile calls, wall time) is logged and reported next
to it, so the three budget conventions of the published numbers can be read side by side.

Logging: each attempt line is written as it happens, from the prover's ``verdict`` event (see
:mod:`prover.eval.live`); the ``sample`` line closes the (problem, sample) pair. The sample is the
unit of resume: a pair without a ``sample`` line (or with an infrastructure failure only) is run
again from scratch under a new uid, and only the attempts of the uid that closed the pair count.
A prover that can re-attach to work it already started (the gateway, through an
Idempotency-Key) is given a key that is the same for the same (run, problem, sample) on resume.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

from lean_server.verdict import content_hash
from prover.eval.datasets import DatasetVersion, Problem
from prover.eval.errors import EvalError
from prover.eval.live import LiveAttempts
from prover.eval.runlog import (
    LOG_NAME,
    SCHEMA_VERSION,
    AttemptLine,
    EnvironmentInfo,
    EventLine,
    LogWriter,
    RunConfig,
    RunLine,
    RunManifest,
    SampleLine,
    finished_pairs,
    open_manifest,
    read_log,
    utcnow,
)
from prover.types import Budget, EventSink, ProofOutcome, ProofTask, ProverEvent
from sorryless.logging import get_logger

log = get_logger(__name__)


class Prover(Protocol):
    """What the evaluation needs from a prover: the ProverRunner interface (or the gateway client)."""

    async def prove(
        self,
        task: ProofTask,
        *,
        strategy: str | None,
        budget: Budget,
        profile: str | None,
        on_event: EventSink | None,
    ) -> ProofOutcome: ...


@runtime_checkable
class SampleKeyedProver(Protocol):
    """A prover that can re-attach to a sample's earlier submission (the gateway client): ``key``
    is the same for the same (run, problem, sample) across resumes."""

    async def prove_sample(
        self,
        task: ProofTask,
        *,
        key: str,
        strategy: str | None,
        budget: Budget,
        profile: str | None,
        on_event: EventSink | None,
    ) -> ProofOutcome: ...


def sample_key(run_id: str, problem_id: str, sample: int) -> str:
    """The resume-stable identity of one (problem, sample) of a run."""
    return f"{run_id}:{problem_id}:{sample}"


@dataclass
class RunProgress:
    """Running totals for the progress display."""

    total: int
    skipped: int = 0
    done: int = 0
    problems_attempted: set[str] = field(default_factory=set)
    problems_solved: set[str] = field(default_factory=set)
    tokens: int = 0
    compile_calls: int = 0
    errors: int = 0


ProgressHook = Callable[[RunProgress], None]


@dataclass
class EvalJob:
    out_dir: Path
    problems: list[Problem]
    config: RunConfig
    dataset: DatasetVersion
    environment: EnvironmentInfo
    ks: list[int]
    concurrency: int = 4


def _is_infra(outcome: ProofOutcome) -> bool:
    """A sample the infrastructure failed (the runner says so): logged, then run again on resume."""
    return outcome.stopped == "error" and outcome.infra_failure


def _sample_line(
    problem: Problem, sample: int, uid: str, outcome: ProofOutcome, started: float, started_at_wall: float
) -> SampleLine:
    finished_at = utcnow()
    return SampleLine(
        problem_id=problem.id,
        sample=sample,
        uid=uid,
        benchmark=problem.benchmark,
        split=problem.split,
        tags=problem.tags,
        decl_kind=problem.decl_kind,
        statement=problem.lean4_code,
        statement_sha256=content_hash(problem.lean4_code),
        statement_source=problem.statement_source,
        solved=outcome.solved,
        stopped=outcome.stopped,
        error=outcome.error,
        strategy=outcome.strategy,
        profile=outcome.profile,
        model=outcome.model,
        cost=outcome.cost,
        n_attempts=len(outcome.attempts),
        proof=outcome.proof if outcome.solved else None,
        certificate=outcome.certificate if outcome.solved else None,
        started_at=datetime.fromtimestamp(started_at_wall, tz=UTC),
        finished_at=finished_at,
        wall_s=time.monotonic() - started,
    )


class EvalRun:
    """One evaluation run over a run directory (new or resumed)."""

    def __init__(self, job: EvalJob, prover: Prover, *, on_progress: ProgressHook | None = None) -> None:
        if job.concurrency < 1:
            raise EvalError("--concurrency must be >= 1")
        self.job = job
        self.prover = prover
        self.on_progress = on_progress
        self.resumed = False
        self.run_id = ""

    def pending(self) -> list[tuple[Problem, int]]:
        done = finished_pairs(self.job.out_dir / LOG_NAME)
        return [
            (problem, sample)
            for problem in self.job.problems
            for sample in range(self.job.config.n)
            if (problem.id, sample) not in done
        ]

    async def run(self) -> RunProgress:
        job = self.job
        manifest = RunManifest(
            run_id=uuid.uuid4().hex[:12],
            created_at=utcnow(),
            config=job.config,
            dataset=job.dataset,
            environment=job.environment,
            ks=job.ks,
        )
        manifest, self.resumed = open_manifest(job.out_dir, manifest)
        self.run_id = manifest.run_id
        todo = self.pending()
        progress = RunProgress(total=len(job.problems) * job.config.n)
        progress.skipped = progress.total - len(todo)
        _count_previous(progress, job.out_dir / LOG_NAME, {p.id for p in job.problems})
        writer = LogWriter(job.out_dir / LOG_NAME)
        bound = log.bind(run_id=manifest.run_id, benchmark=job.config.benchmark)
        try:
            writer.write(
                RunLine(
                    run_id=manifest.run_id,
                    at=utcnow(),
                    resumed=self.resumed,
                    config=job.config,
                    dataset=job.dataset,
                    environment=job.environment,
                    ks=job.ks,
                    schema_version=SCHEMA_VERSION,
                    planned_ids=[p.id for p in job.problems],
                    n=job.config.n,
                )
            )
            bound.info("eval.start", pending=len(todo), skipped=progress.skipped, resumed=self.resumed)
            self._report(progress)
            semaphore = asyncio.Semaphore(job.concurrency)

            async def one(problem: Problem, sample: int) -> None:
                async with semaphore:
                    await self._run_sample(problem, sample, writer, progress)

            async with asyncio.TaskGroup() as group:
                for problem, sample in todo:
                    group.create_task(one(problem, sample))
        finally:
            writer.close()
        bound.info("eval.done", done=progress.done, solved=len(progress.problems_solved))
        return progress

    def _report(self, progress: RunProgress) -> None:
        if self.on_progress is not None:
            self.on_progress(progress)

    async def _run_sample(
        self, problem: Problem, sample: int, writer: LogWriter, progress: RunProgress
    ) -> None:
        uid = uuid.uuid4().hex[:16]
        live = LiveAttempts()

        def write_line(line: EventLine | AttemptLine) -> None:
            try:
                writer.write(line)
            except ValueError as exc:  # a payload that does not serialise is not worth a sample
                log.warning("eval.line_not_logged", problem=problem.id, error=str(exc)[:200])

        async def on_event(event: ProverEvent) -> None:
            attempt = live.attempt_from(event)
            if attempt is not None:  # written as it happens
                write_line(AttemptLine(problem_id=problem.id, sample=sample, uid=uid, attempt=attempt))
            if event.kind in ("verdict", "finished"):
                write_line(
                    EventLine(
                        problem_id=problem.id,
                        sample=sample,
                        uid=uid,
                        at=utcnow(),
                        kind=event.kind,
                        attempt=event.attempt,
                        data=event.data,
                    )
                )

        started, started_wall = time.monotonic(), time.time()
        try:
            outcome = await self._prove(problem, sample, on_event)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # infrastructure failure: logged, retried on resume
            log.warning("eval.sample_failed", problem=problem.id, sample=sample, error=repr(exc))
            outcome = ProofOutcome(
                task_id=problem.id,
                solved=False,
                strategy=self.job.config.strategy or "unknown",
                stopped="error",
                error=repr(exc),
            )
            line = _sample_line(problem, sample, uid, outcome, started, started_wall)
            line.infra_error = True
        else:
            line = _sample_line(problem, sample, uid, outcome, started, started_wall)
            line.infra_error = _is_infra(outcome)
        line.dataset_sha256 = self.job.dataset.sha256
        for attempt in outcome.attempts:  # the ones no verdict event brought, or brought only in part
            if live.needs_final_line(attempt):
                write_line(AttemptLine(problem_id=problem.id, sample=sample, uid=uid, attempt=attempt))
        writer.write(line)
        progress.done += 1
        progress.problems_attempted.add(problem.id)
        if line.solved:
            progress.problems_solved.add(problem.id)
        progress.tokens += line.cost.tokens
        progress.compile_calls += line.cost.compile_calls
        progress.errors += int(line.infra_error)
        self._report(progress)

    async def _prove(self, problem: Problem, sample: int, on_event: EventSink) -> ProofOutcome:
        cfg = self.job.config
        task = problem.to_task()
        if isinstance(self.prover, SampleKeyedProver):
            return await self.prover.prove_sample(
                task,
                key=sample_key(self.run_id, problem.id, sample),
                strategy=cfg.strategy,
                budget=cfg.budget,
                profile=cfg.profile,
                on_event=on_event,
            )
        return await self.prover.prove(
            task, strategy=cfg.strategy, budget=cfg.budget, profile=cfg.profile, on_event=on_event
        )


def _count_previous(progress: RunProgress, log_path: Path, problem_ids: set[str]) -> None:
    """Totals of the samples a resumed run already finished, so the progress shows the whole run."""
    for line in read_log(log_path):
        if isinstance(line, SampleLine) and not line.infra_error and line.problem_id in problem_ids:
            progress.problems_attempted.add(line.problem_id)
            if line.solved:
                progress.problems_solved.add(line.problem_id)
            progress.tokens += line.cost.tokens
            progress.compile_calls += line.cost.compile_calls
