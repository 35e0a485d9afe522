"""Published numbers to compare against (shared/docs/prover.md §(c)), as data.

Each entry keeps its budget definition and the Lean version its authors checked on, because
both differ between systems and make numbers only roughly comparable:

- ``samples``: k independent samples per problem (pass@k);
- ``samples_x_tool_calls``: LongCat TIR, parallel inferences × average tool calls ≤ k;
- ``attempts``: generations including repairs / sketch + lemma attempts (LongCat large budgets,
  Goedel self-correction);
- ``n/a``: budget not stated.
"""

from __future__ import annotations

from typing import Literal

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


def _r(
    benchmark: str,
    system: str,
    setting: str,
    value: float,
    k: int | None,
    budget: BudgetDefinition,
    lean: str | None,
    note: str = "",
    unit: Literal["percent", "problems"] = "percent",
) -> PublishedResult:
    return PublishedResult(
        benchmark=benchmark,
        system=system,
        setting=setting,
        value=value,
        unit=unit,
        k=k,
        budget=budget,
        lean=lean,
        note=note,
    )


PUBLISHED: tuple[PublishedResult, ...] = (
    # MiniF2F-test (244)
    _r("minif2f", "LongCat-Flash-Prover", "whole-proof", 84.4, 32, "samples", LEAN_LONGCAT),
    _r(
        "minif2f", "LongCat-Flash-Prover", "whole-proof + TIR", 90.2, 32, "samples_x_tool_calls", LEAN_LONGCAT
    ),
    _r("minif2f", "LongCat-Flash-Prover", "sketch + TIR", 93.9, 32, "attempts", LEAN_LONGCAT),
    _r("minif2f", "LongCat-Flash-Prover", "+ tree search", 97.1, 72, "attempts", LEAN_LONGCAT),
    _r("minif2f", "OProver-32B", "", 93.3, 32, "samples", None),
    _r("minif2f", "DeepSeek-Prover-V2-671B", "CoT", 61.9, 1, "samples", LEAN_DEEPSEEK),
    _r("minif2f", "DeepSeek-Prover-V2-671B", "CoT", 82.4, 32, "samples", LEAN_DEEPSEEK),
    _r("minif2f", "DeepSeek-Prover-V2-671B", "CoT", 88.9, 8192, "samples", LEAN_DEEPSEEK),
    _r("minif2f", "DeepSeek-Prover-V2-7B", "CoT", 58.6, 1, "samples", LEAN_DEEPSEEK),
    _r("minif2f", "DeepSeek-Prover-V2-7B", "CoT", 75.6, 32, "samples", LEAN_DEEPSEEK),
    _r("minif2f", "Goedel-Prover-V2-8B", "", 84.6, 32, "samples", LEAN_GOEDEL),
    _r("minif2f", "Goedel-Prover-V2-32B", "", 88.1, 32, "samples", LEAN_GOEDEL),
    _r(
        "minif2f",
        "Goedel-Prover-V2-32B",
        "self-correction",
        90.4,
        32,
        "attempts",
        LEAN_GOEDEL,
        "how the 32 are split between samples and corrections is unverified",
    ),
    _r("minif2f", "Kimina-Prover-72B", "", 63.9, 1, "samples", LEAN_KIMINA),
    _r("minif2f", "Kimina-Prover-72B", "", 84.0, 32, "samples", LEAN_KIMINA),
    _r("minif2f", "Seed-Prover 1.0", "", 99.6, None, "n/a", "4.14.0"),
    _r("minif2f", "Hilbert", "", 99.2, None, "n/a", None),
    _r("minif2f", "DSP+", "", 80.7, None, "n/a", None),
    # ProofNet-test (186)
    _r("proofnet", "LongCat-Flash-Prover", "whole-proof", 19.9, 32, "samples", LEAN_LONGCAT),
    _r(
        "proofnet",
        "LongCat-Flash-Prover",
        "whole-proof + TIR",
        36.1,
        32,
        "samples_x_tool_calls",
        LEAN_LONGCAT,
    ),
    _r("proofnet", "LongCat-Flash-Prover", "sketch + TIR", 47.3, 32, "attempts", LEAN_LONGCAT),
    _r("proofnet", "LongCat-Flash-Prover", "larger budget", 52.2, 68, "attempts", LEAN_LONGCAT),
    _r("proofnet", "OProver-32B", "", 33.2, 32, "samples", None),
    _r("proofnet", "DeepSeek-Prover-V2-671B", "CoT", 30.5, 32, "samples", LEAN_DEEPSEEK),
    _r("proofnet", "DeepSeek-Prover-V2-671B", "CoT", 37.1, 1024, "samples", LEAN_DEEPSEEK),
    _r("proofnet", "Goedel-Prover-V2-32B", "LongCat re-eval", 22.0, 32, "samples", LEAN_LONGCAT),
    _r("proofnet", "Kimina-Prover-72B", "LongCat re-eval", 18.3, 32, "samples", LEAN_LONGCAT),
    _r("proofnet", "DSP+", "", 32.8, None, "n/a", None),
    # ProverBench (325)
    _r("proverbench", "LongCat-Flash-Prover", "whole-proof", 49.9, 32, "samples", LEAN_LONGCAT),
    _r(
        "proverbench",
        "LongCat-Flash-Prover",
        "whole-proof + TIR",
        57.9,
        32,
        "samples_x_tool_calls",
        LEAN_LONGCAT,
    ),
    _r("proverbench", "LongCat-Flash-Prover", "sketch + TIR", 66.5, 32, "attempts", LEAN_LONGCAT),
    _r("proverbench", "LongCat-Flash-Prover", "larger budget", 70.8, 220, "attempts", LEAN_LONGCAT),
    _r("proverbench", "OProver-32B", "", 58.2, 32, "samples", None),
    _r("proverbench", "DeepSeek-Prover-V2-671B", "CoT", 52.9, 32, "samples", LEAN_DEEPSEEK),
    _r("proverbench", "DeepSeek-Prover-V2-671B", "CoT", 59.1, 512, "samples", LEAN_DEEPSEEK),
    _r("proverbench", "Goedel-Prover-V2-32B", "LongCat re-eval", 53.2, 32, "samples", LEAN_LONGCAT),
    _r("proverbench", "Kimina-Prover-72B", "LongCat re-eval", 44.6, 32, "samples", LEAN_LONGCAT),
    # PutnamBench (644-672 problems depending on the release)
    _r(
        "putnambench",
        "LongCat-Flash-Prover",
        "whole-proof",
        4.9,
        32,
        "samples",
        LEAN_LONGCAT,
        "672-problem set",
    ),
    _r(
        "putnambench",
        "LongCat-Flash-Prover",
        "whole-proof + TIR",
        10.4,
        32,
        "samples_x_tool_calls",
        LEAN_LONGCAT,
    ),
    _r("putnambench", "LongCat-Flash-Prover", "sketch + TIR", 28.9, 32, "attempts", LEAN_LONGCAT),
    _r("putnambench", "LongCat-Flash-Prover", "+ tree search", 41.5, 118, "attempts", LEAN_LONGCAT),
    _r("putnambench", "OProver-32B", "", 11.3, 32, "samples", None),
    _r(
        "putnambench",
        "DeepSeek-Prover-V2-671B",
        "CoT",
        22,
        32,
        "samples",
        LEAN_DEEPSEEK,
        "of 658",
        "problems",
    ),
    _r(
        "putnambench",
        "DeepSeek-Prover-V2-671B",
        "CoT",
        47,
        1024,
        "samples",
        LEAN_DEEPSEEK,
        "of 658",
        "problems",
    ),
    _r("putnambench", "Goedel-Prover-V2-32B", "", 43, 32, "samples", LEAN_GOEDEL, "", "problems"),
    _r(
        "putnambench",
        "Goedel-Prover-V2-32B",
        "self-correction",
        57,
        32,
        "attempts",
        LEAN_GOEDEL,
        "",
        "problems",
    ),
    _r(
        "putnambench",
        "Goedel-Prover-V2-32B",
        "self-correction",
        86,
        184,
        "attempts",
        LEAN_GOEDEL,
        "README lists budget 192",
        "problems",
    ),
    _r("putnambench", "Seed-Prover 1.0", "", 50.4, None, "n/a", "4.14.0", "331/657"),
    _r("putnambench", "Hilbert", "", 70.0, None, "n/a", None, "462/660"),
    _r("putnambench", "ax-prover (Opus 4.5)", "50 iterations", 54.7, 1, "attempts", "4.24"),
)


def published_for(benchmark: str) -> list[PublishedResult]:
    return [r for r in PUBLISHED if r.benchmark == benchmark]
