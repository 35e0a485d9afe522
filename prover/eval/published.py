"""Published numbers to compare against (docs/prover.md, "Published numbers"), as data.

Each entry keeps its budget definition and the Lean version its authors checked on, because
both differ between systems and make numbers only roughly comparable:

- ``samples``: k independent samples per problem (pass@k);
- ``samples_x_tool_calls``: LongCat TIR, parallel inferences × average tool calls ≤ k;
- ``attempts``: generations including repairs / sketch + lemma attempts (LongCat large budgets,
  Goedel self-correction);
- ``n/a``: budget not stated.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

BudgetDefinition = Literal["samples", "samples_x_tool_calls", "attempts", "n/a"]

LEAN_DEEPSEEK = "4.9.0-rc2 (DeepSeek-Prover-V1.5 Mathlib)"
LEAN_GOEDEL = "4.9 (DeepSeek-Prover-V1.5 Mathlib)"
LEAN_LONGCAT = "4.15"
LEAN_KIMINA = "4.9 setup (kimina-lean-server default 4.15)"


class PublishedResult(BaseModel):
    benchmark: str
    system: str
    setting: str
    value: float = Field(description="Percent solved, or number of problems solved when unit == 'problems'.")
    unit: Literal["percent", "problems"] = "percent"
    split: str = Field(default="test", description="Split the number was measured on.")
    k: int | None
    budget: BudgetDefinition
    lean: str | None
    note: str = ""


Row = tuple[Any, ...]
"""(system, setting, value, k, budget, lean[, note[, unit]]) of one published number."""


def _rows(benchmark: str, *rows: Row) -> tuple[PublishedResult, ...]:
    """The published numbers of one benchmark."""
    fields = ("system", "setting", "value", "k", "budget", "lean", "note", "unit")
    return tuple(
        PublishedResult.model_validate({"benchmark": benchmark, **dict(zip(fields, row, strict=False))})
        for row in rows
    )


def _longcat(
    whole: float, tir: float, sketch: float, large: tuple[str, float, int], note: str = ""
) -> tuple[Row, ...]:
    """LongCat-Flash-Prover's four modes, reported for every benchmark with the same budgets."""
    system = "LongCat-Flash-Prover"
    setting, value, k = large
    return (
        (system, "whole-proof", whole, 32, "samples", LEAN_LONGCAT, note),
        (system, "whole-proof + TIR", tir, 32, "samples_x_tool_calls", LEAN_LONGCAT),
        (system, "sketch + TIR", sketch, 32, "attempts", LEAN_LONGCAT),
        (system, setting, value, k, "attempts", LEAN_LONGCAT),
    )


_DS671 = "DeepSeek-Prover-V2-671B"
_GOEDEL32 = "Goedel-Prover-V2-32B"

PUBLISHED: tuple[PublishedResult, ...] = (
    # MiniF2F-test (244)
    *_rows(
        "minif2f",
        *_longcat(84.4, 90.2, 93.9, ("+ tree search", 97.1, 72)),
        ("OProver-32B", "", 93.3, 32, "samples", None),
        (_DS671, "CoT", 61.9, 1, "samples", LEAN_DEEPSEEK),
        (_DS671, "CoT", 82.4, 32, "samples", LEAN_DEEPSEEK),
        (_DS671, "CoT", 88.9, 8192, "samples", LEAN_DEEPSEEK),
        ("DeepSeek-Prover-V2-7B", "CoT", 58.6, 1, "samples", LEAN_DEEPSEEK),
        ("DeepSeek-Prover-V2-7B", "CoT", 75.6, 32, "samples", LEAN_DEEPSEEK),
        ("Goedel-Prover-V2-8B", "", 84.6, 32, "samples", LEAN_GOEDEL),
        (_GOEDEL32, "", 88.1, 32, "samples", LEAN_GOEDEL),
        (
            _GOEDEL32,
            "self-correction",
            90.4,
            32,
            "attempts",
            LEAN_GOEDEL,
            "how the 32 are split between samples and corrections is unverified",
        ),
        ("Kimina-Prover-72B", "", 63.9, 1, "samples", LEAN_KIMINA),
        ("Kimina-Prover-72B", "", 84.0, 32, "samples", LEAN_KIMINA),
        ("Seed-Prover 1.0", "", 99.6, None, "n/a", "4.14.0"),
        ("Hilbert", "", 99.2, None, "n/a", None),
        ("DSP+", "", 80.7, None, "n/a", None),
    ),
    # ProofNet-test (186)
    *_rows(
        "proofnet",
        *_longcat(19.9, 36.1, 47.3, ("larger budget", 52.2, 68)),
        ("OProver-32B", "", 33.2, 32, "samples", None),
        (_DS671, "CoT", 30.5, 32, "samples", LEAN_DEEPSEEK),
        (_DS671, "CoT", 37.1, 1024, "samples", LEAN_DEEPSEEK),
        (_GOEDEL32, "LongCat re-eval", 22.0, 32, "samples", LEAN_LONGCAT),
        ("Kimina-Prover-72B", "LongCat re-eval", 18.3, 32, "samples", LEAN_LONGCAT),
        ("DSP+", "", 32.8, None, "n/a", None),
    ),
    # ProverBench (325)
    *_rows(
        "proverbench",
        *_longcat(49.9, 57.9, 66.5, ("larger budget", 70.8, 220)),
        ("OProver-32B", "", 58.2, 32, "samples", None),
        (_DS671, "CoT", 52.9, 32, "samples", LEAN_DEEPSEEK),
        (_DS671, "CoT", 59.1, 512, "samples", LEAN_DEEPSEEK),
        (_GOEDEL32, "LongCat re-eval", 53.2, 32, "samples", LEAN_LONGCAT),
        ("Kimina-Prover-72B", "LongCat re-eval", 44.6, 32, "samples", LEAN_LONGCAT),
    ),
    # PutnamBench (644-672 problems depending on the release)
    *_rows(
        "putnambench",
        *_longcat(4.9, 10.4, 28.9, ("+ tree search", 41.5, 118), note="672-problem set"),
        ("OProver-32B", "", 11.3, 32, "samples", None),
        (_DS671, "CoT", 22, 32, "samples", LEAN_DEEPSEEK, "of 658", "problems"),
        (_DS671, "CoT", 47, 1024, "samples", LEAN_DEEPSEEK, "of 658", "problems"),
        (_GOEDEL32, "", 43, 32, "samples", LEAN_GOEDEL, "", "problems"),
        (_GOEDEL32, "self-correction", 57, 32, "attempts", LEAN_GOEDEL, "", "problems"),
        (
            _GOEDEL32,
            "self-correction",
            86,
            184,
            "attempts",
            LEAN_GOEDEL,
            "README lists budget 192",
            "problems",
        ),
        ("Seed-Prover 1.0", "", 50.4, None, "n/a", "4.14.0", "331/657"),
        ("Hilbert", "", 70.0, None, "n/a", None, "462/660"),
        ("ax-prover (Opus 4.5)", "50 iterations", 54.7, 1, "attempts", "4.24"),
    ),
)


def published_for(benchmark: str) -> list[PublishedResult]:
    return [r for r in PUBLISHED if r.benchmark == benchmark]
