"""``prove``: find proofs for a sorry-stub (or the sorries of a file) with the prover runner."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from api.kinds.base import JobKind, KindContext, KindOutcome, LeanParams
from prover.types import Budget, Cost, ProofOutcome, ProofTask, ProverEvent


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
    strategy: str | None = Field(default=None, description="Prover strategy (default from settings).")
    budget: Budget | None = Field(
        default=None, description="Caps on attempts, tokens, compile calls and wall time."
    )
    profile: str | None = Field(
        default=None,
        description="Model profile (prompt/extraction family): generic, deepseek-v2, deepseek-v2-cot, "
        "goedel-v2, goedel-v2-noncot, kimina, kimina-noncot, longcat, oprover (default from settings).",
    )

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


async def run(params: ProveParams, ctx: KindContext) -> KindOutcome:
    runner = await ctx.resources.prover()
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
    description="Prove a sorry-stub (or a file's sorries) and return verified proofs with certificates.",
)
