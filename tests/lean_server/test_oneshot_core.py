"""The one-shot backend on the real Lean 4.35.0 kernel (prelude files only)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from lean_server.backend import CompileUnit
from lean_server.header import split_header
from lean_server.oneshot import OneShotBackend
from lean_server.protocol import ReplStatus
from lean_server.service import LeanService
from lean_server.verdict import Verdict
from sorryless.config import Settings
from tests.lean_server.core_support import check_code

pytestmark = pytest.mark.lean_core

PRELUDE = """prelude
universe u
inductive MyEq {α : Sort u} (a : α) : α → Prop where
  | refl : MyEq a a
inductive MyFalse : Prop
inductive N where
  | z : N
  | s : N → N
noncomputable def N.add (a b : N) : N := N.rec a (fun _ r => N.s r) b
noncomputable def N.mul (a b : N) : N := N.rec N.z (fun _ r => N.add r a) b
noncomputable def N.pow (a b : N) : N := N.rec (N.s N.z) (fun _ r => N.mul r a) b
"""
GOOD = PRELUDE + "theorem two_add : MyEq (N.add (N.s N.z) (N.s N.z)) (N.s (N.s N.z)) := MyEq.refl\n"
WRONG = PRELUDE + "theorem wrong : MyEq (N.add N.z N.z) (N.s N.z) := MyEq.refl\n"
CHEAT = PRELUDE + "axiom cheat : MyFalse\ntheorem bad : MyFalse := cheat\n"


def _slow(n: int = 16) -> str:
    numeral = "N.z"
    for _ in range(n):
        numeral = f"(N.s {numeral})"
    return (
        PRELUDE
        + "set_option maxRecDepth 100000000\nset_option maxHeartbeats 0\n"
        + f"theorem slow : MyEq (N.pow (N.s (N.s N.z)) {numeral}) (N.pow (N.s (N.s N.z)) (N.s {numeral})) := MyEq.refl\n"
    )


@pytest.fixture
def core_settings(settings: Settings, lean_core_bin: Path) -> Settings:
    return settings.model_copy(
        update={"lean_repl_cmd": None, "lean_bin": str(lean_core_bin), "lean_recheck_passing": False}
    )


async def test_pass_with_real_axiom_report(core_settings: Settings) -> None:
    service = LeanService(core_settings, trust_hooks=False)
    try:
        cert = await check_code(service, GOOD)
    finally:
        await service.aclose()
    assert service.primary.name == "oneshot"
    assert cert.verdict is Verdict.PASS, cert.reasons
    assert cert.axioms["two_add"] == [] and cert.axioms["N.pow"] == []
    assert set(cert.axioms) >= {"MyEq", "N", "N.add", "N.mul", "N.pow", "two_add"}
    assert cert.messages == []  # the appended #print axioms answers are not user-facing
    assert cert.environment.backend == "oneshot" and cert.environment.lean_version == "4.35.0"


async def test_kernel_type_mismatch_is_a_lean_error_with_its_position(core_settings: Settings) -> None:
    service = LeanService(core_settings, trust_hooks=False)
    try:
        cert = await check_code(service, WRONG)
    finally:
        await service.aclose()
    assert cert.verdict is Verdict.LEAN_ERROR
    error = next(m for m in cert.messages if m.severity == "error")
    assert "Type mismatch" in error.data
    assert error.category == "type_mismatch"
    assert error.kind  # `lean --json`'s kind tag is kept
    last_line = WRONG.count("\n")
    assert error.pos is not None and error.pos.line == last_line and error.pos.column > 0


async def test_declared_axiom_is_a_cheat_from_real_print_axioms(core_settings: Settings) -> None:
    service = LeanService(core_settings, trust_hooks=False)
    try:
        cert = await check_code(service, CHEAT)
    finally:
        await service.aclose()
    assert cert.verdict is Verdict.CHEAT, cert.reasons
    assert cert.axioms["bad"] == ["cheat"]
    axioms_tier = cert.tier("axioms")
    assert axioms_tier is not None and axioms_tier.verdict is Verdict.CHEAT
    assert cert.tier("compile") is not None and cert.tier("compile").ok  # type: ignore[union-attr]


async def test_slow_elaboration_times_out(core_settings: Settings) -> None:
    backend = OneShotBackend(core_settings)
    code = _slow()
    t0 = time.monotonic()
    outcome = await backend.compile(CompileUnit(code, split_header(code), "", timeout_s=1.0))
    assert time.monotonic() - t0 < 5.0
    assert outcome.status is ReplStatus.TIMEOUT
    assert outcome.detail == "Lean REPL command timed out in 1 seconds"
    service = LeanService(core_settings, trust_hooks=False)
    try:
        cert = await check_code(service, code, timeout_s=1.0)
    finally:
        await service.aclose()
    assert cert.verdict is Verdict.TIMEOUT


async def test_recheck_catches_what_the_repl_let_through(settings: Settings, lean_core_bin: Path) -> None:
    """The fake REPL accepts anything; the one-shot re-check with the real kernel does not."""
    with_recheck = settings.model_copy(update={"lean_bin": str(lean_core_bin), "lean_recheck_passing": True})
    service = LeanService(with_recheck, trust_hooks=False)
    try:
        good = await check_code(service, GOOD)
        wrong = await check_code(service, WRONG)
    finally:
        await service.aclose()
    assert service.primary.name == "repl"
    assert good.verdict is Verdict.PASS
    assert [t.tier for t in good.tiers] == ["compile", "axioms", "recheck"]
    assert "recheck" in good.timings
    assert wrong.verdict is Verdict.LEAN_ERROR
    recheck = wrong.tier("recheck")
    assert recheck is not None and not recheck.ok
    assert any("Type mismatch" in r for r in recheck.reasons)
