"""Lean diagnostics shaped for a model: the error list of a certificate and code excerpts."""

from __future__ import annotations

from dataclasses import dataclass, replace

from lean_server.verdict import Certificate, Message, Verdict

SYSTEM_VERDICTS = (Verdict.INFRA_ERROR, Verdict.TIMEOUT, Verdict.OOM)


@dataclass(frozen=True)
class Problem:
    """One thing to tell the model: a Lean error or a trust finding, with its place when known."""

    data: str
    line: int | None = None  # 1-based
    column: int | None = None  # 0-based
    end_line: int | None = None
    end_column: int | None = None
    severity: str = "error"
    goal: str | None = None  # the goal state at this problem, when Lean reported one


def message_goal(data: str) -> str | None:
    """The goal state a Lean message carries: the body of "unsolved goals", or the `⊢` state a
    failing tactic prints after its first line (linarith, nlinarith, positivity, ...)."""
    head, _, rest = data.partition("\n")
    rest = rest.strip("\n")
    if not rest.strip():
        return None
    if head.strip().lower().startswith("unsolved goals") or "⊢" in rest:
        return rest
    return None


def _sorry_goals(cert: Certificate) -> dict[int, str]:
    return {s.pos.line: s.goal for s in cert.sorries if s.pos is not None and s.goal}


def _from_message(m: Message, sorry_goals: dict[int, str] | None = None) -> Problem:
    end = m.end_pos or m.pos
    line = m.pos.line if m.pos else None
    goal = message_goal(m.data)
    if goal is None and sorry_goals and line is not None:
        goal = sorry_goals.get(line)
    return Problem(
        data=m.data,
        line=line,
        column=m.pos.column if m.pos else None,
        end_line=end.line if end else None,
        end_column=end.column if end else None,
        severity=m.severity,
        goal=goal,
    )


def problems(cert: Certificate) -> list[Problem]:
    """Errors first; else sorry warnings, trust violations and tier reasons (never empty unless PASS).

    Each problem carries its own goal state when the message holds one, else the goal of a
    `sorry` on its line; the first error falls back to ``cert.goal_at_first_error``."""
    sorry_goals = _sorry_goals(cert)
    errors = [_from_message(m, sorry_goals) for m in cert.messages if m.severity == "error"]
    if errors:
        if errors[0].goal is None and cert.goal_at_first_error:
            errors[0] = replace(errors[0], goal=cert.goal_at_first_error)
        return errors
    out = [
        _from_message(m, sorry_goals)
        for m in cert.messages
        if m.severity == "warning" and ("sorry" in m.data or "failed" in m.data)
    ]
    out += [
        Problem(data=f"{v.rule}: {v.message}", line=v.line or None, column=v.column if v.line else None)
        for v in cert.violations
    ]
    if not out and cert.verdict is not Verdict.PASS:
        out = [Problem(data=r) for r in (cert.reasons or [f"verdict {cert.verdict.value}"])]
    return out


def system_error(cert: Certificate) -> str | None:
    """Text for a check that failed for infrastructure reasons (timeout, OOM, crash)."""
    if cert.verdict in SYSTEM_VERDICTS:
        return "; ".join(cert.reasons) or cert.verdict.value
    return None


def plain_list(cert: Certificate, *, limit: int = 8) -> str:
    """`line L, column C: message` lines (OProver / generic)."""
    items = problems(cert)
    lines: list[str] = []
    for p in items[:limit]:
        where = f"line {p.line}, column {p.column}: " if p.line is not None else ""
        lines.append(f"- {where}{p.severity}: {p.data.strip()}")
    lines += closing_lines(cert, shown=min(limit, len(items)), total=len(items))
    return "\n".join(lines)


def closing_lines(
    cert: Certificate, *, shown: int, total: int, system_label: str = "System error"
) -> list[str]:
    """What ends an error list: how many errors were left out, and the system error if any."""
    out: list[str] = []
    if total > shown:
        out.append(f"... [Omitted {total - shown} more errors] ...")
    sys_err = system_error(cert)
    if sys_err:
        out.append(f"{system_label}: {sys_err}")
    return out


def kimina_json(cert: Certificate) -> dict[str, object]:
    """kimina-lean-server shaped result: ``{"info": {"pass", "errors": [...]}}``."""
    errors: list[dict[str, object]] = []
    for m in cert.messages:
        if m.severity not in ("error", "warning"):
            continue
        item: dict[str, object] = {"severity": m.severity, "data": m.data}
        if m.pos:
            item["pos"] = {"line": m.pos.line, "column": m.pos.column}
        if m.end_pos:
            item["endPos"] = {"line": m.end_pos.line, "column": m.end_pos.column}
        errors.append(item)
    info: dict[str, object] = {"pass": cert.verdict is Verdict.PASS, "errors": errors}
    sys_err = system_error(cert)
    if sys_err:
        info["system_error"] = sys_err
    return {"info": info}
