"""`repair`: samples refined over bounded rounds with Lean feedback (OProver / Goedel / Kimina style).

Each lineage is one fresh sample followed by up to ``budget.max_repair_rounds`` repairs, each
conditioned on the compact state (statement, retrieved proofs, last attempt, its feedback).
``parallel`` lineages run at once; the first PASS cancels the others (their LLM requests are
aborted, their Lean checks dropped). Every generation counts as an attempt.
"""

from __future__ import annotations

import asyncio
import itertools

from prover.profiles.base import RepairState
from prover.strategies.base import Context, Generated
from prover.types import Attempt, ProofTask

NO_CANDIDATE_FEEDBACK = (
    "No complete Lean 4 proof could be extracted from your answer ({reason}). Give the complete Lean 4 file "
    "in a single ```lean4 code block."
)


class _Solved(Exception):
    def __init__(self, generated: Generated) -> None:
        super().__init__("solved")
        self.generated = generated


class RepairStrategy:
    name = "repair"
    needs_llm = True

    def __init__(self, parallel: int = 4) -> None:
        self.parallel = max(1, parallel)

    async def run(self, task: ProofTask, ctx: Context) -> Attempt | None:
        counter = itertools.count()

        async def worker() -> None:
            while True:
                sample = next(counter)
                if not await self._lineage(task, ctx, sample):
                    return

        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(self.parallel):
                    group.create_task(worker())
        except ExceptionGroup as group_error:
            for exc in group_error.exceptions:
                if isinstance(exc, _Solved):
                    return exc.generated.attempt
            raise group_error.exceptions[0] from None
        return None

    async def _lineage(self, task: ProofTask, ctx: Context, sample: int) -> bool:
        """One sample and its repairs; False when the budget is spent. Raises _Solved on PASS."""
        if not ctx.meter.reserve(1, sample=True):
            return False
        prompt = ctx.profile.initial_prompt(task, ctx.retrieved)
        (completion,) = (await ctx.generate(prompt, 1))[:1]
        gen = await ctx.answer(self.name, prompt, completion, sample=sample, round=0)
        await self._check(ctx, gen)
        for rnd in range(1, ctx.meter.budget.max_repair_rounds + 1):
            if not ctx.meter.reserve(1, repair=True):
                return False
            state = self._state(task, ctx, gen, rnd)
            await ctx.emit("round_started", None, sample=sample, round=rnd)
            prompt = ctx.profile.repair_prompt(state)
            (completion,) = (await ctx.generate(prompt, 1))[:1]
            gen = await ctx.answer(self.name, prompt, completion, sample=sample, round=rnd)
            await self._check(ctx, gen)
        return True

    async def _check(self, ctx: Context, gen: Generated) -> None:
        passed = await ctx.check_generated([gen])
        if passed is not None:
            raise _Solved(passed)

    def _state(self, task: ProofTask, ctx: Context, gen: Generated, rnd: int) -> RepairState:
        if gen.certificate is not None and gen.candidate is not None:
            feedback = ctx.profile.format_feedback(gen.candidate.code, gen.certificate)
        else:
            feedback = NO_CANDIDATE_FEEDBACK.format(reason=gen.attempt.error or "no code block")
        return RepairState(
            task=task,
            round=rnd,
            prompt=gen.prompt,
            output=gen.output,
            candidate=gen.candidate.code if gen.candidate is not None else None,
            certificate=gen.certificate,
            feedback=feedback,
            retrieved=ctx.retrieved,
        )
