"""Proof search strategies and their registry.

Names: ``whole`` (independent samples), ``repair`` (samples + feedback rounds, with retrieval),
``repair-plain`` (without retrieval), ``retrieval`` (whole samples with retrieved proofs),
``portfolio`` (LLM-free tactic portfolio). Names joined with ``,`` run one after the other until
one solves the task (e.g. ``portfolio,repair``); they share the task's budget.
"""

from __future__ import annotations

from prover.errors import StrategyUnavailable
from prover.strategies.base import Context, Generated, Strategy
from prover.strategies.portfolio import DEFAULT_TACTICS, PortfolioStrategy
from prover.strategies.repair import RepairStrategy
from prover.strategies.retrieval import RetrievalStrategy
from prover.strategies.whole import WholeStrategy
from prover.types import Attempt, ProofTask

STRATEGY_NAMES = ("whole", "repair", "repair-plain", "retrieval", "portfolio")


class SequenceStrategy:
    """Run strategies in order until one solves the task."""

    def __init__(self, parts: list[Strategy]) -> None:
        self.parts = parts
        self.name = ",".join(p.name for p in parts)

    @property
    def needs_llm(self) -> bool:
        return any(p.needs_llm for p in self.parts)

    async def run(self, task: ProofTask, ctx: Context) -> Attempt | None:
        for part in self.parts:
            if part.needs_llm and ctx.llm is None:
                continue
            solved = await part.run(task, ctx)
            if solved is not None:
                return solved
            if ctx.meter.exhausted():
                return None
        return None


def build_strategy(name: str, *, parallel: int = 4, retrieval_k: int = 4) -> Strategy:
    """The strategy called ``name`` (comma-separated names compose in sequence)."""
    names = [n.strip().lower() for n in name.split(",") if n.strip()]
    if not names:
        raise StrategyUnavailable("empty strategy name")
    if len(names) > 1:
        return SequenceStrategy(
            [build_strategy(n, parallel=parallel, retrieval_k=retrieval_k) for n in names]
        )
    key = names[0]
    if key == "whole":
        return WholeStrategy(batch=max(parallel, 8))
    if key == "repair":
        return RetrievalStrategy(RepairStrategy(parallel=parallel), k=retrieval_k, name="repair")
    if key == "repair-plain":
        return RepairStrategy(parallel=parallel)
    if key == "retrieval":
        return RetrievalStrategy(WholeStrategy(batch=max(parallel, 8)), k=retrieval_k, name="retrieval")
    if key == "portfolio":
        return PortfolioStrategy(parallel=parallel)
    raise StrategyUnavailable(f"unknown strategy {name!r}; choose from {', '.join(STRATEGY_NAMES)}")


__all__ = [
    "DEFAULT_TACTICS",
    "STRATEGY_NAMES",
    "Context",
    "Generated",
    "PortfolioStrategy",
    "RepairStrategy",
    "RetrievalStrategy",
    "SequenceStrategy",
    "Strategy",
    "WholeStrategy",
    "build_strategy",
]
