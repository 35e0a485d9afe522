"""``prove``: find proofs for a sorry-stub (or the sorries of a file) with the prover runner.

The runner reports an LLM or Lean outage as an outcome (``stopped="error"`` with
``infra_failure``); such an outcome is an infrastructure failure, not an answer,
so :func:`run` raises :class:`~api.errors.InfraError` and the queue retries the job with backoff
(and dead-letters it when the attempts run out) instead of reporting "succeeded, unsolved".
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import ConfigDict, Field, field_validator, model_validator

from api.errors import InfraError
from api.kinds.base import JobKind, KindContext, KindOutcome, LeanParams
from prover.types import Budget, Cost, ProofOutcome, ProofTask, ProverEvent
from sorryless.config import Settings

# Caps of one job's budget (a request above them is a 422, never an unbounded job).
BUDGET_CAPS: dict[str, float] = {
    "max_attempts": 4096,
    "max_repair_rounds": 32,
    "max_tokens": 100_000_000,
    "max_compile_calls": 100_000,
    "max_wall_s": 7 * 86400.0,
}


class BudgetParams(Budget):
    """A job's budget as requested: the prover's :class:`~prover.types.Budget` with every bound
    finite and at most its cap (max_attempts 4096, max_repair_rounds 32, max_tokens 1e8,
    max_compile_calls 1e5, max_wall_s 7 days), and unknown fields refused (a misspelt cap must
    not mean "no cap")."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @model_validator(mode="after")
    def _within_caps(self) -> Self:
        over = [
            f"{name} = {value:g} is over its cap {cap:g}"
            for name, cap in BUDGET_CAPS.items()
            if (value := getattr(self, name)) is not None and value > cap
        ]
        if over:
            raise ValueError("; ".join(over))
        return self


class ProveParams(LeanParams):
    """Parameters of a ``prove`` job: exactly one of ``statement`` and ``file``."""

    statement: str | None = Field(
        default=None,
        min_length=1,
        description="A complete sorry-stub: header + the declaration ending in `:= by sorry`.",
    )
    file: str | None = Field(
        default=None, min_length=1, description="A Lean file whose sorried declarations to prove."
    )
    targets: list[str] | None = Field(
        default=None,
        max_length=64,
        description="Sorried theorems of `file` to prove (full or short names; default: all of them), one task each.",
    )
    informal: str | None = Field(default=None, description="Informal statement, shown to the model.")
    strategy: str | None = Field(
        default=None,
        max_length=200,
        description="Prover strategy: whole, repair, repair-plain, retrieval, portfolio, or several "
        "joined with `,` to run in turn (default from settings).",
    )
    budget: BudgetParams | None = Field(
        default=None,
        description="Caps on attempts, tokens, compile calls and wall time (default: "
        "`prover_default_budget` attempts).",
    )
    memory: bool = Field(
        default=True,
        description="Use the retrieval memory of verified proofs (read it for context, add this "
        "job's proofs to it). false: the job neither reads nor writes it (independent samples).",
    )
    profile: str | None = Field(
        default=None,
        description="Model profile (prompt/extraction family): generic, deepseek-v2, deepseek-v2-cot, "
        "goedel-v2, goedel-v2-noncot, kimina, kimina-noncot, longcat, oprover (default from settings).",
    )

    @field_validator("strategy")
    @classmethod
    def _known_strategy(cls, value: str | None) -> str | None:
        if value is not None:
            from prover.strategies import STRATEGY_NAMES

            names = [n.strip().lower() for n in value.split(",")]
            unknown = [n for n in names if n not in STRATEGY_NAMES]
            if unknown or not names:
                raise ValueError(
                    f"unknown strategy {', '.join(map(repr, unknown))}; choose from "
                    f"{', '.join(STRATEGY_NAMES)} (or several joined with `,`)"
                )
        return value

    @field_validator("profile")
    @classmethod
    def _known_profile(cls, value: str | None) -> str | None:
        if value is not None:
            from prover.profiles import profile_names

            if value not in profile_names():
                raise ValueError(f"unknown profile {value!r}; choose one of {', '.join(profile_names())}")
        return value

    @model_validator(mode="after")
    def _one_source(self) -> ProveParams:
        if (self.statement is None) == (self.file is None):
            raise ValueError("give exactly one of `statement` and `file`")
        if self.targets is not None and self.file is None:
            raise ValueError("`targets` needs `file`")
        return self


