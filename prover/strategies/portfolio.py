"""`portfolio`: the LLM-free baseline. Each tactic script of a fixed portfolio is put under the
original statement and checked; every try started is an attempt, every finished check a compile call.

Tries are checked in portfolio order with at most ``parallel`` checks in flight. Once a try passes
no new try starts, and the earlier tries still in flight are awaited: the result is the first
passing tactic in portfolio order, whatever order the checks finish in. Later tries still in
flight are dropped (they were started, so they count as attempts).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextlib import aclosing

from lean_server.verdict import Certificate
from prover.extract import splice_tactics
from prover.strategies.base import Context
from prover.tasks import cancel_all
from prover.types import Attempt, ProofTask

DEFAULT_TACTICS: tuple[str, ...] = (
    "rfl",
    "decide",
    "norm_num",
    "simp",
    "omega",
    "linarith",
    "nlinarith",
    "positivity",
    "aesop",
    "field_simp\nring",
    "norm_num [*]",
    "simp_all",
    "ring_nf",
    "tauto",
    "intros\nsimp_all",
    "norm_num [*] <;> linarith",
    "simp_all <;> nlinarith",
    "constructor <;> norm_num",
    "ring_nf\nnlinarith",
)


class PortfolioStrategy:
    name = "portfolio"
    needs_llm = False

    def __init__(self, tactics: Sequence[str] = DEFAULT_TACTICS, parallel: int = 4) -> None:
        self.tactics = tuple(tactics)
        self.parallel = max(1, parallel)

    async def run(self, task: ProofTask, ctx: Context) -> Attempt | None:
        pending = iter(self.tactics)
        in_flight: dict[asyncio.Task[Certificate | None], Attempt] = {}
        passed: list[Attempt] = []
        try:
            while True:
                while not passed and len(in_flight) < self.parallel:
                    compile_left = ctx.meter.compile_calls_left()
                    if compile_left is not None and compile_left <= len(in_flight):
                        break  # the checks in flight already use up the compile-call cap
                    tactic = next(pending, None)
                    if tactic is None or not ctx.meter.reserve(1, sample=True):
                        break
                    attempt, code = await self._start(ctx, tactic)
                    in_flight[asyncio.create_task(_check(ctx, attempt, code))] = attempt
                if passed:
                    first = min(a.index for a in passed)
                    for check_task, attempt in list(in_flight.items()):
                        if attempt.index > first:  # cannot beat the pass we have
                            check_task.cancel()
                            del in_flight[check_task]
                if not in_flight:
                    break
                done, _ = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
                for check_task in done:
                    attempt = in_flight.pop(check_task)
                    cert = check_task.result()
                    if cert is not None and cert.passed:
                        passed.append(attempt)
        finally:
            await cancel_all(list(in_flight))
        return min(passed, key=lambda a: a.index) if passed else None

    async def _start(self, ctx: Context, tactic: str) -> tuple[Attempt, str]:
        attempt = ctx.new_attempt(self.name, sample=len(ctx.attempts), round=0)
        await ctx.emit("attempt_started", attempt.index, strategy=self.name, tactic=tactic)
        attempt.candidate = splice_tactics(ctx.parts, tactic).code
        return attempt, attempt.candidate


async def _check(ctx: Context, attempt: Attempt, code: str) -> Certificate | None:
    async with aclosing(ctx.check_many([(attempt, code)])) as results:
        async for _, cert in results:
            return cert
    return None
