"""Splitting into commands: kinds, names, modifiers, attributes, contexts, spans."""

from __future__ import annotations

from lean_server.source import parse, theorem_names

SRC = """import Mathlib
import Aesop

set_option maxHeartbeats 400000

open BigOperators Real
/- theorem in_comment : False := sorry -/
namespace Foo.Bar
/-- doc -/
@[simp, implemented_by baz] private noncomputable def f₁ (x : ℕ) : ℕ := x
protected theorem t' {α : Type*} (a : α) : a = a := by
  open Nat in simp
  set_option maxRecDepth 100 in rfl
end Foo.Bar
open Real in
lemma top.{u} : ∀ x : ℕ, x = x := fun x => rfl
theorem _root_.rooted : True := trivial
attribute [local instance] foo
instance : Inhabited ℕ := ⟨0⟩
instance (priority := 100) myInst : Inhabited ℕ := ⟨0⟩
local notation "ℕ₂" => ℕ
noncomputable section
example : True := trivial
end
#print axioms top
"""


def test_command_kinds_in_order() -> None:
    kinds = [c.kind for c in parse(SRC).commands]
    assert kinds == [
        "import",
        "import",
        "set_option",
        "open",
        "namespace",
        "def",
        "theorem",
        "end",
        "open",
        "lemma",
        "theorem",
        "attribute",
        "instance",
        "instance",
        "notation",
        "section",
        "example",
        "end",
        "#print",
    ]


def test_names_modifiers_attributes() -> None:
    sf = parse(SRC)
    by_kind = {c.name: c for c in sf.declarations if c.name}
    f = by_kind["Foo.Bar.f₁"]
    assert f.modifiers == ("private", "noncomputable")
    assert f.attributes == ("simp", "implemented_by baz")
    assert (f.line, f.column) == (10, 0)
    assert by_kind["Foo.Bar.t'"].modifiers == ("protected",)
    assert "top" in by_kind and "rooted" in by_kind and "myInst" in by_kind
    attr = next(c for c in sf.commands if c.kind == "attribute")
    assert attr.attributes == ("local instance",)
    notation = next(c for c in sf.commands if c.kind == "notation")
    assert notation.scope == "local"


def test_open_in_prefix_and_contexts() -> None:
    sf = parse(SRC)
    top = next(c for c in sf.declarations if c.name == "top")
    assert top.prefixes == ("open Real in",)
    assert top.open_context == ("BigOperators Real",)
    assert top.options_context == (("maxHeartbeats", "400000"),)
    assert top.namespace == ""
    t = next(c for c in sf.declarations if c.name == "Foo.Bar.t'")
    assert t.namespace == "Foo.Bar"


def test_tactic_open_and_set_option_stay_in_the_proof() -> None:
    sf = parse(SRC)
    t = next(c for c in sf.declarations if c.name == "Foo.Bar.t'")
    body = sf.token_texts(t.body)
    assert body[:4] == ["by", "open", "Nat", "in"]
    assert "set_option" in body


def test_binders_type_body_spans() -> None:
    sf = parse("theorem x (a b : ℕ) (h : a = b := rfl) : b = a := by\n  omega\n")
    d = sf.declarations[0]
    assert " ".join(sf.token_texts(d.binders)) == "( a b : ℕ ) ( h : a = b := rfl )"
    assert sf.token_texts(d.type) == ["b", "=", "a"]
    assert sf.token_texts(d.body) == ["by", "omega"]


def test_let_in_type_and_absolute_value_lines() -> None:
    src = "theorem x (m : ℤ) :\n  |m| ≥ 0 ∧\n  let k := 3\n  k = 3 := by sorry\n"
    d = parse(src).declarations[0]
    sf = parse(src)
    assert sf.token_texts(d.body) == ["by", "sorry"]
    assert sf.token_texts(d.type)[:3] == ["|", "m", "|"]


