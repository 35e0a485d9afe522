"""The analyzer never raises: truncated, mangled and hostile inputs still give an audit."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from lean_server.policy import Policy
from lean_server.source import parse, theorem_names
from lean_server.trust import audit, trust_tiers

NASTY = [
    "",
    "/-",
    '"',
    "'",
    "«",
    "theorem",
    "theorem :=",
    "@[",
    "attribute [",
    "open",
    "namespace",
    "end end end",
    "instance (priority",
    "theorem t.{",
    's!"{',
    'r##"',
    "#",
    "-- only a comment",
    "theorem t : ((((",
    "def f : ℕ → ℕ\n  |",
    "\x00\x01\ufeff theorem u : True := trivial",
]


def test_nasty_inputs_do_not_raise() -> None:
    stub = "import Mathlib\n\ntheorem t : True := by sorry\n"
    for text in NASTY:
        parse(text)
        theorem_names(text)
        tiers = trust_tiers(text, stub, Policy())
        assert [t.tier for t in tiers] == ["statement", "legality"]
        assert not tiers[0].ok  # no `t` is stated properly in any of them
        trust_tiers(stub, text, Policy())  # a broken stub is reported, not raised


def test_truncated_and_mangled_prover_outputs(test_data_dir: Path) -> None:
    rng = random.Random(20260522)
    with (test_data_dir / "prover_outputs_dev.jsonl").open(encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh][:150]
    alphabet = ['"', "'", "/-", "-/", "(", ")", "«", "»", "@[", ":=", "|", "\n", "theorem ", "by", "{", "}"]
    for r in records:
        proof = r["proof"]
        cut = proof[: rng.randrange(len(proof) + 1)]
        chars = list(proof)
        for _ in range(5):
            chars.insert(rng.randrange(len(chars) + 1), rng.choice(alphabet))
        for text in (cut, "".join(chars)):
            report = audit(proof, text, Policy())
            assert isinstance(report.ok, bool)
            for v in report.violations:
                assert v.line >= 0 and v.column >= 0


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_adversarial_inputs_stay_linear() -> None:
    """Inputs built to make a naive lexer or splitter quadratic finish (they take well under a
    second here; a quadratic scan of them would run for minutes)."""
    hostile = [
        "«" * 100_000,
        "instance (priority := \n" * 10_000,
        "@[simp\n" * 10_000,
        "scoped [ \n" * 10_000,
        "theorem t : |x|\n" * 10_000,
        '"' + "\\" * 100_001,
        "/-" * 50_000,
    ]
    for text in hostile:
        audit("theorem t : True := by sorry\n", text, Policy())
