"""The trust checker's tiers, the axiom classification, and certificates.

``trust_tiers`` runs the pure-Python tiers: ``statement`` (when a stub is given: see
:mod:`lean_server.statement`) and ``legality`` (see :mod:`lean_server.legality`).
Verdicts: a statement mismatch is ``CHEAT``; legality violations are ``CHEAT``, except when every
violation is the ``sorry`` rule: then the verdict is ``SORRY`` (an unfinished proof, not an attack).
The violations are listed in ``TierResult.details["violations"]`` as dicts.

``classify_axioms`` is the ``axioms`` tier lean_server runs on the ``#print axioms`` output:
policy-allowed axioms pass; ``sorryAx`` gives ``SORRY`` (unless the policy allows sorry);
``Lean.ofReduceBool``, ``Lean.ofReduceNat``, ``Lean.trustCompiler`` and any ``…._native.…`` axiom
are ``CHEAT`` with reason "native evaluation" unless ``policy.allow_native``; any other axiom is
``CHEAT``. Axioms the stub itself declares may be passed as ``extra_allowed``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, Field

from lean_server.legality import check_legality
from lean_server.policy import Policy
from lean_server.source import SourceFile, parse
from lean_server.statement import find_target, match_statement
from lean_server.verdict import (
    CHECKER_VERSION,
    Certificate,
    EnvironmentStamp,
    Message,
    Sorry,
    TierName,
    TierResult,
    Verdict,
    Violation,
    combine,
    content_hash,
)

NATIVE_AXIOMS: frozenset[str] = frozenset({"Lean.ofReduceBool", "Lean.ofReduceNat", "Lean.trustCompiler"})
SORRY_AXIOM = "sorryAx"
_DEPENDS = re.compile(r"^\s*'(?P<name>.*)' depends on axioms:\s*\[(?P<list>.*)\]\s*$", re.DOTALL)
_NO_AXIOMS = re.compile(r"^\s*'(?P<name>.*)' does not depend on any axioms\s*$", re.DOTALL)


class AuditReport(BaseModel):
    """The result of a source audit of one proof against its stub."""

    ok: bool
    verdict: Verdict
    target: str | None = Field(default=None, description="Full name of the stub's target theorem.")
    violations: list[Violation] = Field(default_factory=list)
    tiers: list[TierResult] = Field(default_factory=list)


@lru_cache(maxsize=1024)
def parse_cached(text: str) -> SourceFile:
    """:func:`lean_server.source.parse`, memoised (stubs are parsed once per batch)."""
    return parse(text)


def is_native_axiom(name: str) -> bool:
    return (
        name in NATIVE_AXIOMS
        or "._native." in name
        or name.endswith("._native")
        or name.startswith("_native.")
    )


def _dedupe(violations: Iterable[Violation]) -> list[Violation]:
    seen: set[tuple[str, int, int, str]] = set()
    out: list[Violation] = []
    for v in violations:
        key = (v.rule, v.line, v.column, v.message)
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


def _tier(name: TierName, violations: list[Violation], seconds: float, sorry_is_soft: bool) -> TierResult:
    if not violations:
        return TierResult(
            tier=name, ok=True, verdict=Verdict.PASS, seconds=seconds, details={"violations": []}
        )
    soft = sorry_is_soft and all(v.rule == "sorry" for v in violations)
    verdict = Verdict.SORRY if soft else Verdict.CHEAT
    reasons = [
        f"{v.rule}: {v.message}" + (f" (line {v.line}, column {v.column})" if v.line else "")
        for v in violations
    ]
    return TierResult(
        tier=name,
        ok=False,
        verdict=verdict,
        reasons=reasons,
        seconds=seconds,
        details={"violations": [v.model_dump() for v in violations]},
    )


def trust_tiers(
    code: str, stub: str | None, policy: Policy, *, target_name: str | None = None
) -> list[TierResult]:
    """The ``statement`` (only with a stub) and ``legality`` tiers for ``code``."""
    tiers: list[TierResult] = []
    t0 = time.perf_counter()
    candidate = parse_cached(code)
    stub_sf = parse_cached(stub) if stub is not None else None
    if stub_sf is not None:
        statement = _dedupe(match_statement(stub_sf, candidate, target_name))
        if any(v.rule == "stub_without_target" for v in statement):
            tiers.append(
                TierResult(
                    tier="statement",
                    ok=False,
                    verdict=Verdict.INFRA_ERROR,
                    reasons=["the stub has no sorry-ed target declaration to match"],
                    seconds=time.perf_counter() - t0,
                    details={"violations": [v.model_dump() for v in statement]},
                )
            )
        else:
            tiers.append(_tier("statement", statement, time.perf_counter() - t0, sorry_is_soft=False))
    t1 = time.perf_counter()
    legality = _dedupe(check_legality(candidate, stub_sf, policy))
    tiers.append(_tier("legality", legality, time.perf_counter() - t1, sorry_is_soft=True))
    return tiers


def tier_violations(tiers: Sequence[TierResult]) -> list[Violation]:
    """The violations recorded in the tiers' details, in tier order."""
    out: list[Violation] = []
    for t in tiers:
        out.extend(Violation.model_validate(v) for v in t.details.get("violations", []))
    return _dedupe(out)


