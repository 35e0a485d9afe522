"""Extraction rules and the re-splice of the original statement."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from lean_server.policy import Policy
from lean_server.trust import audit
from prover.errors import ProverError, TargetNotFound
from prover.extract import (
    extract,
    fenced_blocks,
    kimina_block,
    last_lean_block,
    split_target,
    strip_think,
)
from prover.lean_text import normalize_ws, split_stub
from tests.prover.conftest import HEADER, STUB, lean_reply


def lean_block(code: str) -> str:
    return f"```lean4\n{code}\n```"


def test_last_lean_block_wins_and_think_is_dropped() -> None:
    cand = extract(lean_reply("omega"), STUB)
    assert cand is not None
    assert cand.code.startswith(HEADER)
    assert "theorem wrong" not in cand.code  # the block inside <think> is ignored
    assert cand.code.rstrip().endswith("omega")
    assert cand.source == "block"


def test_missing_closing_fence_and_crlf() -> None:
    text = "Proof:\r\n```lean4\r\ntheorem add_zero' (x : ℕ) (h₀ : 0 < x) : x + 0 = x := by\r\n  simp"
    blocks = fenced_blocks(strip_think(text))
    assert len(blocks) == 1 and not blocks[0].closed
    cand = extract(text, STUB)
    assert cand is not None and "\r" not in cand.code
    assert cand.code.rstrip().endswith("simp")


def test_changed_statement_is_replaced_by_the_original() -> None:
    reply = "```lean4\ntheorem add_zero' (x : ℕ) : True := by\n  trivial\n```"
    cand = extract(reply, STUB)
    assert cand is not None
    parts = split_stub(STUB)
    assert parts.head in cand.code  # original statement, with h₀ and `x + 0 = x`
    assert ": True" not in cand.code
    assert cand.body.strip() == "by\n  trivial"


def test_helper_lemmas_before_the_target_are_kept_and_header_not_duplicated() -> None:
    reply = (
        "```lean4\nimport Mathlib\nimport Aesop\nset_option maxHeartbeats 400000\n"
        "open BigOperators Real Nat Topology Rat\n\n"
        "lemma helper (y : ℕ) : y + 0 = y := by simp\n\n"
        "theorem add_zero' (x : ℕ) (h₀ : 0 < x) : x + 0 = x := by\n  exact helper x\n```"
    )
    cand = extract(reply, STUB)
    assert cand is not None
    assert cand.helpers.startswith("lemma helper")
    assert cand.code.count("import Mathlib") == 1
    assert cand.code.index("lemma helper") < cand.code.index("theorem add_zero'")


def test_kimina_rule_needs_theorem_by_assign_import() -> None:
    text = (
        "```lean4\nimport Mathlib\ntheorem add_zero' (x : ℕ) (h₀ : 0 < x) : x + 0 = x := by\n  simp\n```\n"
        "and a partial one:\n```lean4\nsimp\n```"
    )
    block = kimina_block(text)
    assert block is not None and "import Mathlib" in block
    assert last_lean_block(text) == "simp\n"


def test_bare_tactic_block_is_a_body() -> None:
    cand = extract("```lean4\nnorm_num\nlinarith\n```", STUB)
    assert cand is not None
    assert normalize_ws(cand.body) == "by norm_num linarith"


def test_continuation_stops_at_first_fence_or_end() -> None:
    cand = extract(
        "simp\n  omega\n```\nprose ```lean4\ntheorem x : False := sorry\n```", STUB, continuation=True
    )
    assert cand is not None and cand.source == "continuation"
    assert cand.code.endswith("x + 0 = x := by\n  simp\n  omega\n")
    truncated = extract("nlinarith [sq_nonneg x", STUB, continuation=True)
    assert truncated is not None and truncated.code.rstrip().endswith("nlinarith [sq_nonneg x")


def test_nothing_to_extract() -> None:
    assert extract("I cannot prove this.", STUB) is None
    assert extract("   ", STUB, continuation=True) is None


def test_stub_suffix_is_kept() -> None:
    stub = "import Mathlib\nnamespace Foo\ntheorem t : 1 = 1 := by sorry\nend Foo\n"
    cand = extract("```lean4\ntheorem t : 1 = 1 := by\n  rfl\n```", stub)
    assert cand is not None
    assert cand.code.rstrip().endswith("end Foo")
    assert "namespace Foo\ntheorem t : 1 = 1 := by\n  rfl" in cand.code


def test_closing_fence_glued_to_the_last_code_line() -> None:
    text = "```lean4\ntheorem add_zero' (x : ℕ) (h₀ : 0 < x) : x + 0 = x := by\n  omega```\nDone."
    blocks = fenced_blocks(text)
    assert len(blocks) == 1 and blocks[0].closed
    cand = extract(text, STUB)
    assert cand is not None and "`" not in cand.code
    assert cand.code.rstrip().endswith("omega")


# ---- PutnamBench answer slots and ProofNet data targets (real benchmark records) ----------------
def _benchmark(benchmarks_dir: Path, name: str) -> list[dict[str, Any]]:
    with (benchmarks_dir / f"{name}.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _filled_reply(record: dict[str, Any], proof: str = "by\n  simp") -> str:
    """A model answer that restates the whole PutnamBench file with its answer slot filled."""
    preamble = record["preamble"]
    for answer in record["answer_formal"]:
        slot = re.compile(rf"(abbrev {re.escape(answer['name'])}\b[^\n]*?:=)\s*sorry")
        match = slot.search(preamble)
        assert match is not None, record["id"]
        preamble = f"{preamble[: match.start()]}{match.group(1)} {answer['answer']}{preamble[match.end() :]}"
    statement = record["formal_statement"]
    assert statement.rstrip().endswith("by sorry")
    statement = statement.rstrip()[: -len("by sorry")] + proof
    return f"Here it is.\n```lean4\n{record['header']}{preamble}\n{statement}\n```\n"


def _answer_records(benchmarks_dir: Path) -> list[dict[str, Any]]:
    return [r for r in _benchmark(benchmarks_dir, "putnambench") if r["requires_answer"]]


def test_putnam_answer_slots_are_replaced_not_appended(benchmarks_dir: Path) -> None:
    """All 346 PutnamBench problems with an answer slot: the model's filled `abbrev …_solution`
    replaces the stub's `:= sorry` one, and the audit accepts the candidate."""
    records = _answer_records(benchmarks_dir)
    assert len(records) == 346
    rejected: list[tuple[str, list[str]]] = []
    for r in records:
        cand = extract(_filled_reply(r), r["lean4_code"])
        assert cand is not None, r["id"]
        name = r["answer_formal"][0]["name"]
        assert len(re.findall(rf"\babbrev {re.escape(name)}\b", cand.code)) == 1, r["id"]
        assert r["answer_formal"][0]["answer"] in cand.code
        assert name not in cand.helpers
        report = audit(r["lean4_code"], cand.code, Policy())
        if not report.ok:
            rejected.append((r["id"], [v.rule for v in report.violations]))
    assert rejected == []


