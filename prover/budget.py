"""Counting what a task spends (:class:`Cost`) and stopping at the caps of its :class:`Budget`.

Definitions follow the anchors: pass@32 = 32 attempts, repairs included. An attempt is one LLM
generation (fresh sample, repair, or the continuation after a model's tool call: LongCat counts
inferences x tool calls) or one tactic try; every Lean check is a compile call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from prover.llm import Completion
from prover.types import Budget, Cost


class Meter:
    """The running cost of one task, checked against its budget."""

    def __init__(self, budget: Budget, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.budget = budget
        self.cost = Cost()
        self._clock = clock
        self._started = clock()
        self._reserved = 0

    # ---- caps --------------------------------------------------------------------------
    def elapsed(self) -> float:
        return self._clock() - self._started

    def remaining_wall(self) -> float | None:
        if self.budget.max_wall_s is None:
            return None
        return self.budget.max_wall_s - self.elapsed()

    def attempts_left(self) -> int:
        return max(0, self.budget.max_attempts - self._reserved)

    def compile_calls_left(self) -> int | None:
        """Lean checks the budget still allows (None: no cap); checks in flight are not subtracted."""
        if self.budget.max_compile_calls is None:
            return None
        return max(0, self.budget.max_compile_calls - self.cost.compile_calls)

    def exhausted(self) -> str | None:
        """Why no further attempt may start, or None."""
        b = self.budget
        if self._reserved >= b.max_attempts:
            return f"max_attempts={b.max_attempts} reached"
        if b.max_tokens is not None and self.cost.tokens >= b.max_tokens:
            return f"max_tokens={b.max_tokens} reached"
        if b.max_compile_calls is not None and self.cost.compile_calls >= b.max_compile_calls:
            return f"max_compile_calls={b.max_compile_calls} reached"
        left = self.remaining_wall()
        if left is not None and left <= 0:
            return f"max_wall_s={b.max_wall_s} reached"
        return None

    def can_use_tool(self) -> bool:
        """A model-initiated compile (TIR) is within the token, compile-call and wall caps.

        The generation that follows a tool result is reserved as one more attempt
        (``reserve(1)``), so tool rounds are capped by ``max_attempts`` too; the compile itself
        is counted in ``tool_calls`` and ``compile_calls``."""
        b = self.budget
        if b.max_tokens is not None and self.cost.tokens >= b.max_tokens:
            return False
        if b.max_compile_calls is not None and self.cost.compile_calls >= b.max_compile_calls:
            return False
        left = self.remaining_wall()
        return left is None or left > 0

    def reserve(self, wanted: int, *, repair: bool = False, sample: bool = False) -> int:
        """Claim up to ``wanted`` attempts; returns how many were granted (0 when exhausted)."""
        if wanted <= 0 or self.exhausted() is not None:
            return 0
        granted = min(wanted, self.attempts_left())
        compile_left = self.compile_calls_left()
        if compile_left is not None:
            granted = min(granted, compile_left)
        self._reserved += granted
        self.cost.attempts += granted
        if repair:
            self.cost.repair_rounds += granted
        if sample:
            self.cost.samples += granted
        return granted

    def release(self, unused: int, *, repair: bool = False, sample: bool = False) -> None:
        """Give back attempts that were reserved but never made (e.g. the task was solved)."""
        unused = max(0, min(unused, self._reserved))
        self._reserved -= unused
        self.cost.attempts -= unused
        if repair:
            self.cost.repair_rounds -= unused
        if sample:
            self.cost.samples -= unused

    # ---- accounting --------------------------------------------------------------------
    def record_llm(self, completions: Sequence[Completion], seconds: float) -> None:
        self.cost.llm_calls += 1
        self.cost.llm_seconds += seconds
        for c in completions:
            self.cost.prompt_tokens += c.prompt_tokens
            self.cost.completion_tokens += c.completion_tokens
            if c.truncated:
                self.cost.truncated += 1

    def record_check(self, seconds: float, *, tool_call: bool = False) -> None:
        self.cost.compile_calls += 1
        self.cost.lean_seconds += seconds
        if tool_call:
            self.cost.tool_calls += 1

    def finish(self) -> Cost:
        self.cost.wall_seconds = self.elapsed()
        return self.cost
