"""Tiers 1 and 2 of the verdict: compile (errors, warnings, sorries) and axioms.

The axiom report comes from ``#print axioms <name>`` commands appended after the user's code in
the *same* command, so it is read from the very environment that elaborated the proof, in the
same round trip. Their messages sit on the lines after the user's text: they are taken out of
the user-facing messages and parsed. A declaration with no report (``#exit``, an unclosed
comment...) is never a pass.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from lean_server import trust
from lean_server.backend import CompileOutcome
from lean_server.feedback import shape_messages
from lean_server.policy import Policy
from lean_server.protocol import ReplStatus, message_from_raw, sorry_from_raw
from lean_server.source import theorem_names as source_theorem_names
from lean_server.verdict import VERDICT_PRECEDENCE, Message, Sorry, TierResult, Verdict

SORRY_WARNING_RE = re.compile(r"declaration uses ['`]sorry['`]")
_MAX_REASONS = 5


def theorem_names(code: str) -> list[str]:
    """Full names of the snippet's named declarations, for ``#print axioms``."""
    return source_theorem_names(code)


def axiom_commands(names: list[str]) -> str:
    return "\n".join(f"#print axioms {n}" for n in names)


def parse_axioms_message(data: str) -> tuple[str, list[str]] | None:
    """``(name, axioms)`` from a ``#print axioms`` info message, None when it is not one."""
    return trust.parse_axioms_message(data)


@dataclass(slots=True)
class CompileReport:
    """Tiers 1-2 of one snippet plus the user-facing diagnostics."""

    tiers: list[TierResult]
    messages: list[Message]
    sorries: list[Sorry]
    axioms: dict[str, list[str]] = field(default_factory=dict)


def _summary(msg: Message) -> str:
    where = f"line {msg.pos.line}" if msg.pos else "file"
    head = msg.data.strip().split("\n", 1)[0]
    return f"{where}: {head[:300]}"


_FAILED_STATUS = {
    ReplStatus.TIMEOUT: Verdict.TIMEOUT,
    ReplStatus.OOM: Verdict.OOM,
    ReplStatus.CRASH: Verdict.INFRA_ERROR,
    ReplStatus.GARBAGE: Verdict.INFRA_ERROR,
    ReplStatus.REPL_ERROR: Verdict.INFRA_ERROR,
}


def evaluate(
    outcome: CompileOutcome, *, code: str, names: list[str], policy: Policy, stub: str | None = None
) -> CompileReport:
    """Compile and axiom tiers from one backend outcome (``names`` were appended as ``#print axioms``)."""
    compile_seconds = outcome.timings.get("compile", 0.0)
    if outcome.status is not ReplStatus.OK or outcome.response is None:
        verdict = _FAILED_STATUS.get(outcome.status, Verdict.INFRA_ERROR)
        tier = TierResult(
            tier="compile",
            ok=False,
            verdict=verdict,
            reasons=[outcome.detail or outcome.status.value],
            seconds=compile_seconds,
            details={"backend": outcome.backend, "status": outcome.status.value},
        )
        return CompileReport([tier], [], [])

    t0 = time.perf_counter()
    last_user_line = code.count("\n") + 1
    user_raw: list[dict[str, Any]] = []
    appended_raw: list[dict[str, Any]] = []
    for raw in outcome.response.get("messages", ()) or ():
        if not isinstance(raw, dict):
            continue
        pos = raw.get("pos")
        line = pos.get("line") if isinstance(pos, dict) else None
        if isinstance(line, int) and line > last_user_line and names:
            appended_raw.append(raw)
        else:
            user_raw.append(raw)
    messages = shape_messages([message_from_raw(m) for m in user_raw])
    sorries = [
        sorry_from_raw(s)
        for s in outcome.response.get("sorries", ()) or ()
        if isinstance(s, dict) and not _beyond(s, last_user_line)
    ]

    errors = [m for m in messages if m.severity == "error"]
    sorry_warnings = [m for m in messages if m.severity == "warning" and SORRY_WARNING_RE.search(m.data)]
    compile_reasons: list[str] = []
    compile_verdict = Verdict.PASS
    if outcome.header_failed:
        compile_verdict = Verdict.LEAN_ERROR
        compile_reasons.append(outcome.detail or "the import header failed")
    if errors:
        compile_verdict = Verdict.LEAN_ERROR
        compile_reasons.extend(f"error at {_summary(m)}" for m in errors[:_MAX_REASONS])
    if (sorries or sorry_warnings) and not policy.allow_sorry:
        if compile_verdict is Verdict.PASS:
            compile_verdict = Verdict.SORRY
        where = sorry_warnings[0] if sorry_warnings else None
        compile_reasons.append(
            f"declaration uses sorry ({_summary(where)})" if where else f"{len(sorries)} sorry placeholder(s)"
        )
    compile_tier = TierResult(
        tier="compile",
        ok=compile_verdict is Verdict.PASS,
        verdict=compile_verdict,
        reasons=compile_reasons,
        seconds=compile_seconds,
        details={
            "backend": outcome.backend,
            "errors": len(errors),
            "warnings": sum(1 for m in messages if m.severity == "warning"),
            "sorries": max(len(sorries), len(sorry_warnings)),
        },
    )
    tiers = [compile_tier]
    axioms: dict[str, list[str]] = {}
    if outcome.header_failed:
        return CompileReport(tiers, messages, sorries, axioms)

    # ---- tier 2: axioms, read from the same environment ----
    missing_reason: dict[str, str] = {}
    for raw in appended_raw:
        line = raw["pos"]["line"]
        index = line - last_user_line - 1
        data = str(raw.get("data", ""))
        parsed = parse_axioms_message(data) if raw.get("severity") in ("info", "information") else None
        if parsed is not None and 0 <= index < len(names):
            axioms[names[index]] = parsed[1]
        elif 0 <= index < len(names) and raw.get("severity") == "error":
            missing_reason[names[index]] = data.strip().split("\n", 1)[0][:200]
    compile_failed = not compile_tier.ok and compile_verdict is Verdict.LEAN_ERROR
    missing: list[str] = []
    for name in names:
        if name not in axioms:
            why = missing_reason.get(
                name, "no answer: the code after it was not elaborated (#exit, unclosed comment?)"
            )
            missing.append(f"no axiom report for '{name}' ({why})")
    extra = trust.stub_axioms(stub) if stub else []
    axiom_tier = trust.classify_axioms(axioms, policy, extra_allowed=extra)
    details = {**axiom_tier.details, "declarations": names}
    if missing:
        missing_verdict = Verdict.LEAN_ERROR if compile_failed else Verdict.CHEAT
        verdict = (
            missing_verdict
            if axiom_tier.ok
            else min((axiom_tier.verdict, missing_verdict), key=_PRECEDENCE.index)
        )
        details["missing"] = [n for n in names if n not in axioms]
        axiom_tier = axiom_tier.model_copy(
            update={"ok": False, "verdict": verdict, "reasons": [*axiom_tier.reasons, *missing]}
        )
    axiom_tier = axiom_tier.model_copy(update={"seconds": time.perf_counter() - t0, "details": details})
    tiers.append(axiom_tier)
    return CompileReport(tiers, messages, sorries, axioms)


_PRECEDENCE = VERDICT_PRECEDENCE


def _beyond(entry: dict[str, Any], last_line: int) -> bool:
    pos = entry.get("pos")
    line = pos.get("line") if isinstance(pos, dict) else None
    return isinstance(line, int) and line > last_line