def test_putnam_changed_answer_type_is_spliced_and_caught(benchmarks_dir: Path) -> None:
    record = next(r for r in _answer_records(benchmarks_dir) if r["id"] == "putnam_1962_a5")
    reply = _filled_reply(record).replace(
        "abbrev putnam_1962_a5_solution : ℕ → ℕ :=", "abbrev putnam_1962_a5_solution : ℕ → ℤ :="
    )
    cand = extract(reply, record["lean4_code"])
    assert cand is not None and "putnam_1962_a5_solution : ℕ → ℤ" in cand.code
    rules = {v.rule for v in audit(record["lean4_code"], cand.code, Policy()).violations}
    assert "prerequisite_changed" in rules
    assert "duplicate_declaration" not in rules


def test_putnam_other_prerequisites_may_not_change(benchmarks_dir: Path) -> None:
    """Only the answer slot is replaced: a changed `def f` of the preamble stays a second `f`."""
    record = next(r for r in _answer_records(benchmarks_dir) if r["id"] == "putnam_2025_a5")
    reply = _filled_reply(record).replace(
        "def f (n : ℕ) (s : Fin n → ℤˣ) : ℕ :=", "def f (n : ℕ) (s : Fin n → ℤˣ) : ℕ := 0\ndef g : ℕ :="
    )
    cand = extract(reply, record["lean4_code"])
    assert cand is not None
    assert record["preamble"].split("def f", 1)[1] in cand.code  # the stub's own `def f` is kept
    report = audit(record["lean4_code"], cand.code, Policy())
    assert not report.ok
    assert {"duplicate_declaration", "prerequisite_changed"} & {v.rule for v in report.violations}


