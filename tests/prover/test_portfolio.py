"""The portfolio baseline: deterministic choice (first passing tactic in portfolio order, whatever
order the checks finish in), bounded parallelism, and honest counting of the tries started."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from lean_server.checker import Priority, Snippet
from lean_server.verdict import Certificate
from prover.runner import ProverRunner
from prover.strategies import PortfolioStrategy
from prover.types import Budget, ProofTask
from sorryless.config import Settings
from tests.prover.conftest import STUB, scripted_certificate

TASK = ProofTask(id="add_zero", statement=STUB)
# tactics marked ERR fail; the later a tactic comes, the sooner its check finishes
TACTICS = ("skip -- ERR:no", "tac_a", "tac_b", "tac_c", "skip -- ERR:no2", "tac_d")


class DelayedChecker:
    """PASS/LEAN_ERROR as ScriptedChecker, each snippet answered after its own delay."""

    def __init__(self, delays: dict[str, float]) -> None:
        self.delays = delays
        self.started: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0

    async def check(
        self, snippets: Sequence[Snippet], *, priority: Priority = Priority.INTERACTIVE
    ) -> AsyncIterator[Certificate]:
        for snippet in snippets:
            tactic = next(t for t in self.delays if snippet.code.rstrip().endswith(t))
            self.started.append(tactic)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                await asyncio.sleep(self.delays[tactic])
            finally:
                self.in_flight -= 1
            yield scripted_certificate(snippet)

    async def aclose(self) -> None:
        return None


def _reversed_delays() -> dict[str, float]:
    return {t: 0.01 * (len(TACTICS) - i) for i, t in enumerate(TACTICS)}


async def test_first_passing_tactic_in_portfolio_order_wins(settings: Settings) -> None:
    for parallel in (1, 3, 6):
        checker = DelayedChecker(_reversed_delays())
        runner = ProverRunner(settings, checker)
        strategy = PortfolioStrategy(TACTICS, parallel=parallel)
        out = await runner.prove(TASK, strategy=strategy, budget=Budget(max_attempts=32))
        assert out.solved and out.proof is not None
        assert out.proof.rstrip().endswith("tac_a"), (parallel, out.proof)
        assert out.certificate is not None and out.certificate.passed
        # tries actually started, no more: the window never exceeds `parallel`
        assert checker.max_in_flight <= parallel
        assert out.cost.attempts == len(out.attempts) == len(checker.started)
        assert out.cost.attempts <= max(parallel, 2)
        assert out.cost.samples == out.cost.attempts


async def test_portfolio_stops_at_the_attempt_cap(settings: Settings) -> None:
    checker = DelayedChecker({t: 0.0 for t in TACTICS})
    runner = ProverRunner(settings, checker)
    out = await runner.prove(
        TASK,
        strategy=PortfolioStrategy(TACTICS[:1] + TACTICS[4:5] + TACTICS[1:], parallel=4),
        budget=Budget(max_attempts=2),
    )
    assert not out.solved and out.stopped == "budget"
    assert out.cost.attempts == 2 and out.cost.compile_calls == 2
    assert checker.started == [TACTICS[0], TACTICS[4]]


async def test_gather_or_cancel_cancels_the_rest_when_one_fails() -> None:
    from prover.tasks import gather_or_cancel

    cancelled = asyncio.Event()

    async def slow() -> int:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return 1

    async def failing() -> int:
        await asyncio.sleep(0.01)
        raise ValueError("boom")

    async def fine() -> int:
        return 2

    assert await gather_or_cancel([fine(), fine()]) == [2, 2]
    try:
        await gather_or_cancel([slow(), failing()])
    except ValueError as exc:
        assert str(exc) == "boom"
    else:
        raise AssertionError("the failure was swallowed")
    assert cancelled.is_set()  # not left running unaccounted


async def test_checks_in_flight_count_against_the_compile_call_cap(settings: Settings) -> None:
    failing = tuple(f"skip -- ERR:e{i}" for i in range(6))
    checker = DelayedChecker({t: 0.01 for t in failing})
    runner = ProverRunner(settings, checker)
    out = await runner.prove(
        TASK,
        strategy=PortfolioStrategy(failing, parallel=4),
        budget=Budget(max_attempts=32, max_compile_calls=3),
    )
    assert not out.solved
    assert out.cost.compile_calls == 3 and out.cost.attempts == 3 and len(checker.started) == 3
