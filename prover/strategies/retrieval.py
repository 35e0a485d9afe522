"""`retrieval`: put the top-k related verified proofs from the memory into the context, then run an
inner strategy (the memory never returns the task's own benchmark proof)."""

from __future__ import annotations

from prover.strategies.base import Context, Strategy
from prover.types import Attempt, ProofTask


class RetrievalStrategy:
    def __init__(self, inner: Strategy, k: int = 4, name: str | None = None) -> None:
        self.inner = inner
        self.k = k
        self.name = name or inner.name

    @property
    def needs_llm(self) -> bool:
        return self.inner.needs_llm

    async def run(self, task: ProofTask, ctx: Context) -> Attempt | None:
        if ctx.memory is not None and self.k > 0:
            ctx.retrieved = await ctx.memory.asearch(task, self.k)
            if ctx.retrieved:
                await ctx.emit(
                    "memory_hit",
                    None,
                    ids=[r.id for r in ctx.retrieved],
                    task_ids=[r.task_id for r in ctx.retrieved],
                )
        return await self.inner.run(task, ctx)
