"""`sorryless prove FILE`: fill every sorry-ed theorem of a file with a PASS-certified proof."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from lean_server.checker import Checker
from prover.errors import InputFileError
from prover.extract import Candidate, splice_file, split_target
from prover.files import apply_proofs, find_sorry_theorems, task_for
from prover.runner import ProverRunner, build_runner
from prover.types import Budget, Cost, EventSink, ProofOutcome
from sorryless.config import Settings


class TheoremReport(BaseModel):
    name: str
    line: int
    solved: bool
    stopped: str
    verdict: str | None = None
    error: str | None = None
    attempts: int = 0
    cost: Cost = Field(default_factory=Cost)


class FileReport(BaseModel):
    file: str
    out: str | None = None
    strategy: str | None = None
    theorems: list[TheoremReport] = Field(default_factory=list)
    cost: Cost = Field(default_factory=Cost)

    @property
    def solved(self) -> int:
        return sum(t.solved for t in self.theorems)

    @property
    def unsolved(self) -> list[str]:
        return [t.name for t in self.theorems if not t.solved]


def _last_verdict(outcome: ProofOutcome) -> str | None:
    if outcome.certificate is not None:
        return outcome.certificate.verdict.value
    for attempt in reversed(outcome.attempts):
        if attempt.verdict is not None:
            return attempt.verdict.value
    return None


async def prove_text(
    runner: ProverRunner,
    text: str,
    *,
    file_id: str = "file",
    strategy: str | None = None,
    budget: Budget | None = None,
    profile: str | None = None,
    on_event: EventSink | None = None,
    on_theorem: Callable[[str, int, int], None] | None = None,
) -> tuple[str, FileReport]:
    """The new text (only PASS proofs written in) and the report."""
    theorems = find_sorry_theorems(text)
    filled: dict[str, Candidate] = {}
    report = FileReport(file=file_id, strategy=strategy or runner.default_strategy())
    for i, thm in enumerate(theorems):
        if on_theorem is not None:
            on_theorem(thm.name, i, len(theorems))
        task = task_for(text, theorems, thm, filled, file_id=file_id)
        outcome = await runner.prove(
            task, strategy=strategy, budget=budget, profile=profile, on_event=on_event
        )
        report.cost.add(outcome.cost)
        written = False
        if (
            outcome.solved
            and outcome.proof is not None
            and outcome.certificate is not None
            and outcome.certificate.passed
        ):
            cand = splice_file(split_target(task.statement, task.target), outcome.proof)
            if cand is not None:
                filled[thm.name] = cand
                written = True
        report.theorems.append(
            TheoremReport(
                name=thm.name,
                line=thm.line,
                solved=written,
                stopped=outcome.stopped if written or outcome.stopped != "solved" else "error",
                verdict=_last_verdict(outcome),
                error=outcome.error,
                attempts=outcome.cost.attempts,
                cost=outcome.cost,
            )
        )
    return apply_proofs(text, filled), report


def read_source(path: Path) -> str:
    """The text of a Lean file; InputFileError (with the file name) when unreadable."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(
            f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); "
            "Lean sources are UTF-8"
        ) from exc
    except OSError as exc:
        raise InputFileError(f"{path}: cannot be read ({exc.strerror or exc})") from exc


async def prove_file(
    settings: Settings,
    path: Path,
    *,
    out: Path | None = None,
    strategy: str | None = None,
    budget: Budget | None = None,
    profile: str | None = None,
    checker: Checker | None = None,
    on_event: EventSink | None = None,
    on_theorem: Callable[[str, int, int], None] | None = None,
) -> FileReport:
    """Prove the sorry-ed theorems of ``path``; write the result to ``out`` (None: don't write).

    Before any work: the file must be UTF-8 text (InputFileError names it), the strategy and
    profile must exist and the LLM a strategy needs must be configured and answering
    (:meth:`ProverRunner.preflight`)."""
    text = read_source(path)
    runner = build_runner(settings, checker)
    try:
        await runner.preflight(strategy, profile)
        new_text, report = await prove_text(
            runner,
            text,
            file_id=path.stem,
            strategy=strategy,
            budget=budget,
            profile=profile,
            on_event=on_event,
            on_theorem=on_theorem,
        )
    finally:
        if runner.llm is not None:
            await runner.llm.aclose()
        if checker is None:  # ours: close it; a caller's checker stays open
            await runner.checker.aclose()
    report.file = str(path)
    if out is not None and report.solved:
        out.write_text(new_text, encoding="utf-8")
        report.out = str(out)
    elif out is not None and out != path:
        out.write_text(text, encoding="utf-8")
        report.out = str(out)
    return report
