"""trust_tiers, audit and build_certificate."""

from __future__ import annotations

from lean_server.policy import Policy, resolve_policy
from lean_server.trust import audit, build_certificate, trust_tiers
from lean_server.verdict import CHECKER_VERSION, EnvironmentStamp, TierResult, Verdict, content_hash

STUB = "import Mathlib\n\nopen Real\n\ntheorem t (x : ℝ) (h : 0 < x) : 0 < x ^ 2 := by sorry\n"
GOOD = "import Mathlib\n\nopen Real\n\ntheorem t (x : ℝ) (h : 0 < x) : 0 < x ^ 2 := by\n  positivity\n"


def test_tiers_for_a_good_proof() -> None:
    tiers = trust_tiers(GOOD, STUB, Policy())
    assert [t.tier for t in tiers] == ["statement", "legality"]
    assert all(t.ok and t.verdict is Verdict.PASS for t in tiers)
    assert tiers[1].details["violations"] == []


def test_without_stub_only_legality_runs() -> None:
    tiers = trust_tiers(GOOD, None, Policy())
    assert [t.tier for t in tiers] == ["legality"]


def test_sorry_only_is_sorry_not_cheat() -> None:
    tiers = trust_tiers(GOOD.replace("positivity", "sorry"), STUB, Policy())
    legality = tiers[1]
    assert legality.verdict is Verdict.SORRY
    assert legality.details["violations"][0]["rule"] == "sorry"
    assert legality.details["violations"][0]["line"] == 6
    assert legality.details["violations"][0]["column"] == 2


def test_sorry_plus_cheat_is_cheat() -> None:
    code = GOOD.replace("positivity", "sorry").replace("theorem t", "axiom a : False\ntheorem t")
    tiers = trust_tiers(code, STUB, Policy())
    assert tiers[1].verdict is Verdict.CHEAT
    assert {v["rule"] for v in tiers[1].details["violations"]} == {"sorry", "new_axiom"}


def test_statement_mismatch_is_cheat() -> None:
    tiers = trust_tiers(GOOD.replace("0 < x ^ 2", "0 ≤ x ^ 2"), STUB, Policy())
    assert tiers[0].verdict is Verdict.CHEAT
    v = tiers[0].details["violations"][0]
    assert v["rule"] == "statement_changed" and v["line"] == 5


def test_stub_without_target_is_infra_error() -> None:
    tiers = trust_tiers(GOOD, "import Mathlib\n", Policy())
    assert tiers[0].verdict is Verdict.INFRA_ERROR


def test_policy_overrides() -> None:
    code = GOOD.replace("positivity", "exact?")
    assert not audit(STUB, code, Policy()).ok
    assert audit(STUB, code, resolve_policy("strict", {"allow_search_tactics": True})).ok
    assert audit(STUB, GOOD.replace("positivity", "sorry"), resolve_policy("sketch")).ok
    imports = GOOD.replace("import Mathlib", "import Mathlib\nimport Batteries")
    assert not audit(STUB, imports, Policy()).ok
    assert audit(STUB, imports, resolve_policy("strict", {"allowed_imports": ["Mathlib", "Batteries"]})).ok


def test_audit_report() -> None:
    report = audit(STUB, GOOD.replace("theorem t", "theorem t2"), Policy())
    assert not report.ok and report.verdict is Verdict.CHEAT
    assert report.target == "t"
    assert [v.rule for v in report.violations] == ["target_missing"]


def test_build_certificate_combines_tiers() -> None:
    env = EnvironmentStamp(backend="repl", lean_version="4.35.0")
    compile_tier = TierResult(tier="compile", ok=True, verdict=Verdict.PASS)
    axioms_tier = TierResult(tier="axioms", ok=True, verdict=Verdict.PASS)
    cert = build_certificate(
        snippet_id="s1",
        code=GOOD,
        stub=STUB,
        policy=Policy(),
        environment=env,
        tiers=[axioms_tier, compile_tier],
        axioms={"t": ["propext"]},
    )
    assert cert.verdict is Verdict.PASS and cert.passed
    assert [t.tier for t in cert.tiers] == ["compile", "axioms", "statement", "legality"]
    assert cert.statement_hash == content_hash(STUB) and cert.proof_hash == content_hash(GOOD)
    assert cert.checker_version == CHECKER_VERSION and cert.environment == env
    bad = build_certificate(
        snippet_id="s2",
        code=GOOD.replace("positivity", "native_decide"),
        stub=STUB,
        policy=Policy(),
        environment=env,
        tiers=[TierResult(tier="compile", ok=False, verdict=Verdict.LEAN_ERROR, reasons=["boom"])],
    )
    assert bad.verdict is Verdict.CHEAT  # CHEAT outranks LEAN_ERROR
    assert [v.rule for v in bad.violations] == ["native_evaluation"]
    assert "boom" in bad.reasons


def test_headerless_stub_and_headerless_candidate() -> None:
    bare = "theorem t (x : ℝ) (h : 0 < x) : 0 < x ^ 2 := by sorry"
    assert audit(bare, GOOD, Policy()).ok
    assert audit("theorem t (x : ℝ) (h : 0 < x) : 0 < x ^ 2 :=", GOOD, Policy()).ok
    body_only = "theorem t (x : ℝ) (h : 0 < x) : 0 < x ^ 2 := by\n  positivity\n"
    assert audit(STUB, body_only, Policy()).ok
    changed = audit("open Nat\n" + bare, GOOD, Policy())
    assert [v.rule for v in changed.violations] == ["statement_context_changed"]
