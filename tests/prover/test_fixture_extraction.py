"""Extraction on real prover outputs (tests/data/prover_outputs_dev.jsonl).

For every passing record with `model_raw_output`, the profile the PRODUCT picks for its model
(`prover.profiles.profile_for_model`, i.e. MODEL_PROFILES) must extract the recorded `proof` once
the MiniF2F statement is re-spliced (whitespace normalised). These outputs are non-CoT
continuations; the CoT profiles recognise that shape (`looks_like_continuation`). Records where
this cannot hold are listed below with the reason.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from prover.lean_text import normalize_ws, strip_comments
from prover.profiles import MODEL_PROFILES, profile_for_model

FIXTURE_MODELS = (
    "AI-MO/Kimina-Prover-Preview-Distill-7B",
    "Goedel-LM/Goedel-Prover-SFT",
    "deepseek-ai/DeepSeek-Prover-V2-7B",
)
# The recorded `proof` is a comment-stripped formatting variant of the raw output (the source kept
# the variant that compiled): equal once comments are removed from both sides.
COMMENTS_STRIPPED_IN_SOURCE = {
    "nof_mathd_algebra_171_Kimina-Prover-Preview-Distill-7B_2",
    "nof_mathd_algebra_171_Kimina-Prover-Preview-Distill-7B_3",
    "nof_mathd_numbertheory_293_Kimina-Prover-Preview-Distill-7B_6",
    "nof_mathd_numbertheory_293_Kimina-Prover-Preview-Distill-7B_10",
    "nof_mathd_numbertheory_342_Kimina-Prover-Preview-Distill-7B_2",
    "nof_mathd_numbertheory_342_Kimina-Prover-Preview-Distill-7B_3",
    "nof_mathd_numbertheory_342_Kimina-Prover-Preview-Distill-7B_4",
    "nof_mathd_algebra_412_Kimina-Prover-Preview-Distill-7B_3",
    "nof_amc12_2000_p12_Kimina-Prover-Preview-Distill-7B_23",
}
# The recorded `proof` is not derived from this raw output at all (a different, shorter proof).
PROOF_NOT_FROM_RAW_OUTPUT = {
    "nof_mathd_algebra_346_Kimina-Prover-Preview-Distill-7B_1",
    "nof_mathd_algebra_346_Kimina-Prover-Preview-Distill-7B_3",
}
EXCEPTIONS = COMMENTS_STRIPPED_IN_SOURCE | PROOF_NOT_FROM_RAW_OUTPUT
# how many passing records with a raw output each model has in the fixture
RECORDS_PER_MODEL = {
    "AI-MO/Kimina-Prover-Preview-Distill-7B": 92,
    "Goedel-LM/Goedel-Prover-SFT": 117,
    "deepseek-ai/DeepSeek-Prover-V2-7B": 114,
}


def _records(
    test_data_dir: Path, benchmarks_dir: Path
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    records = [json.loads(line) for line in (test_data_dir / "prover_outputs_dev.jsonl").open()]
    bench = {}
    for line in (benchmarks_dir / "minif2f.jsonl").open():
        row = json.loads(line)
        if row["split"] == "test":
            bench[row["id"]] = row
    return [r for r in records if r.get("verified") and r.get("model_raw_output")], bench


def _extracted(rec: dict[str, Any], bench: dict[str, dict[str, Any]]) -> str | None:
    row = bench[rec["problem_id"]]
    cand = profile_for_model(rec["model"]).extract(
        rec["model_raw_output"], row["header"] + row["formal_statement"]
    )
    return None if cand is None else cand.code


def test_the_product_knows_every_fixture_model(test_data_dir: Path, benchmarks_dir: Path) -> None:
    passing, _ = _records(test_data_dir, benchmarks_dir)
    assert Counter(r["model"] for r in passing) == RECORDS_PER_MODEL
    for model in FIXTURE_MODELS:
        assert model in MODEL_PROFILES
        assert profile_for_model(model).name != "generic"


def test_every_passing_raw_output_extracts_the_recorded_proof(
    test_data_dir: Path, benchmarks_dir: Path
) -> None:
    passing, bench = _records(test_data_dir, benchmarks_dir)
    assert len(passing) == 323
    wrong: list[str] = []
    for rec in passing:
        code = _extracted(rec, bench)
        assert code is not None, rec["id"]
        exact = normalize_ws(code) == normalize_ws(rec["proof"])
        if rec["id"] in COMMENTS_STRIPPED_IN_SOURCE:
            assert not exact, f"{rec['id']} now matches exactly: drop it from the exceptions"
            assert normalize_ws(strip_comments(code)) == normalize_ws(strip_comments(rec["proof"])), rec["id"]
        elif rec["id"] in PROOF_NOT_FROM_RAW_OUTPUT:
            assert not exact, f"{rec['id']} now matches exactly: drop it from the exceptions"
        elif not exact:
            wrong.append(rec["id"])
    assert wrong == []
    assert {r["id"] for r in passing} >= EXCEPTIONS  # no stale exception


@pytest.mark.parametrize("model", FIXTURE_MODELS)
def test_each_model_misses_exactly_its_listed_exceptions(
    test_data_dir: Path, benchmarks_dir: Path, model: str
) -> None:
    passing, bench = _records(test_data_dir, benchmarks_dir)
    recs = [r for r in passing if r["model"] == model]
    assert len(recs) == RECORDS_PER_MODEL[model]
    misses = {
        r["id"]
        for r in recs
        if (code := _extracted(r, bench)) is None or normalize_ws(code) != normalize_ws(r["proof"])
    }
    assert misses == {e for e in EXCEPTIONS if e in {r["id"] for r in recs}}
