"""Tiers 1 and 2 of the verdict: compile (errors, warnings, sorries) and axioms.

The axiom report comes from ``#print axioms <name>`` commands appended after the user's code in
the *same* command, so it is read from the very environment that elaborated the proof, in the
same round trip. Their messages sit on the lines after the user's text: they are taken out of
the user-facing messages and parsed. A declaration with no report (``#exit``, an unclosed
comment...) is never a pass.

Unnamed declarations (``example``, anonymous ``instance``) carry proofs too but cannot be named
in ``#print axioms``: :func:`prepare_axiom_audit` gives each a generated name in the text sent to
Lean (``example`` becomes ``noncomputable def _sorryless_example_l<line>``, an instance gets
``_sorryless_instance_l<line>``), and :meth:`AxiomAudit.restore` maps the columns of that line
back to the user's text, so every proof-carrying declaration's axioms are audited.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace
from typing import Any

from lean_server import trust
from lean_server.backend import CompileOutcome
from lean_server.feedback import shape_messages
from lean_server.policy import Policy
from lean_server.protocol import ReplStatus, message_from_raw, sorry_from_raw
from lean_server.source import DECLARATION_KINDS, Token
from lean_server.verdict import VERDICT_PRECEDENCE, Message, Sorry, TierResult, Verdict

SORRY_WARNING_RE = re.compile(r"declaration uses ['`]sorry['`]")
_MAX_REASONS = 5


def axiom_commands(names: list[str]) -> str:
    return "\n".join(f"#print axioms {n}" for n in names)


GENERATED_NAME_PREFIX = "_sorryless_"
_NO_NONCOMPUTABLE = frozenset({"noncomputable", "unsafe", "partial", "nonrec"})
"""Modifiers after which ``noncomputable`` may not be added (already there, or out of order)."""


@dataclass(frozen=True, slots=True)
class _Edit:
    """Text replaced on one line: ``old_len`` codepoints at ``column`` of the user's text became
    ``new_len`` codepoints at ``sent_column`` of the text sent to Lean."""

    column: int
    sent_column: int
    old_len: int
    new_len: int


@dataclass(slots=True)
class AxiomAudit:
    """The text to send to Lean and the declaration names to ``#print axioms`` for."""

    code: str
    """The user's code with every unnamed proof-carrying declaration named (same lines)."""
    names: list[str]
    edits: dict[int, list[_Edit]] = field(default_factory=dict)
    """Edits per 1-based line, in column order."""

    @property
    def rewritten(self) -> bool:
        return bool(self.edits)

    def restore(self, outcome: CompileOutcome) -> CompileOutcome:
        """``outcome`` with its message and sorry positions in the user's own text."""
        if not self.edits or outcome.response is None:
            return outcome
        response = dict(outcome.response)
        for key in ("messages", "sorries"):
            entries = response.get(key)
            if isinstance(entries, list):
                response[key] = [self._restore_entry(e) if isinstance(e, dict) else e for e in entries]
        return replace(outcome, response=response)

    def _restore_entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        out = dict(entry)
        for key in ("pos", "endPos"):
            pos = entry.get(key)
            if (
                isinstance(pos, dict)
                and isinstance(pos.get("line"), int)
                and isinstance(pos.get("column"), int)
            ):
                edits = self.edits.get(pos["line"])
                if edits:
                    out[key] = {**pos, "column": _original_column(edits, pos["column"])}
        return out


def _original_column(edits: list[_Edit], column: int) -> int:
    shift = 0
    for edit in edits:
        if column < edit.sent_column:
            break
        if column < edit.sent_column + edit.new_len:
            return edit.column  # inside the generated text: its place in the user's text
        shift = edit.sent_column + edit.new_len - (edit.column + edit.old_len)
    return column - shift


def prepare_axiom_audit(code: str) -> AxiomAudit:
    """Names for ``#print axioms``: every named declaration of ``code``, plus a generated name for
    each ``example`` and anonymous ``instance`` (given to it in :attr:`AxiomAudit.code`)."""
    source = trust.parse_cached(code)  # the legality tier parses the same text: parsed once
    names: dict[str, None] = {}
    pending: list[tuple[int, int, str, Token]] = []  # (start, end, replacement, anchor token)
    taken: dict[str, int] = {}
    tokens = source.tokens
    for cmd in source.commands:
        if cmd.kind not in DECLARATION_KINDS:
            continue
        if cmd.name:
            names.setdefault(cmd.name, None)
            continue
        if cmd.kind not in ("example", "instance") or cmd.keyword_index >= len(tokens):
            continue
        keyword = tokens[cmd.keyword_index]
        base = f"{GENERATED_NAME_PREFIX}{cmd.kind}_l{keyword.line}"
        count = taken.get(base, 0)
        taken[base] = count + 1
        generated = base if count == 0 else f"{base}_{count}"
        if cmd.kind == "example":
            modifier = "" if _NO_NONCOMPUTABLE & set(cmd.modifiers) else "noncomputable "
            pending.append((keyword.start, keyword.end, f"{modifier}def {generated}", keyword))
        else:
            anchor = _instance_name_anchor(tokens, cmd.keyword_index, cmd.tokens.end)
            pending.append((anchor.end, anchor.end, f" {generated}", anchor))
        names.setdefault(f"{cmd.namespace}.{generated}" if cmd.namespace else generated, None)
    if not pending:
        return AxiomAudit(code, list(names))
    parts: list[str] = []
    edits: dict[int, list[_Edit]] = {}
    last = 0
    line_shift: dict[int, int] = {}
    for start, end, text, anchor in pending:
        parts.append(code[last:start])
        parts.append(text)
        last = end
        column = anchor.column if start == anchor.start else anchor.column + (end - anchor.start)
        shift = line_shift.get(anchor.line, 0)
        edits.setdefault(anchor.line, []).append(_Edit(column, column + shift, end - start, len(text)))
        line_shift[anchor.line] = shift + len(text) - (end - start)
    parts.append(code[last:])
    return AxiomAudit("".join(parts), list(names), edits)


def _instance_name_anchor(tokens: list[Token], keyword_index: int, end: int) -> Token:
    """The token after which an anonymous instance's name goes: ``instance`` or its
    ``(priority := …)``."""
    i = keyword_index + 1
    if i + 1 < end and tokens[i].text == "(" and tokens[i + 1].text == "priority":
        depth = 0
        for j in range(i, end):
            if tokens[j].text == "(":
                depth += 1
            elif tokens[j].text == ")":
                depth -= 1
                if depth == 0:
                    return tokens[j]
    return tokens[keyword_index]


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
