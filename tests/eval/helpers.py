"""Test-only doubles for batch evaluation: a scripted prover with the ProverRunner interface."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lean_server.verdict import Certificate, EnvironmentStamp, Verdict, content_hash
from prover.eval.datasets import DatasetVersion, Problem, load_dataset
from prover.eval.environment import environment_info
from prover.eval.run import EvalJob
from prover.eval.runlog import EnvironmentInfo, RunConfig
from prover.eval.schema import assemble_stub
from prover.types import Attempt, Budget, Cost, EventSink, ProofOutcome, ProofTask, ProverEvent
from sorryless.config import Settings

BACKEND = "fake-backend-for-tests"


def make_problem(pid: str, tags: list[str], split: str = "valid") -> Problem:
    header = "import Mathlib\n\n"
    statement = f"theorem {pid} : (1 : ℕ) + 1 = 2 := by sorry"
    return Problem(
        id=pid,
        benchmark="minif2f",
        split=split,
        header=header,
        formal_statement=statement,
        lean4_code=assemble_stub(header, "", statement),
        tags=tags,
    )


def certificate(code: str, verdict: Verdict) -> Certificate:
    return Certificate(
        id="c",
        verdict=verdict,
        proof_hash=content_hash(code),
        environment=EnvironmentStamp(backend=BACKEND, lean_version="4.99.0-test"),
        feedback=None if verdict is Verdict.PASS else "error: linarith failed",
    )


@dataclass
class Script:
    """Per (problem, sample): attempts before a PASS (None = never), and cost knobs."""

    solve_at: dict[tuple[str, int], int | None]
    tool_calls: int = 0
    tokens_per_attempt: int = 100


@dataclass
class ScriptedProver:
    """Answers `prove` from a Script; counts calls; can block after `block_after` calls.

    Each attempt is reported with ``attempt_started`` and ``verdict`` events, as the runner does;
    the ``verdict`` event carries the attempt itself (``record``) unless ``records`` is False (a
    prover whose checks the eval cannot see). ``pause_at``: each
    call waits for ``gate`` before attempt ``pause_at`` (the earlier ones are already reported).
    """

    script: Script
    attempts_per_sample: int = 3
    calls: list[tuple[str, int]] = field(default_factory=list)
    block_after: int | None = None
    gate: asyncio.Event = field(default_factory=asyncio.Event)
    fail: Callable[[str, int], bool] | None = None
    records: bool = True
    pause_at: int | None = None
    _seen: dict[str, int] = field(default_factory=dict)

    async def prove(
        self,
        task: ProofTask,
        *,
        strategy: str | None,
        budget: Budget,
        profile: str | None,
        on_event: EventSink | None,
    ) -> ProofOutcome:
        sample = self._seen.get(task.id, 0)
        self._seen[task.id] = sample + 1
        # The run hands samples out in order, so the i-th call for a task is sample i of the pending ones.
        key = (task.id, sample)
        if self.block_after is not None and len(self.calls) >= self.block_after:
            await self.gate.wait()
        self.calls.append(key)
        if self.fail is not None and self.fail(task.id, sample):
            raise ConnectionError("scripted infrastructure failure")
        solve_at = self.script.solve_at.get(key)
        n_attempts = self.attempts_per_sample if solve_at is None else solve_at + 1
        attempts: list[Attempt] = []
        for index in range(n_attempts):
            if self.pause_at == index:
                await self.gate.wait()
            verdict = Verdict.PASS if index == solve_at else Verdict.LEAN_ERROR
            code = task.statement.replace("sorry", f"norm_num -- {index}")
            name = strategy or "scripted"
            if on_event is not None:
                await on_event(
                    ProverEvent(
                        kind="attempt_started",
                        task_id=task.id,
                        attempt=index,
                        data={"sample": 0, "round": index, "strategy": name},
                    )
                )
            cert = certificate(code, verdict)
            await asyncio.sleep(0)  # let concurrent samples interleave between check and report
            attempts.append(
                Attempt(
                    index=index,
                    sample=0,
                    round=index,
                    strategy=name,
                    candidate=code,
                    verdict=verdict,
                    certificate=cert,
                    prompt_tokens=self.script.tokens_per_attempt // 2,
                    completion_tokens=self.script.tokens_per_attempt // 2,
                )
            )
            if on_event is not None:
                await on_event(
                    ProverEvent(
                        kind="verdict",
                        task_id=task.id,
                        attempt=index,
                        data={"verdict": verdict},
                        record=attempts[-1] if self.records else None,
                    )
                )
        solved = solve_at is not None
        winner = attempts[-1] if solved else None
        return ProofOutcome(
            task_id=task.id,
            solved=solved,
            proof=winner.candidate if winner else None,
            certificate=winner.certificate if winner else None,
            attempts=attempts,
            cost=Cost(
                samples=1,
                attempts=n_attempts,
                repair_rounds=n_attempts - 1,
                llm_calls=n_attempts,
                tool_calls=self.script.tool_calls,
                prompt_tokens=n_attempts * (self.script.tokens_per_attempt // 2),
                completion_tokens=n_attempts * (self.script.tokens_per_attempt // 2),
                compile_calls=n_attempts,
            ),
            strategy=strategy or "scripted",
            model="scripted-model",
            stopped="solved" if solved else "budget",
        )


def make_job(
    out_dir: Path, problems: list[Problem], *, n: int, ks: list[int], concurrency: int = 2
) -> EvalJob:
    version = DatasetVersion(
        benchmark="minif2f",
        sha256="0" * 64,
        records=len(problems),
        path="(test)",
        origin="path",
        source="tests",
    )
    return EvalJob(
        out_dir=out_dir,
        problems=problems,
        config=RunConfig(
            benchmark="minif2f",
            split="valid",
            strategy="scripted",
            budget=Budget(max_attempts=3),
            n=n,
            dataset_sha256=version.sha256,
        ),
        dataset=version,
        environment=EnvironmentInfo(sorryless_version="test", python="3", platform="test", hostname="test"),
        ks=ks,
        concurrency=concurrency,
    )


def minif2f_portfolio_job(
    settings: Settings,
    benchmarks_dir: Path,
    out_dir: Path,
    ids: list[str],
    *,
    n: int,
    concurrency: int,
    api: str | None = None,
) -> EvalJob:
    """A real run of the `portfolio` strategy (all 19 tactics) on MiniF2F-valid problems ``ids``."""
    dataset = load_dataset("minif2f", settings, data_dir=benchmarks_dir)
    return EvalJob(
        out_dir=out_dir,
        problems=dataset.select("valid", ids),
        config=RunConfig(
            benchmark="minif2f",
            split="valid",
            ids=ids,
            strategy="portfolio",
            api=api,
            budget=Budget(max_attempts=19, max_repair_rounds=0),
            n=n,
            dataset_sha256=dataset.version.sha256,
        ),
        dataset=dataset.version,
        environment=environment_info(settings, profile=None),
        ks=[1, n],
        concurrency=concurrency,
    )