def test_putnam_unfilled_slot_still_fails_as_sorry(benchmarks_dir: Path) -> None:
    record = _answer_records(benchmarks_dir)[0]
    cand = extract(
        lean_block(record["formal_statement"].replace("by sorry", "by\n  simp")), record["lean4_code"]
    )
    assert cand is not None
    report = audit(record["lean4_code"], cand.code, Policy())
    assert [v.rule for v in report.violations] == ["sorry"]


def _def_records(benchmarks_dir: Path) -> list[dict[str, Any]]:
    return [r for r in _benchmark(benchmarks_dir, "proofnet") if r["decl_kind"] == "def"]


def test_proofnet_def_targets_are_split_and_spliced(benchmarks_dir: Path) -> None:
    """The 14 ProofNet `def … : CommGroup G := by sorry` items: split, re-spliced, accepted."""
    records = _def_records(benchmarks_dir)
    assert len(records) == 14
    for r in records:
        parts = split_target(r["lean4_code"])
        name = r["name_in_source"]
        assert parts.name == name, r["id"]
        assert parts.head.rstrip().endswith(":=") and "def " + name in parts.head
        assert parts.prefix == r["header"]
        whole = extract(
            lean_block(r["formal_statement"].replace("by sorry", "by\n  exact inferInstance")),
            r["lean4_code"],
        )
        tactics = extract(lean_block("exact inferInstance"), r["lean4_code"])
        for cand in (whole, tactics):
            assert cand is not None, r["id"]
            assert cand.code.startswith(r["header"] + parts.head)
            assert cand.body.strip() == "by\n  exact inferInstance"
            assert audit(r["lean4_code"], cand.code, Policy()).ok, r["id"]


def test_def_target_restated_as_theorem_keeps_the_original_def(benchmarks_dir: Path) -> None:
    record = _def_records(benchmarks_dir)[0]
    reply = lean_block(
        "theorem helper : 1 = 1 := rfl\n\n"
        + record["formal_statement"]
        .replace("def ", "theorem ", 1)
        .replace("by sorry", "by\n  exact inferInstance")
    )
    cand = extract(reply, record["lean4_code"])
    assert cand is not None
    assert "def " + record["name_in_source"] in cand.code
    assert "theorem " + record["name_in_source"] not in cand.code
    assert cand.helpers == "theorem helper : 1 = 1 := rfl"


def test_statement_without_target_is_a_typed_error() -> None:
    with pytest.raises(TargetNotFound, match="nothing to prove") as info:
        split_target("import Mathlib\n\ndef two : ℕ := 2\n")
    assert isinstance(info.value, ProverError) and isinstance(info.value, ValueError)
    with pytest.raises(TargetNotFound, match="`missing`"):
        extract(lean_block("simp"), STUB, target="missing")


def test_answer_helpers_written_before_the_slot_move_with_it(benchmarks_dir: Path) -> None:
    """An auxiliary `def` the model's answer uses stays in front of the filled slot."""
    record = next(r for r in _answer_records(benchmarks_dir) if r["id"] == "putnam_1962_a5")
    reply = _filled_reply(record).replace(
        "abbrev putnam_1962_a5_solution : ℕ → ℕ := fun n : ℕ => n * (n + 1) * 2^(n - 2)",
        "def closed_form (n : ℕ) : ℕ := n * (n + 1) * 2 ^ (n - 2)\n\n"
        "abbrev putnam_1962_a5_solution : ℕ → ℕ := closed_form\n\n"
        "lemma closed_form_two : closed_form 2 = 6 := by\n  rfl",
    )
    cand = extract(reply, record["lean4_code"])
    assert cand is not None
    code = cand.code
    assert (
        code.index("def closed_form")
        < code.index("abbrev putnam_1962_a5_solution")
        < code.index("lemma closed_form_two")
    )
    assert cand.helpers.startswith("lemma closed_form_two")
    assert audit(record["lean4_code"], code, Policy()).ok
