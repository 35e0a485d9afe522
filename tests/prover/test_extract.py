"""Extraction rules and the re-splice of the original statement."""

from __future__ import annotations

from prover.extract import extract, fenced_blocks, kimina_block, last_lean_block, strip_think
from prover.lean_text import normalize_ws, split_stub
from tests.prover.conftest import HEADER, STUB, lean_reply


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
