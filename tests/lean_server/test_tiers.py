"""Compile + axiom tiers on synthetic backend outcomes (REPL-shaped responses)."""

from __future__ import annotations

from typing import Any

import pytest

from lean_server.backend import CompileOutcome
from lean_server.policy import resolve_policy
from lean_server.protocol import ReplStatus
from lean_server.source import theorem_names
from lean_server.tiers import evaluate, prepare_axiom_audit
from lean_server.verdict import Verdict, combine

CODE = "theorem a : True := by\n  trivial\n\ntheorem b : 1 = 1 := rfl\n"  # 5 lines (last empty)


def _axioms_msg(line: int, name: str, axioms: list[str] | None) -> dict[str, Any]:
    data = (
        f"'{name}' does not depend on any axioms"
        if not axioms
        else f"'{name}' depends on axioms: [{', '.join(axioms)}]"
    )
    return {
        "severity": "info",
        "pos": {"line": line, "column": 0},
        "endPos": {"line": line, "column": 6},
        "data": data,
    }


def _outcome(messages: list[dict[str, Any]], sorries: list[dict[str, Any]] | None = None) -> CompileOutcome:
    response: dict[str, Any] = {"messages": messages, "env": 1}
    if sorries:
        response["sorries"] = sorries
    return CompileOutcome(ReplStatus.OK, "repl", response=response, timings={"compile": 0.01})


def _verdict(
    outcome: CompileOutcome, policy: str = "strict", code: str = CODE
) -> tuple[Verdict, list[str], Any]:
    report = evaluate(
        outcome, code=code, names=prepare_axiom_audit(code).names, policy=resolve_policy(policy)
    )
    verdict, reasons = combine(report.tiers)
    return verdict, reasons, report


def test_names_come_from_the_source_analyzer() -> None:
    assert theorem_names(CODE) == ["a", "b"]
    assert theorem_names("namespace Foo\ntheorem bar : True := trivial\nend Foo") == ["Foo.bar"]


def test_pass_and_axiom_messages_are_not_user_facing() -> None:
    verdict, reasons, report = _verdict(
        _outcome([_axioms_msg(6, "a", ["propext"]), _axioms_msg(7, "b", None)])
    )
    assert verdict is Verdict.PASS, reasons
    assert report.messages == []
    assert report.axioms == {"a": ["propext"], "b": []}
    assert [t.tier for t in report.tiers] == ["compile", "axioms"]


@pytest.mark.parametrize("warning", ["declaration uses 'sorry'", "declaration uses `sorry`"])
def test_sorry_warning_in_both_quote_styles_without_sorries_list(warning: str) -> None:
    msg = {"severity": "warning", "pos": {"line": 1, "column": 8}, "endPos": None, "data": warning}
    verdict, reasons, report = _verdict(_outcome([msg, _axioms_msg(6, "a", None), _axioms_msg(7, "b", None)]))
    assert verdict is Verdict.SORRY
    assert report.tiers[0].verdict is Verdict.SORRY
    assert any("sorry" in r for r in reasons)
    # the sketch policy accepts the same gap
    sketch, _, _ = _verdict(
        _outcome([msg, _axioms_msg(6, "a", None), _axioms_msg(7, "b", None)]), policy="sketch"
    )
    assert sketch is Verdict.PASS


def test_sorry_ax_alone_is_sorry() -> None:
    verdict, _, report = _verdict(_outcome([_axioms_msg(6, "a", ["sorryAx"]), _axioms_msg(7, "b", None)]))
    assert verdict is Verdict.SORRY
    assert report.tiers[1].verdict is Verdict.SORRY


def test_missing_axiom_report_is_a_cheat_not_a_pass() -> None:
    verdict, reasons, _ = _verdict(_outcome([_axioms_msg(6, "a", None)]))
    assert verdict is Verdict.CHEAT
    assert any("no axiom report for 'b'" in r for r in reasons)


def test_missing_report_after_a_compile_error_is_a_lean_error() -> None:
    err = {
        "severity": "error",
        "pos": {"line": 2, "column": 2},
        "endPos": None,
        "data": "unsolved goals\n⊢ True",
    }
    verdict, _, report = _verdict(_outcome([err]))
    assert verdict is Verdict.LEAN_ERROR
    assert report.tiers[1].verdict is Verdict.LEAN_ERROR
    assert report.messages[0].category == "unsolved_goals"


@pytest.mark.parametrize(
    ("axiom", "expected"),
    [
        ("Lean.ofReduceBool", Verdict.CHEAT),
        ("Lean.trustCompiler", Verdict.CHEAT),
        ("a._native.native_decide.ax_1_1", Verdict.CHEAT),
        ("cheat", Verdict.CHEAT),
    ],
)
def test_native_and_foreign_axioms_are_cheats_under_strict(axiom: str, expected: Verdict) -> None:
    outcome = _outcome([_axioms_msg(6, "a", ["propext", axiom]), _axioms_msg(7, "b", None)])
    verdict, _, _ = _verdict(outcome)
    assert verdict is expected
    lenient, _, _ = _verdict(outcome, policy="lenient")
    assert lenient is (Verdict.PASS if "native" in axiom or axiom.startswith("Lean.") else Verdict.CHEAT)


def test_unknown_constant_on_an_appended_line_is_reported_with_its_reason() -> None:
    unknown = {
        "severity": "error",
        "pos": {"line": 7, "column": 14},
        "endPos": None,
        "data": "unknown constant 'b'",
    }
    verdict, reasons, report = _verdict(_outcome([_axioms_msg(6, "a", None), unknown]))
    assert verdict is Verdict.CHEAT
    assert any("unknown constant 'b'" in r for r in reasons)
    assert report.messages == []  # the appended command's error is not the user's


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (ReplStatus.TIMEOUT, Verdict.TIMEOUT),
        (ReplStatus.OOM, Verdict.OOM),
        (ReplStatus.CRASH, Verdict.INFRA_ERROR),
        (ReplStatus.GARBAGE, Verdict.INFRA_ERROR),
    ],
)
def test_failed_round_trips_map_to_verdicts(status: ReplStatus, expected: Verdict) -> None:
    report = evaluate(
        CompileOutcome(status, "repl", detail="boom"), code=CODE, names=["a"], policy=resolve_policy("strict")
    )
    assert [t.tier for t in report.tiers] == ["compile"]
    assert combine(report.tiers) == (expected, ["boom"])
