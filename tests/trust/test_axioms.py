"""`#print axioms` parsing and the axiom classification used by the axioms tier."""

from __future__ import annotations

from lean_server.policy import Policy, resolve_policy
from lean_server.trust import classify_axioms, parse_axioms_message, stub_axioms
from lean_server.verdict import Verdict

STANDARD = ["propext", "Classical.choice", "Quot.sound"]


def test_parse_depends_on() -> None:
    assert parse_axioms_message("'foo' depends on axioms: [propext, Classical.choice, Quot.sound]") == (
        "foo",
        STANDARD,
    )


def test_parse_no_axioms_and_primes_in_names() -> None:
    assert parse_axioms_message("'h'' does not depend on any axioms") == ("h'", [])


def test_parse_guillemets_dots_and_wrapped_lists() -> None:
    text = "'Foo.«bar baz»' depends on axioms: [«weird, name»,\n  Foo.bar._native.native_decide.ax_1_2,\n sorryAx]"
    assert parse_axioms_message(text) == (
        "Foo.«bar baz»",
        ["«weird, name»", "Foo.bar._native.native_decide.ax_1_2", "sorryAx"],
    )


def test_parse_rejects_other_messages() -> None:
    assert parse_axioms_message("unknown constant 'foo'") is None
    assert parse_axioms_message("declaration uses `sorry`") is None


def test_standard_axioms_pass() -> None:
    tier = classify_axioms({"t": STANDARD, "u": []}, Policy())
    assert tier.ok and tier.verdict is Verdict.PASS and tier.tier == "axioms"


def test_sorry_ax_is_sorry_unless_sketch() -> None:
    tier = classify_axioms({"t": [*STANDARD, "sorryAx"]}, Policy())
    assert tier.verdict is Verdict.SORRY and not tier.ok
    assert tier.details["rejected"] == {"t": ["sorryAx"]}
    assert classify_axioms({"t": ["sorryAx"]}, resolve_policy("sketch")).ok


def test_native_axioms_are_cheats_unless_allowed() -> None:
    for ax in ("Lean.ofReduceBool", "Lean.ofReduceNat", "Lean.trustCompiler", "t._native.native_decide.ax_1"):
        tier = classify_axioms({"t": [ax]}, Policy())
        assert tier.verdict is Verdict.CHEAT, ax
        assert any("native evaluation" in r for r in tier.reasons)
        assert classify_axioms({"t": [ax]}, resolve_policy("lenient")).ok, ax


def test_other_axioms_are_cheats_and_outrank_sorry() -> None:
    tier = classify_axioms({"t": ["sorryAx"], "u": ["cheat"]}, Policy())
    assert tier.verdict is Verdict.CHEAT
    assert tier.details["rejected"] == {"t": ["sorryAx"], "u": ["cheat"]}


def test_extra_allowed_and_policy_override() -> None:
    assert classify_axioms({"t": ["g_crit"]}, Policy(), extra_allowed=["g_crit"]).ok
    custom = resolve_policy("strict", {"allowed_axioms": [*STANDARD, "my_ax"]})
    assert classify_axioms({"t": ["my_ax"]}, custom).ok


def test_stub_axioms() -> None:
    stub = "import Mathlib\nnamespace N\naxiom g_crit : True\nend N\ntheorem t : True := by sorry\n"
    assert stub_axioms(stub) == ["N.g_crit"]