def audit(
    stub: str | None, proof: str, policy: Policy | None = None, *, target_name: str | None = None
) -> AuditReport:
    """Statement match and legality of ``proof`` against ``stub`` (no Lean involved)."""
    pol = policy or Policy()
    tiers = trust_tiers(proof, stub, pol, target_name=target_name)
    verdict, _ = combine(tiers)
    target = None
    if stub is not None:
        decl = find_target(parse_cached(stub), target_name)
        target = decl.name if decl is not None else None
    return AuditReport(
        ok=verdict is Verdict.PASS,
        verdict=verdict,
        target=target,
        violations=tier_violations(tiers),
        tiers=tiers,
    )


def stub_axioms(stub: str) -> list[str]:
    """Full names of the axioms the stub itself declares (they are part of the problem)."""
    return [d.name for d in parse_cached(stub).declarations if d.kind == "axiom" and d.name]


def classify_axioms(
    axioms: dict[str, list[str]], policy: Policy, *, extra_allowed: Iterable[str] = ()
) -> TierResult:
    """The ``axioms`` tier from ``#print axioms`` results (declaration → axioms it depends on)."""
    allowed = set(policy.allowed_axioms) | set(extra_allowed)
    cheat: list[str] = []
    sorry: list[str] = []
    rejected: dict[str, list[str]] = {}
    for decl, names in axioms.items():
        for ax in names:
            if ax in allowed:
                continue
            if ax == SORRY_AXIOM:
                if policy.allow_sorry:
                    continue
                sorry.append(f"`{decl}` depends on `sorryAx` (a `sorry` gap)")
            elif is_native_axiom(ax):
                if policy.allow_native:
                    continue
                cheat.append(f"native evaluation: `{decl}` depends on `{ax}`")
            else:
                cheat.append(f"non-standard axiom: `{decl}` depends on `{ax}`")
            rejected.setdefault(decl, []).append(ax)
    details: dict[str, Any] = {"axioms": axioms, "rejected": rejected}
    if cheat:
        return TierResult(
            tier="axioms", ok=False, verdict=Verdict.CHEAT, reasons=cheat + sorry, details=details
        )
    if sorry:
        return TierResult(tier="axioms", ok=False, verdict=Verdict.SORRY, reasons=sorry, details=details)
    return TierResult(tier="axioms", ok=True, verdict=Verdict.PASS, details=details)


def _split_names(body: str) -> list[str]:
    names: list[str] = []
    current: list[str] = []
    in_guillemets = False
    for ch in body:
        if ch == "«":
            in_guillemets = True
        elif ch == "»":
            in_guillemets = False
        if ch == "," and not in_guillemets:
            names.append("".join(current))
            current = []
        else:
            current.append(ch)
    names.append("".join(current))
    return [" ".join(n.split()) if "«" in n else "".join(n.split()) for n in names if n.strip()]


def parse_axioms_message(text: str) -> tuple[str, list[str]] | None:
    """``("thm", ["propext", …])`` from a ``#print axioms`` message, else None."""
    m = _DEPENDS.match(text)
    if m is not None:
        return m.group("name"), _split_names(m.group("list"))
    m = _NO_AXIOMS.match(text)
    if m is not None:
        return m.group("name"), []
    return None


def build_certificate(
    *,
    snippet_id: str,
    code: str,
    stub: str | None,
    policy: Policy,
    environment: EnvironmentStamp,
    tiers: Sequence[TierResult] = (),
    trust: Sequence[TierResult] | None = None,
    messages: Sequence[Message] = (),
    sorries: Sequence[Sorry] = (),
    axioms: dict[str, list[str]] | None = None,
    feedback: str | None = None,
    goal_at_first_error: str | None = None,
    timings: dict[str, float] | None = None,
    cached: bool = False,
) -> Certificate:
    """A :class:`Certificate` from the tiers lean_server ran (compile/axioms/recheck) plus the trust
    tiers (computed here unless given), with the policy, content hashes, environment stamp and
    checker version; the verdict is :func:`lean_server.verdict.combine` of all tiers."""
    trust_results = list(trust) if trust is not None else trust_tiers(code, stub, policy)
    order = {"compile": 0, "axioms": 1, "statement": 2, "legality": 3, "recheck": 4}
    all_tiers = sorted([*tiers, *trust_results], key=lambda t: order.get(t.tier, 9))
    verdict, reasons = combine(all_tiers)
    return Certificate(
        id=snippet_id,
        verdict=verdict,
        reasons=reasons,
        tiers=all_tiers,
        policy=policy,
        statement_hash=content_hash(stub) if stub is not None else None,
        proof_hash=content_hash(code),
        environment=environment,
        checker_version=CHECKER_VERSION,
        messages=list(messages),
        sorries=list(sorries),
        axioms=dict(axioms or {}),
        goal_at_first_error=goal_at_first_error,
        feedback=feedback,
        violations=tier_violations(trust_results),
        cached=cached,
        timings=dict(timings or {}),
    )