def test_equation_compiler_alternatives_end_the_signature() -> None:
    sf = parse("def f : ℕ → ℕ\n  | 0 => 1\n  | n + 1 => f n\n")
    d = sf.declarations[0]
    assert sf.token_texts(d.type) == ["ℕ", "→", "ℕ"]
    assert sf.token_texts(d.body)[:3] == ["|", "0", "=>"]


def test_indented_theorem_after_a_tactic_block_is_a_new_declaration() -> None:
    src = "theorem a : True := by\n  trivial\n\n  theorem b : True := by\n    trivial\n"
    assert theorem_names(src) == ["a", "b"]


def test_command_keywords_split_even_inside_open_brackets() -> None:
    sf = parse("def junk : ℕ := (1 +\naxiom cheat : False\ntheorem t : True := trivial\n")
    assert [c.kind for c in sf.commands] == ["def", "axiom", "theorem"]


def test_theorem_names_for_print_axioms() -> None:
    assert theorem_names(SRC) == ["Foo.Bar.f₁", "Foo.Bar.t'", "top", "rooted", "myInst"]


def test_mutual_end_does_not_close_the_namespace() -> None:
    src = "namespace N\nmutual\ndef a : ℕ := 0\ndef b : ℕ := 1\nend\ntheorem c : True := trivial\nend N\n"
    assert theorem_names(src) == ["N.a", "N.b", "N.c"]


def test_imports_and_header() -> None:
    sf = parse(SRC)
    assert sf.imports == ["Mathlib", "Aesop"]
    assert [c.kind for c in sf.header] == ["import", "import", "set_option", "open", "namespace"]


def test_mathlib_command_words_end_the_previous_declaration() -> None:
    src = (
        "lemma h : 1 = 1 := rfl\n"
        'notation3 "ten" => 10\n'
        "lemma h2 : 1 = 1 := rfl\n"
        '  local notation3 "x" => 1\n'
        "lemma h3 : 1 = 1 := rfl\n"
        "variable? [Nonempty ℕ]\n"
        "register_simp_attr my_simps\n"
        "recall Nat.add_comm\n"
        "theorem t : True := by\n"
        "  trivial\n"
    )
    kinds = [c.kind for c in parse(src).commands]
    assert kinds == [
        "lemma",
        "notation3",
        "lemma",
        "notation3",
        "lemma",
        "variable?",
        "register_simp_attr",
        "recall",
        "theorem",
    ]


def test_column0_word_may_start_an_unknown_command() -> None:
    src = (
        "lemma h : 1 = 1 := by\n"
        "  rfl\n"
        'fancy_notation "ten" => 10\n'
        "lemma col0 (n : ℕ) : n ≤ n + 1 := by\n"
        "simp\n"
        "omega\n"
        "lemma term0 (n : ℕ) : n ≤ n + 1 :=\n"
        "le_of_lt (Nat.lt_succ_self n)\n"
        "lemma field (n : ℕ) : n = n := by\n"
        "  have key : n = n := rfl\n"
        "  exact\n"
        "key\n"
    )
    sf = parse(src)
    assert [c.kind for c in sf.commands] == ["lemma", "unknown_command", "lemma", "lemma", "lemma"]
    unknown = sf.commands[1]
    assert (unknown.line, unknown.column) == (3, 0)
    assert sf.source_of(sf.commands[0]).endswith("rfl")
    # known tactics, a term after `:=` and an argument after `exact` continue their declaration
    assert sf.source_of(sf.commands[2]).endswith("omega")
    assert sf.source_of(sf.commands[4]).endswith("key")


def test_column0_words_in_a_statement_are_not_commands() -> None:
    src = "theorem t\n    (p : ℕ → Prop)\n    (hp : ∀ n,\np n) :\np 0 := by\n  sorry\n"
    sf = parse(src)
    assert [c.kind for c in sf.commands] == ["theorem"]
    assert sf.token_texts(sf.commands[0].body) == ["by", "sorry"]
