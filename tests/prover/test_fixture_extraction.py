"""Extraction on real prover outputs (../shared/fixtures/prover_outputs_dev.jsonl).

For every passing record with `model_raw_output`, the profile of its model (non-CoT continuation
prompt) must extract the recorded `proof` once the MiniF2F statement is re-spliced (whitespace
normalised). Records where this cannot hold are listed with the reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prover.lean_text import normalize_ws, strip_comments
from prover.profiles import get_profile

MODEL_PROFILE = {
    "AI-MO/Kimina-Prover-Preview-Distill-7B": "kimina-noncot",
    "Goedel-LM/Goedel-Prover-SFT": "goedel-sft",
    "deepseek-ai/DeepSeek-Prover-V2-7B": "deepseek-v2",
}
# The recorded `proof` is a comment-stripped formatting variant of the raw output: equal once
# comments are removed from both sides.
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


def _records(shared_dir: Path) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    records = [json.loads(line) for line in (shared_dir / "fixtures" / "prover_outputs_dev.jsonl").open()]
    bench = {}
    for line in (shared_dir / "benchmarks" / "minif2f.jsonl").open():
        row = json.loads(line)
        if row["split"] == "test":
            bench[row["id"]] = row
    return [r for r in records if r.get("verified") and r.get("model_raw_output")], bench


def test_every_passing_raw_output_extracts_the_recorded_proof(shared_dir: Path) -> None:
    passing, bench = _records(shared_dir)
    assert len(passing) == 323
    exact, mismatched = 0, []
    for rec in passing:
        row = bench[rec["problem_id"]]
        stub = row["header"] + row["formal_statement"]
        cand = get_profile(MODEL_PROFILE[rec["model"]]).extract(rec["model_raw_output"], stub)
        assert cand is not None, rec["id"]
        if normalize_ws(cand.code) == normalize_ws(rec["proof"]):
            exact += 1
            assert rec["id"] not in COMMENTS_STRIPPED_IN_SOURCE | PROOF_NOT_FROM_RAW_OUTPUT
            continue
        mismatched.append(rec["id"])
        if rec["id"] in COMMENTS_STRIPPED_IN_SOURCE:
            assert normalize_ws(strip_comments(cand.code)) == normalize_ws(strip_comments(rec["proof"])), rec[
                "id"
            ]
        else:
            assert rec["id"] in PROOF_NOT_FROM_RAW_OUTPUT, f"unexpected mismatch: {rec['id']}"
    assert set(mismatched) == COMMENTS_STRIPPED_IN_SOURCE | PROOF_NOT_FROM_RAW_OUTPUT
    assert exact == 323 - len(mismatched)


@pytest.mark.parametrize("model", sorted(MODEL_PROFILE))
def test_each_model_has_exact_matches(shared_dir: Path, model: str) -> None:
    passing, bench = _records(shared_dir)
    recs = [r for r in passing if r["model"] == model]
    assert recs
    profile = get_profile(MODEL_PROFILE[model])
    ok = 0
    for rec in recs:
        row = bench[rec["problem_id"]]
        cand = profile.extract(rec["model_raw_output"], row["header"] + row["formal_statement"])
        ok += cand is not None and normalize_ws(cand.code) == normalize_ws(rec["proof"])
    assert ok >= len(recs) - 11