def _tasks(params: ProveParams, job_id: str) -> tuple[list[ProofTask], str | None]:
    """The tasks to prove, or an error message when the file names none of them."""
    if params.statement is not None:
        return [ProofTask(id=job_id, statement=params.statement, informal=params.informal)], None
    assert params.file is not None
    from prover.files import tasks_from_text

    tasks = tasks_from_text(params.file, file_id=job_id)
    if not tasks:
        return [], "the file has no theorem or lemma whose proof uses `sorry`"
    if params.targets:
        by_name = {name: t for t in tasks for name in (t.target, t.id.split(":", 1)[1]) if name}
        missing = [name for name in params.targets if name not in by_name]
        if missing:
            return [], f"no sorried theorem named {', '.join(missing)} (found: {', '.join(by_name)})"
        tasks = list({by_name[name].id: by_name[name] for name in params.targets}.values())
    if params.informal:
        tasks = [t.model_copy(update={"informal": params.informal}) for t in tasks]
    return tasks, None


def _proof_view(outcome: ProofOutcome) -> dict[str, Any]:
    return {
        "task_id": outcome.task_id,
        "solved": outcome.solved,
        "proof": outcome.proof,
        "stopped": outcome.stopped,
        "strategy": outcome.strategy,
        "model": outcome.model,
        "attempts": len(outcome.attempts),
        "error": outcome.error,
        "certificate": outcome.certificate.model_dump(mode="json") if outcome.certificate else None,
    }


def _infra_error(outcome: ProofOutcome) -> str | None:
    """The outcome's error when it is the infrastructure's fault (LLM or Lean unavailable)."""
    if outcome.stopped != "error" or not outcome.infra_failure:
        return None
    return outcome.error or "the LLM or Lean was unavailable"


def attempts_charged(params: ProveParams, settings: Settings) -> int:
    """What a job spends of its key's daily attempt quota: its budget's ``max_attempts`` for each
    task it will prove (a file: its targets, else each sorried theorem in it)."""
    per_task = params.budget.max_attempts if params.budget else settings.prover_default_budget
    if params.file is None:
        return per_task
    if params.targets:
        return per_task * len(set(params.targets))
    from prover.files import find_sorry_theorems

    return per_task * max(1, len(find_sorry_theorems(params.file)))


async def run(params: ProveParams, ctx: KindContext) -> KindOutcome:
    runner = await ctx.resources.prover(memory=params.memory)
    budget = params.budget or Budget(max_attempts=ctx.settings.prover_default_budget)

    async def forward(event: ProverEvent) -> None:
        await ctx.emit("progress", {"source": "prover", **event.model_dump(mode="json")})

    tasks, problem = _tasks(params, ctx.job_id)
    if problem is not None:
        return KindOutcome(status="failed", error={"code": "no_targets", "message": problem})
    outcomes: list[ProofOutcome] = []
    total = Cost()
    for task in tasks:
        outcome: ProofOutcome = await runner.prove(
            task,
            strategy=params.strategy,
            budget=budget,
            profile=params.profile,
            on_event=forward,
            policy=params.policy,
            job_id=ctx.job_id,
        )
        infra = _infra_error(outcome)
        if infra is not None:
            raise InfraError(f"task {task.id}: {infra}")
        outcomes.append(outcome)
        total.add(outcome.cost)
    proofs = [_proof_view(o) for o in outcomes]
    solved = all(o.solved for o in outcomes)
    certificate = proofs[0]["certificate"] if len(proofs) == 1 else None
    return KindOutcome(
        status="succeeded",
        result={"solved": solved, "solved_count": sum(o.solved for o in outcomes), "proofs": proofs},
        certificate=certificate,
        cost=total.model_dump(mode="json"),
    )


KIND = JobKind(
    name="prove",
    params_model=ProveParams,
    run=run,
    charge=attempts_charged,
    description="Prove a sorry-stub (or a file's sorries) and return verified proofs with certificates.",
)
