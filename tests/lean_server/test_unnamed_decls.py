"""The axioms tier audits unnamed declarations (``example``, anonymous ``instance``) too."""

from __future__ import annotations

from typing import Any

from lean_server.backend import CompileOutcome
from lean_server.protocol import ReplStatus
from lean_server.service import LeanService
from lean_server.tiers import prepare_axiom_audit
from lean_server.verdict import Verdict
from sorryless.config import Settings
from tests.lean_server.core_support import check_code, tuned


def test_examples_and_anonymous_instances_get_names_on_the_same_lines() -> None:
    code = (
        "namespace N\n"
        "example : 2 ^ 10 = 1024 := by native_decide\n"
        "instance (priority := low) : Inhabited Nat := ⟨0⟩\n"
        "theorem named : True := trivial\n"
        "noncomputable example : Nat := 0\n"
        "end N\n"
    )
    audit = prepare_axiom_audit(code)
    assert audit.rewritten
    assert audit.names == [
        "N._sorryless_example_l2",
        "N._sorryless_instance_l3",
        "N.named",
        "N._sorryless_example_l5",
    ]
    sent = audit.code.split("\n")
    assert len(sent) == len(code.split("\n"))
    assert sent[1] == "noncomputable def _sorryless_example_l2 : 2 ^ 10 = 1024 := by native_decide"
    assert sent[2] == "instance (priority := low) _sorryless_instance_l3 : Inhabited Nat := ⟨0⟩"
    assert sent[3] == "theorem named : True := trivial"
    assert sent[4] == "noncomputable def _sorryless_example_l5 : Nat := 0"


def test_code_with_only_named_declarations_is_sent_unchanged() -> None:
    code = "theorem a : True := trivial\ninstance named : Inhabited Nat := ⟨0⟩\n"
    audit = prepare_axiom_audit(code)
    assert not audit.rewritten and audit.code == code
    assert audit.names == ["a", "named"]


def _pos(line: int, column: int) -> dict[str, int]:
    return {"line": line, "column": column}


def test_restore_maps_columns_of_rewritten_lines_back() -> None:
    code = "example : True := trivial\ninstance : Inhabited Nat := ⟨0⟩\n"
    audit = prepare_axiom_audit(code)
    sent = audit.code.split("\n")
    user = code.split("\n")
    after_true = sent[0].index("trivial")
    after_nat = sent[1].index("⟨0⟩")
    messages: list[dict[str, Any]] = [
        {"severity": "error", "pos": _pos(1, after_true), "endPos": _pos(1, after_true + 7), "data": "x"},
        {"severity": "error", "pos": _pos(1, 3), "endPos": None, "data": "inside the generated text"},
        {"severity": "error", "pos": _pos(2, after_nat), "endPos": _pos(2, 0), "data": "y"},
        {"severity": "info", "pos": _pos(4, 0), "endPos": _pos(4, 6), "data": "appended"},
    ]
    outcome = CompileOutcome(ReplStatus.OK, "repl", response={"messages": messages, "env": 1})
    restored = audit.restore(outcome).response
    assert restored is not None
    got = restored["messages"]
    assert got[0]["pos"] == _pos(1, user[0].index("trivial"))
    assert got[0]["endPos"] == _pos(1, user[0].index("trivial") + 7)
    assert got[1]["pos"] == _pos(1, 0)  # inside the generated name: the keyword's place
    assert got[2]["pos"] == _pos(2, user[1].index("⟨0⟩")) and got[2]["endPos"] == _pos(2, 0)
    assert got[3]["pos"] == _pos(4, 0)
    assert outcome.response is not None and outcome.response["messages"][0]["pos"]["column"] == after_true


async def test_native_decide_in_an_example_is_not_a_pass_under_strict(settings: Settings) -> None:
    service = LeanService(tuned(settings), trust_hooks=False)
    try:
        cert = await check_code(service, "example : 2 ^ 10 = 1024 := by native_decide\n")
    finally:
        await service.aclose()
    assert cert.verdict is Verdict.CHEAT, cert.reasons
    assert cert.axioms.get("_sorryless_example_l1") is not None
    assert "Lean.ofReduceBool" in cert.axioms["_sorryless_example_l1"]


async def test_an_anonymous_instance_built_on_a_new_axiom_is_a_cheat(settings: Settings) -> None:
    code = "axiom magic : Nat\ninstance : Inhabited Nat := ⟨magic⟩\n"
    service = LeanService(tuned(settings), trust_hooks=False)
    try:
        cert = await check_code(service, code)
    finally:
        await service.aclose()
    assert cert.verdict is Verdict.CHEAT, cert.reasons
    assert "magic" in cert.axioms.get("_sorryless_instance_l2", [])


async def test_an_error_in_an_example_is_reported_at_the_users_column(settings: Settings) -> None:
    code = "example : True := trivial -- FAKE:error=boom\n"
    service = LeanService(tuned(settings), trust_hooks=False)
    try:
        cert = await check_code(service, code)
    finally:
        await service.aclose()
    assert cert.verdict is Verdict.LEAN_ERROR
    error = next(m for m in cert.messages if m.severity == "error")
    assert error.pos is not None and (error.pos.line, error.pos.column) == (1, code.index("FAKE"))
