"""Every verdict kind end to end through LeanService on the fake REPL."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lean_server.checker import Snippet
from lean_server.service import LeanService
from lean_server.verdict import Verdict
from sorryless.config import Settings
from tests.lean_server.core_support import check_all, check_code, tuned, write_rules


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("theorem p : 1 + 1 = 2 := by norm_num\n", Verdict.PASS),
        ("theorem s : 1 + 1 = 2 := by\n  sorry\n", Verdict.SORRY),
        ("theorem e : 1 + 1 = 3 := by\n  FAKE:error=unsolved goals ⊢ False\n", Verdict.LEAN_ERROR),
        ("axiom cheat : False\ntheorem c : 1 = 2 := cheat.elim\n", Verdict.CHEAT),
        ("theorem n : 2 ^ 10 = 1024 := by native_decide\n", Verdict.CHEAT),
        ("theorem t : True := by\n  FAKE:hang\n", Verdict.TIMEOUT),
        ("theorem o : True := by\n  FAKE:oom\n", Verdict.OOM),
        ("theorem i : True := by\n  FAKE:garbage\n", Verdict.INFRA_ERROR),
    ],
)
async def test_every_verdict_kind(settings: Settings, code: str, expected: Verdict) -> None:
    service = LeanService(tuned(settings, lean_memory_limit_mb=300), trust_hooks=False)
    try:
        cert = await check_code(service, code, timeout_s=5 if "oom" in code else 0.5)
    finally:
        await service.aclose()
    assert cert.verdict is expected, cert.reasons
    assert cert.proof_hash and cert.environment.backend == "repl"
    assert cert.tiers[0].tier == "compile"
    if expected is Verdict.PASS:
        assert [t.tier for t in cert.tiers] == ["compile", "axioms"]
        assert cert.feedback is None and cert.reasons == []
    else:
        assert cert.reasons and cert.feedback is not None and expected.value in cert.feedback


async def test_sorry_quote_single_from_the_repl(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_REPL_SORRY_QUOTE", "single")
    service = LeanService(tuned(settings), trust_hooks=False)
    try:
        cert = await check_code(service, "theorem s : 1 = 1 := by sorry\n")
    finally:
        await service.aclose()
    assert cert.verdict is Verdict.SORRY
    assert any(m.data == "declaration uses 'sorry'" for m in cert.messages)
    assert cert.goal_at_first_error is not None and "⊢" in cert.goal_at_first_error


@pytest.mark.parametrize("warning", ["declaration uses 'sorry'", "declaration uses `sorry`"])
async def test_sorry_warning_alone_is_enough(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, warning: str
) -> None:
    """A term-mode sorry the REPL leaves out of `sorries`, with a clean axiom report: only the
    warning says it, in either quote style."""
    rules = [
        {
            "match": "hidden_gap",
            "messages": [
                {
                    "severity": "warning",
                    "pos": {"line": 1, "column": 8},
                    "endPos": {"line": 1, "column": 9},
                    "data": warning,
                },
                # the REPL's answer to the appended `#print axioms g` (line 3: after the code's 2 lines)
                {
                    "severity": "info",
                    "pos": {"line": 3, "column": 0},
                    "endPos": None,
                    "data": "'g' depends on axioms: [propext]",
                },
            ],
        }
    ]
    monkeypatch.setenv("FAKE_REPL_RULES", str(write_rules(tmp_path / "rules.json", rules)))
    service = LeanService(tuned(settings), trust_hooks=False)
    try:
        cert = await check_code(service, "theorem g : True := hidden_gap\n")
    finally:
        await service.aclose()
    assert cert.sorries == []
    assert cert.verdict is Verdict.SORRY, cert.reasons
    assert cert.tier("compile") is not None and cert.tier("compile").verdict is Verdict.SORRY  # type: ignore[union-attr]


async def test_swallowed_axiom_report_is_not_a_pass(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = [{"match": "SWALLOW", "messages": []}]
    monkeypatch.setenv("FAKE_REPL_RULES", str(write_rules(tmp_path / "rules.json", rules)))
    service = LeanService(tuned(settings), trust_hooks=False)
    try:
        cert = await check_code(service, "theorem w : True := trivial -- SWALLOW\n")
    finally:
        await service.aclose()
    assert cert.verdict is Verdict.CHEAT
    assert any("no axiom report for 'w'" in r for r in cert.reasons)


async def test_per_computation_native_axioms_under_strict_and_lenient(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = [{"match": "decide", "axioms": ["propext", "n._native.native_decide.ax_1_1"]}]
    monkeypatch.setenv("FAKE_REPL_RULES", str(write_rules(tmp_path / "rules.json", rules)))
    service = LeanService(tuned(settings), trust_hooks=False)
    code = "theorem n : 2 ^ 10 = 1024 := by decide +native\n"
    try:
        certs = await check_all(
            service, [Snippet(id="strict", code=code), Snippet(id="lenient", code=code, policy="lenient")]
        )
    finally:
        await service.aclose()
    assert certs["strict"].verdict is Verdict.CHEAT
    assert any("native" in r for r in certs["strict"].reasons)
    assert certs["lenient"].verdict is Verdict.PASS
    assert sorted(certs["strict"].axioms["n"]) == ["n._native.native_decide.ax_1_1", "propext"]


async def test_trust_tiers_run_when_enabled(settings: Settings) -> None:
    stub = "theorem target (n : Nat) : n + 0 = n := by\n  sorry\n"
    service = LeanService(tuned(settings), trust_hooks=True)
    try:
        certs = await check_all(
            service,
            [
                Snippet(id="good", code="theorem target (n : Nat) : n + 0 = n := by\n  simp\n", stub=stub),
                Snippet(id="changed", code="theorem target (n : Nat) : n = n := by\n  rfl\n", stub=stub),
            ],
        )
    finally:
        await service.aclose()
    good, changed = certs["good"], certs["changed"]
    assert good.verdict is Verdict.PASS, good.reasons
    assert [t.tier for t in good.tiers] == ["compile", "axioms", "statement", "legality"]
    assert good.statement_hash is not None
    assert changed.verdict is Verdict.CHEAT
    assert changed.tier("statement") is not None and not changed.tier("statement").ok  # type: ignore[union-attr]


async def test_a_broken_import_header_is_a_lean_error(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = [
        {
            "match": "import Nonexistent",
            "messages": [
                {
                    "severity": "error",
                    "pos": {"line": 1, "column": 0},
                    "endPos": None,
                    "data": "unknown module prefix 'Nonexistent'",
                }
            ],
        }
    ]
    monkeypatch.setenv("FAKE_REPL_RULES", str(write_rules(tmp_path / "rules.json", rules)))
    service = LeanService(tuned(settings), trust_hooks=False)
    try:
        bad = await check_code(service, "import Nonexistent\ntheorem t : True := trivial\n")
        good = await check_code(service, "import Mathlib\ntheorem t : True := trivial\n")
    finally:
        await service.aclose()
    assert bad.verdict is Verdict.LEAN_ERROR
    assert any("unknown module prefix" in m.data for m in bad.messages)
    assert good.verdict is Verdict.PASS


async def test_an_empty_repl_answer_is_an_infra_error_at_once(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = [{"match": "NOTHING_TO_SAY", "action": "empty"}]
    monkeypatch.setenv("FAKE_REPL_RULES", str(write_rules(tmp_path / "rules.json", rules)))
    service = LeanService(tuned(settings), trust_hooks=False)
    try:
        cert = await check_code(service, "theorem q : True := trivial -- NOTHING_TO_SAY\n", timeout_s=20)
    finally:
        await service.aclose()
    assert cert.verdict is Verdict.INFRA_ERROR
    assert any("empty response" in r for r in cert.reasons)
    assert cert.timings["compile"] < 5


async def test_a_repl_that_cannot_start_is_an_infra_error(settings: Settings) -> None:
    service = LeanService(
        tuned(settings, lean_repl_cmd="/nonexistent/bin/repl", lean_warm_spares=1), trust_hooks=False
    )
    try:
        cert = await check_code(service, "theorem t : True := trivial\n")
        await asyncio.sleep(0.2)
        stats = service.stats()
    finally:
        await service.aclose()
    assert cert.verdict is Verdict.INFRA_ERROR
    assert any("cannot start the REPL" in r for r in cert.reasons)
    assert not cert.cached
    assert stats.kills.get("import_failed", 0) <= 2  # no respawn loop
    assert all(p.state != "starting" for p in stats.processes)
