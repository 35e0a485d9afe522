"""Real prover outputs: no false rejects, and mutated statements are caught."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from lean_server.policy import Policy
from lean_server.source import parse
from lean_server.trust import audit


@pytest.fixture(scope="module")
def stubs(benchmarks_dir: Path) -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {}
    with (benchmarks_dir / "minif2f.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            out[(r["id"], r["split"])] = r["lean4_code"]
    return out


@pytest.fixture(scope="module")
def outputs(test_data_dir: Path) -> list[dict[str, Any]]:
    with (test_data_dir / "prover_outputs_dev.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def test_no_false_rejects_on_verified_matching_outputs(
    outputs: list[dict[str, Any]], stubs: dict[tuple[str, str], str]
) -> None:
    verified = [r for r in outputs if r["verified"] and r["statement_matches_benchmark"]]
    assert len(verified) > 300
    rejected = []
    for r in verified:
        report = audit(stubs[(r["problem_id"], r["split"])], r["proof"], Policy())
        if not report.ok:
            rejected.append((r["id"], [v.rule for v in report.violations]))
    assert rejected == []


# How many fixture records have `statement_matches_benchmark: false`. Today: none.
FIXTURE_MISMATCHED_RECORDS = 0


def test_mismatching_statements_are_flagged(
    outputs: list[dict[str, Any]], stubs: dict[tuple[str, str], str]
) -> None:
    """Every fixture record with ``statement_matches_benchmark: false`` is flagged.

    The dev fixture has NO such record (1196 records, all ``true``), so the loop below checks
    nothing by itself; the count is pinned so that a fixture update which adds mismatched records
    makes this test fail loudly and get re-read. The real evidence that changed statements are
    caught is :func:`test_mutated_statements_are_flagged`, which tampers with the statements of real
    verified proofs (more than 400 mutants: renamed target, added ``False`` hypothesis, conclusion
    replaced or negated, a number changed, a binder dropped, an axiom or an ``open`` added) and
    requires every mutant to be rejected.
    """
    mismatched = [r for r in outputs if not r["statement_matches_benchmark"]]
    assert len(outputs) > 1000
    assert len(mismatched) == FIXTURE_MISMATCHED_RECORDS
    for r in mismatched:
        assert not audit(stubs[(r["problem_id"], r["split"])], r["proof"], Policy()).ok, r["id"]


def _mutations(proof: str, name: str) -> dict[str, str]:
    """Statement tamperings of a real proof: each must be rejected."""
    sf = parse(proof)
    target = next(d for d in sf.declarations if d.name == name)
    type_toks = sf.tokens[target.type.start : target.type.end]
    type_start, type_end = type_toks[0].start, type_toks[-1].end
    stmt_type = proof[type_start:type_end]
    out: dict[str, str] = {
        "renamed": proof.replace(f"theorem {name}", f"theorem {name}_v2", 1),
        "extra_false_hypothesis": proof.replace(f"theorem {name}", f"theorem {name} (hcheat : False)", 1),
        "conclusion_replaced_by_true": proof[:type_start] + "True" + proof[type_end:],
        "conclusion_negated": proof[:type_start] + f"¬ ({stmt_type})" + proof[type_end:],
        "axiom_added": proof.replace(f"theorem {name}", f"axiom helper_ax : False\n\ntheorem {name}", 1),
        "open_added": proof.replace(f"theorem {name}", f"open Classical in\ntheorem {name}", 1),
    }
    number = re.search(r"\b\d+\b", stmt_type)
    if number is not None:
        bumped = str(int(number.group()) + 1)
        out["number_changed"] = (
            proof[: type_start + number.start()] + bumped + proof[type_start + number.end() :]
        )
    binders = sf.tokens[target.binders.start : target.binders.end]
    if binders and binders[-1].text == ")":
        last_open = max(i for i, t in enumerate(binders) if t.text == "(")
        a, b = binders[last_open].start, binders[-1].end
        out["last_binder_dropped"] = proof[:a] + proof[b:]
    return out


def test_mutated_statements_are_flagged(
    outputs: list[dict[str, Any]], stubs: dict[tuple[str, str], str]
) -> None:
    """The evidence for "a changed statement is flagged": every mutant of a real verified proof
    (:func:`_mutations`, a quarter of the 323 verified records, > 400 mutants) must be rejected."""
    verified = [r for r in outputs if r["verified"] and r["statement_matches_benchmark"]]
    sample = verified[::4]
    checked = 0
    missed = []
    for r in sample:
        stub = stubs[(r["problem_id"], r["split"])]
        for label, mutant in _mutations(r["proof"], r["problem_id"]).items():
            checked += 1
            report = audit(stub, mutant, Policy())
            if report.ok:
                missed.append((r["id"], label))
    assert checked > 400
    assert missed == []


def test_header_variants_of_verified_outputs_pass(
    outputs: list[dict[str, Any]], stubs: dict[tuple[str, str], str]
) -> None:
    """Header-less bodies (checked in the stub's header) and the Goedel-style header with
    `maxHeartbeats 400000` are the same problem."""
    verified = [r for r in outputs if r["verified"] and r["statement_matches_benchmark"]][::3]
    rejected = []
    for r in verified:
        stub = stubs[(r["problem_id"], r["split"])]
        proof = r["proof"]
        body = proof[proof.index(f"theorem {r['problem_id']}") :]
        goedel = proof.replace("set_option maxHeartbeats 0", "set_option maxHeartbeats 400000")
        assert goedel != proof
        for label, variant in (("headerless", body), ("goedel", goedel)):
            if not audit(stub, variant, Policy()).ok:
                rejected.append((r["id"], label))
    assert rejected == []


def test_filling_every_benchmark_hole_passes(benchmarks_dir: Path) -> None:
    """Every sorry of every benchmark stub replaced by a tactic: the audit accepts all 1856."""
    rejected = []
    for name in ("minif2f", "putnambench", "proverbench", "proofnet"):
        with (benchmarks_dir / f"{name}.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                r = json.loads(line)
                filled = re.sub(r"\bsorry\b", "by simp", r["lean4_code"])
                report = audit(r["lean4_code"], filled, Policy())
                if not report.ok:
                    rejected.append((r["id"], [v.rule for v in report.violations]))
    assert rejected == []
