"""`whole`: k independent samples (n per request shares the prefill), each checked by Lean."""

from __future__ import annotations

from prover.strategies.base import Context, gather_or_cancel
from prover.types import Attempt, ProofTask


class WholeStrategy:
    name = "whole"
    needs_llm = True

    def __init__(self, batch: int = 8) -> None:
        self.batch = max(1, batch)

    async def run(self, task: ProofTask, ctx: Context) -> Attempt | None:
        sample = 0
        prompt = ctx.profile.initial_prompt(task, ctx.retrieved)
        while True:
            n = ctx.meter.reserve(self.batch, sample=True)
            if n == 0:
                return None
            completions = await ctx.generate(prompt, n)
            generated = await gather_or_cancel(
                [
                    ctx.answer(self.name, prompt, c, sample=sample + i, round=0)
                    for i, c in enumerate(completions)
                ]
            )
            sample += len(completions)
            passed = await ctx.check_generated(generated)
            if passed is not None:
                return passed.attempt
