"""`portfolio`: the LLM-free baseline. Each tactic script of a fixed portfolio is put under the
original statement and checked; every try is an attempt and a compile call."""

from __future__ import annotations

from collections.abc import Sequence

from prover.extract import splice_tactics
from prover.profiles.base import Prompt
from prover.strategies.base import Context, Generated
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
_NO_PROMPT = Prompt()


class PortfolioStrategy:
    name = "portfolio"
    needs_llm = False

    def __init__(self, tactics: Sequence[str] = DEFAULT_TACTICS, batch: int = 32) -> None:
        self.tactics = tuple(tactics)
        self.batch = max(1, batch)

    async def run(self, task: ProofTask, ctx: Context) -> Attempt | None:
        pending = list(self.tactics)
        while pending:
            n = ctx.meter.reserve(min(self.batch, len(pending)), sample=True)
            if n == 0:
                return None
            chunk, pending = pending[:n], pending[n:]
            generated: list[Generated] = []
            for tactic in chunk:
                attempt = ctx.new_attempt(self.name, sample=len(ctx.attempts), round=0)
                await ctx.emit("attempt_started", attempt.index, strategy=self.name, tactic=tactic)
                candidate = splice_tactics(ctx.parts, tactic)
                attempt.candidate = candidate.code
                generated.append(
                    Generated(attempt=attempt, prompt=_NO_PROMPT, output=tactic, candidate=candidate)
                )
            passed = await ctx.check_generated(generated)
            if passed is not None:
                return passed.attempt
        return None
