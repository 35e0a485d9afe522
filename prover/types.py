"""The prover's data: what it is asked (ProofTask), what it spends (Cost, Budget), what it
reports while working (ProverEvent) and what it returns (Attempt, ProofOutcome).

These shapes are shared by the runner, the API's `prove` job kind and batch evaluation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from lean_server.verdict import Certificate, Verdict


class ProofTask(BaseModel):
    """One statement to prove."""

    id: str = Field(description="Task id (problem id for benchmarks).")
    statement: str = Field(
        description="The complete sorry-stub: header + preamble + the target declaration ending in `:= by sorry`."
    )
    informal: str | None = Field(default=None, description="Informal statement, if known (prompts use it).")
    benchmark: str | None = Field(
        default=None, description="Benchmark name, for the retrieval leakage guard."
    )
    split: str | None = Field(default=None, description="Benchmark split, for the retrieval leakage guard.")
    target: str | None = Field(
        default=None,
        description="Name of the declaration to prove (default: the last sorry-ed theorem/lemma).",
    )


class Budget(BaseModel):
    """Caps, with the anchors' definitions: pass@32 = 32 attempts, repairs included."""

    max_attempts: int = Field(
        default=32, ge=1, description="LLM generations (samples + repair rounds), or tactic tries."
    )
    max_repair_rounds: int = Field(default=2, ge=0, description="Repair rounds per sampled attempt.")
    max_tokens: int | None = Field(default=None, ge=1, description="Prompt + completion tokens, all calls.")
    max_compile_calls: int | None = Field(default=None, ge=1, description="Lean checks.")
    max_wall_s: float | None = Field(default=None, gt=0, description="Wall seconds for the whole task.")


class Cost(BaseModel):
    """What was spent. Every LLM call and Lean check is counted."""

    samples: int = Field(default=0, description="Independent samples started (round 0 attempts).")
    attempts: int = Field(default=0, description="LLM generations or tactic tries, repairs included.")
    repair_rounds: int = 0
    llm_calls: int = 0
    tool_calls: int = Field(default=0, description="Lean calls made by the model itself (TIR).")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    compile_calls: int = 0
    truncated: int = Field(default=0, description="Generations cut by max_tokens (finish_reason=length).")
    llm_seconds: float = 0.0
    lean_seconds: float = 0.0
    wall_seconds: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: Cost) -> None:
        for name in type(self).model_fields:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class Attempt(BaseModel):
    """One generation (or tactic try) and what Lean said about it."""

    index: int = Field(description="0-based attempt number within the task.")
    sample: int = Field(default=0, description="Which independent sample this belongs to.")
    round: int = Field(default=0, description="Repair round (0 = fresh sample).")
    strategy: str
    candidate: str | None = Field(default=None, description="The full Lean file that was checked.")
    verdict: Verdict | None = None
    certificate: Certificate | None = None
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    error: str | None = Field(default=None, description="Why no candidate was produced, if so.")
    memory_hits: list[str] = Field(
        default_factory=list, description="Ids of retrieved proofs shown to the model."
    )


class ProofOutcome(BaseModel):
    """The result of proving one task."""

    task_id: str
    solved: bool
    proof: str | None = Field(default=None, description="The full verified file (only when solved).")
    certificate: Certificate | None = Field(default=None, description="PASS certificate (only when solved).")
    attempts: list[Attempt] = Field(default_factory=list)
    cost: Cost = Field(default_factory=Cost)
    strategy: str
    profile: str | None = None
    model: str | None = None
    stopped: Literal["solved", "budget", "cancelled", "deadline", "error"] = "budget"
    error: str | None = None
    infra_failure: bool = Field(
        default=False,
        description="The search stopped because the LLM or Lean was unavailable, not on the task's merits: "
        "worth running again.",
    )


EventKind = Literal[
    "attempt_started", "candidate_extracted", "verdict", "memory_hit", "round_started", "finished", "log"
]


class ProverEvent(BaseModel):
    kind: EventKind
    task_id: str
    attempt: int | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    record: Attempt | None = Field(
        default=None,
        exclude=True,
        description="On `verdict` events: the attempt as it stands (candidate, verdict, certificate), "
        "for in-process listeners such as the eval's attempt log; never serialised.",
    )


EventSink = Callable[[ProverEvent], Awaitable[None]]
