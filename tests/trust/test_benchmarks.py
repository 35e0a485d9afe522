"""The analyzer on every benchmark statement: exactly one target each, self-consistent audits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lean_server.policy import Policy
from lean_server.source import parse
from lean_server.statement import find_target, is_sorry_body
from lean_server.trust import audit

BENCHMARKS = ("minif2f", "putnambench", "proverbench", "proofnet")
# The defined exception class: ProofNet items whose target is a sorry-ed `def` (data), not a theorem.
PROOFNET_DEF_TARGETS = frozenset(
    {
        "Herstein_exercise_2_1_21",
        "Herstein_exercise_2_2_3",
        "Herstein_exercise_2_2_5",
        "Herstein_exercise_2_5_37",
        "Herstein_exercise_2_5_43",
        "Herstein_exercise_2_8_12",
        "Herstein_exercise_2_8_15",
        "Herstein_exercise_4_1_34",
        "Herstein_exercise_4_2_5",
        "Artin_exercise_2_8_6",
        "Dummit_Foote_exercise_1_6_11",
        "Dummit_Foote_exercise_4_5_28",
        "Dummit_Foote_exercise_7_1_15",
        "Dummit_Foote_exercise_11_1_13",
    }
)


def _records(benchmarks_dir: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in BENCHMARKS:
        with (benchmarks_dir / f"{name}.jsonl").open(encoding="utf-8") as fh:
            out.extend(json.loads(line) for line in fh if line.strip())
    return out


@pytest.fixture(scope="module")
def records(benchmarks_dir: Path) -> list[dict[str, Any]]:
    return _records(benchmarks_dir)


def test_all_statements_are_present(records: list[dict[str, Any]]) -> None:
    assert len(records) == 1856


def test_exactly_one_target_per_statement(records: list[dict[str, Any]]) -> None:
    problems: list[str] = []
    def_targets: set[str] = set()
    for r in records:
        sf = parse(r["lean4_code"])
        target = find_target(sf)
        if target is None:
            problems.append(f"{r['id']}: no target")
            continue
        stated = parse(r["formal_statement"]).declarations[-1]
        if target.short_name != stated.short_name:
            problems.append(f"{r['id']}: target {target.name} but the statement declares {stated.short_name}")
        same_name = [d for d in sf.declarations if d.name == target.name]
        if len(same_name) != 1:
            problems.append(f"{r['id']}: {len(same_name)} declarations named {target.name}")
        sorried_theorems = [d for d in sf.declarations if d.is_theorem and is_sorry_body(sf, d)]
        if not target.is_theorem:
            def_targets.add(r["id"])
            assert not sorried_theorems, r["id"]
        assert target.kind == r["decl_kind"], r["id"]
    assert problems == []
    assert def_targets == PROOFNET_DEF_TARGETS


def test_stub_against_itself_is_only_a_sorry(records: list[dict[str, Any]]) -> None:
    """The stub matches its own statement and breaks no rule but `sorry` (the hole to fill)."""
    bad: list[str] = []
    for r in records:
        report = audit(r["lean4_code"], r["lean4_code"], Policy())
        rules = {v.rule for v in report.violations}
        if rules != {"sorry"}:
            bad.append(f"{r['id']}: {sorted(rules)}")
    assert bad == []
