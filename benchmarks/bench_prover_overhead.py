"""Orchestration overhead of the prover per attempt, with instant in-process fakes.

Measures ProverRunner + strategy + profile + extraction + budget accounting, excluding LLM and
Lean time, for the LLM strategies and the LLM-free portfolio (both fakes answer immediately). Target: <= 1 ms per attempt.

    .venv/bin/python benchmarks/bench_prover_overhead.py
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import AsyncIterator, Sequence

from lean_server.checker import Priority, Snippet
from lean_server.verdict import Certificate, EnvironmentStamp, Message, Pos, Verdict, content_hash
from prover.llm import Completion, CompletionRequest
from prover.runner import ProverRunner
from prover.strategies import PortfolioStrategy, RepairStrategy, Strategy, WholeStrategy
from prover.types import Budget, ProofTask
from sorryless.config import Settings

HEADER = "import Mathlib\nimport Aesop\n\nset_option maxHeartbeats 400000\n\nopen BigOperators Real Nat Topology Rat\n\n"
STUB = HEADER + "theorem bench (x y : ℝ) (h₀ : 0 < x) (h₁ : x < y) :\n    x ^ 2 < y ^ 2 := by sorry\n"
REPLY = (
    "<think>"
    + "We need x^2 < y^2 since 0 < x < y. " * 40
    + "</think>\nFinal proof:\n```lean4\n"
    + HEADER
    + "theorem bench (x y : ℝ) (h₀ : 0 < x) (h₁ : x < y) :\n    x ^ 2 < y ^ 2 := by\n  nlinarith [h₀, h₁]\n```\n"
)


class InstantLLM:
    model = "instant"

    async def complete(self, request: CompletionRequest) -> list[Completion]:
        return [
            Completion(
                text=REPLY,
                finish_reason="stop",
                index=i,
                rid=request.rid or "",
                prompt_tokens=100,
                completion_tokens=300,
            )
            for i in range(request.n)
        ]

    async def aclose(self) -> None:
        return None


class InstantChecker:
    """Always LEAN_ERROR, so every attempt of the budget runs (and repairs get feedback)."""

    async def check(
        self, snippets: Sequence[Snippet], *, priority: Priority = Priority.INTERACTIVE
    ) -> AsyncIterator[Certificate]:
        for s in snippets:
            yield Certificate(
                id=s.id,
                verdict=Verdict.LEAN_ERROR,
                proof_hash=content_hash(s.code),
                environment=EnvironmentStamp(backend="instant"),
                messages=[
                    Message(
                        severity="error",
                        data="linarith failed",
                        pos=Pos(line=9, column=2),
                        end_pos=Pos(line=9, column=20),
                    )
                ],
            )

    async def aclose(self) -> None:
        return None


def _strategy(name: str) -> Strategy:
    if name == "whole":
        return WholeStrategy()
    if name == "repair":
        return RepairStrategy(parallel=4)
    return PortfolioStrategy(tuple(f"tactic_{i}" for i in range(64)), parallel=4)


async def measure(strategy_name: str, attempts: int, repeats: int) -> list[float]:
    settings = Settings(_env_file=None)
    runner = ProverRunner(settings, InstantChecker(), InstantLLM(), None)
    task = ProofTask(id="bench", statement=STUB)
    per_attempt: list[float] = []
    for _ in range(repeats):
        strategy = _strategy(strategy_name)
        started = time.perf_counter()
        out = await runner.prove(
            task,
            strategy=strategy,
            budget=Budget(max_attempts=attempts, max_repair_rounds=2),
            profile="goedel-v2",
        )
        elapsed = time.perf_counter() - started
        assert out.cost.attempts == attempts, out.cost
        per_attempt.append(elapsed / attempts)
    return per_attempt


def main() -> None:
    for name in ("whole", "repair", "portfolio"):
        asyncio.run(measure(name, 32, 2))  # warm-up
        samples = asyncio.run(measure(name, 32, 30))
        med = statistics.median(samples) * 1000
        p90 = sorted(samples)[int(0.9 * len(samples))] * 1000
        print(
            f"{name:9s} orchestration overhead per attempt: median {med:.3f} ms, p90 {p90:.3f} ms "
            f"(target <= 1 ms) {'OK' if med <= 1.0 else 'OVER'}"
        )


if __name__ == "__main__":
    main()
