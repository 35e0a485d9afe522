"""Statement match details: target choice, notation synonyms, contexts, prerequisites."""

from __future__ import annotations

from lean_server.source import parse, tokenize
from lean_server.statement import bound_names, find_target, match_statement, normalize

HEADER = "import Mathlib\n\nopen Real\n\n"


def rules(stub: str, cand: str) -> list[str]:
    return [v.rule for v in match_statement(parse(stub), parse(cand))]


def test_target_is_last_sorried_theorem() -> None:
    sf = parse(HEADER + "theorem a : True := by sorry\nlemma b : True := sorry\ndef c : ℕ := sorry\n")
    target = find_target(sf)
    assert target is not None and target.name == "b"
    named = find_target(sf, "a")
    assert named is not None and named.name == "a"


def test_safe_notation_synonyms_only() -> None:
    assert normalize(["λ", "↦", "→", "∀", "∃", "≤", "≥", "↔", "∧", "∨", "$", "ℕ"]) == (
        "fun",
        "=>",
        "->",
        "forall",
        "exists",
        "<=",
        ">=",
        "<->",
        "/\\",
        "\\/",
        "<|",
        "Nat",
    )
    # `≠` is Prop inequality, `!=` is Bool `bne`; `¬` is `Not`, `!` is Bool `not`: never merged.
    assert normalize(["≠", "¬"]) == ("≠", "¬")
    stub = HEADER + "theorem t (a b : ℕ) : a ≠ b → ¬ (a = b) := by sorry\n"
    assert rules(stub, HEADER + "theorem t (a b : Nat) : a ≠ b -> ¬ (a = b) := by omega\n") == []
    assert rules(stub, HEADER + "theorem t (a b : ℕ) : a != b → ¬ (a = b) := by omega\n") == [
        "statement_changed"
    ]


def test_statement_changed_points_at_the_difference() -> None:
    stub = HEADER + "theorem t (x : ℝ) : x ^ 2 ≥ 0 := by sorry\n"
    (v,) = match_statement(
        parse(stub), parse(HEADER + "theorem t (x : ℝ) :\n    x ^ 3 ≥ 0 := by positivity\n")
    )
    assert v.rule == "statement_changed" and (v.line, v.column) == (6, 8)
    assert "`3`" in v.message and "`2`" in v.message


def test_universe_names_are_alpha_renamed() -> None:
    stub = "universe u\ntheorem t (α : Type u) : α = α := by sorry\n"
    assert rules(stub, "universe v\ntheorem t (α : Type v) : α = α := rfl\n") == []
    assert rules(stub, "universe v\ntheorem t (α : Type) : α = α := rfl\n") == ["statement_changed"]


def test_namespace_and_open_context() -> None:
    stub = HEADER + "namespace N\ntheorem t : (1 : ℕ) = 1 := by sorry\nend N\n"
    assert rules(stub, HEADER + "namespace N\ntheorem t : (1 : ℕ) = 1 := rfl\nend N\n") == []
    assert rules(stub, HEADER + "theorem N.t : (1 : ℕ) = 1 := rfl\n") == ["statement_context_changed"]
    assert rules(stub, HEADER + "open Nat\nnamespace N\ntheorem t : (1 : ℕ) = 1 := rfl\nend N\n") == [
        "statement_context_changed"
    ]


def test_resource_options_do_not_change_the_context() -> None:
    stub = HEADER + "theorem t : (1 : ℕ) = 1 := by sorry\n"
    cand = (
        HEADER
        + "set_option maxRecDepth 4000\nset_option maxHeartbeats 400000 in\ntheorem t : (1 : ℕ) = 1 := rfl\n"
    )
    assert rules(stub, cand) == []
    assert rules(stub, HEADER + "set_option autoImplicit true\ntheorem t : (1 : ℕ) = 1 := rfl\n") == [
        "statement_context_changed"
    ]


def test_answer_slot_may_be_filled_but_keeps_its_type() -> None:
    stub = HEADER + "abbrev p_solution : ℕ := sorry\n\ntheorem t : p_solution = 7 := by sorry\n"
    assert rules(stub, HEADER + "abbrev p_solution : ℕ := 7\n\ntheorem t : p_solution = 7 := rfl\n") == []
    assert rules(stub, HEADER + "abbrev p_solution : ℤ := 7\n\ntheorem t : p_solution = 7 := rfl\n") == [
        "prerequisite_changed"
    ]
    other = HEADER + "def hole : ℕ := sorry\n\ntheorem t : hole = hole := by sorry\n"
    assert rules(other, HEADER + "def hole : ℕ := 7\n\ntheorem t : hole = hole := rfl\n") == [
        "prerequisite_changed"
    ]


def test_redefinition_of_a_statement_name_before_the_target_only() -> None:
    stub = HEADER + "theorem t (n : ℕ) : Nat.Prime 7 := by sorry\n"
    before = HEADER + "def Foo.Prime (n : ℕ) : Prop := True\ntheorem t (n : ℕ) : Nat.Prime 7 := by norm_num\n"
    after = HEADER + "theorem t (n : ℕ) : Nat.Prime 7 := by norm_num\ndef Foo.Prime (n : ℕ) : Prop := True\n"
    assert rules(stub, before) == ["redefines_statement_name"]
    assert rules(stub, after) == []
    bound_ok = HEADER + "lemma n : (1 : ℕ) = 1 := rfl\ntheorem t (n : ℕ) : Nat.Prime 7 := by norm_num\n"
    assert rules(stub, bound_ok) == []


def test_bound_names() -> None:
    source = "(a b : ℕ) (h : ∀ x ∈ S, ∃ y z, f x = y) : ∑ i in s, g i = 0"
    texts = list(normalize(t.text for t in tokenize(source)[0]))
    assert bound_names(texts) >= {"a", "b", "h", "x", "y", "z", "i"}
    assert not bound_names(texts) & {"f", "g", "S", "s"}


def test_deprecated_big_operator_in_matches_membership() -> None:
    stub = HEADER + "theorem t (n : ℕ) : ∑ k in Finset.range n, (0 : ℕ) = 0 := by sorry\n"
    assert rules(stub, HEADER + "theorem t (n : ℕ) : ∑ k ∈ Finset.range n, (0 : ℕ) = 0 := by simp\n") == []
    assert rules(
        stub, HEADER + "theorem t (n : ℕ) : ∑ k ∈ Finset.range (n + 1), (0 : ℕ) = 0 := by simp\n"
    ) == ["statement_changed"]
