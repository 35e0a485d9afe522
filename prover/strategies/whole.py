"""`whole`: k independent samples (n per request shares the prefill), each checked by Lean.

With a tool-using profile (LongCat TIR) every generation after a tool result is an attempt too,
so samples are drawn in smaller batches that leave room for ``TOOL_ROUNDS_PER_SAMPLE`` tool
rounds each (LongCat's budget: parallel inferences x average tool calls <= k); attempts a batch
does not use go to the next batch."""

from __future__ import annotations

from prover.strategies.base import Context
from prover.tasks import gather_or_cancel
from prover.types import Attempt, ProofTask

TOOL_ROUNDS_PER_SAMPLE = 3  # budget kept per TIR sample for its tool rounds


class WholeStrategy:
    name = "whole"
    needs_llm = True

    def __init__(self, batch: int = 8) -> None:
        self.batch = max(1, batch)

    async def run(self, task: ProofTask, ctx: Context) -> Attempt | None:
        sample = 0
        prompt = ctx.profile.initial_prompt(task, ctx.retrieved)
        while True:
            n = ctx.meter.reserve(self._batch(ctx), sample=True)
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

    def _batch(self, ctx: Context) -> int:
        if not ctx.profile.max_tool_calls:
            return self.batch
        share = ctx.meter.attempts_left() // (1 + TOOL_ROUNDS_PER_SAMPLE)
        return max(1, min(self.batch, share))
