"""The verdict of one check and the certificate that carries it.

One :class:`Certificate` is produced per snippet. lean_server fills the ``compile`` and
``axioms`` tiers (and ``recheck`` when a passing proof is re-checked in a fresh one-shot
process); the trust checker adds ``statement`` and ``legality``. The final ``verdict`` is the
first failing tier's verdict, or PASS when every tier that ran passed.

Lean positions: lines are 1-based, columns 0-based codepoints, always in the user's original
text (lean_server maps them back after stripping or injecting a header).
"""

from __future__ import annotations

import hashlib
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lean_server.policy import Policy

CHECKER_VERSION = "sorryless-checker/1"


class Verdict(StrEnum):
    PASS = "PASS"
    SORRY = "SORRY"
    LEAN_ERROR = "LEAN_ERROR"
    TIMEOUT = "TIMEOUT"
    OOM = "OOM"
    CHEAT = "CHEAT"
    INFRA_ERROR = "INFRA_ERROR"


Severity = Literal["trace", "info", "warning", "error"]
TierName = Literal["compile", "axioms", "statement", "legality", "recheck"]
ErrorCategory = Literal["syntax", "unknown_identifier", "type_mismatch", "unsolved_goals", "timeout", "other"]


class Pos(BaseModel):
    model_config = ConfigDict(frozen=True)

    line: int = Field(description="1-based line.")
    column: int = Field(description="0-based column, in codepoints.")


class Message(BaseModel):
    """One Lean message, normalised from the REPL (`info`) or `lean --json` (`information`)."""

    severity: Severity
    data: str = Field(description="Pretty-printed message text.")
    pos: Pos | None = None
    end_pos: Pos | None = None
    category: ErrorCategory | None = Field(default=None, description="Stable category of an error.")
    kind: str | None = Field(
        default=None,
        description="Lean's message kind tag when the backend gives one (`lean --json`: "
        "e.g. `lean.unknownIdentifier._namedError`, `[anonymous]`).",
    )


class Sorry(BaseModel):
    pos: Pos | None = None
    end_pos: Pos | None = None
    goal: str | None = None
    proof_state: int | None = None


class TierResult(BaseModel):
    """What one tier found."""

    tier: TierName
    ok: bool
    verdict: Verdict = Field(description="PASS when ok, else what this tier makes of the snippet.")
    reasons: list[str] = Field(default_factory=list)
    seconds: float = 0.0
    details: dict[str, Any] = Field(default_factory=dict)


class Violation(BaseModel):
    """A legality or statement-match finding, with its place in the candidate."""

    rule: str = Field(description="Stable rule name, e.g. `new_axiom`, `exit_command`.")
    message: str
    line: int = Field(description="1-based line in the candidate (0 when not tied to a place).")
    column: int = Field(description="0-based column in the candidate.")


class EnvironmentStamp(BaseModel):
    """Which Lean checked it: from the setup-lean lock file, or the backend's own report."""

    backend: str = Field(description="`repl`, `oneshot`, or a description of the double/kernel used.")
    lean_version: str | None = None
    toolchain: str | None = None
    mathlib_commit: str | None = None
    repl_commit: str | None = None


def content_hash(text: str) -> str:
    """sha256 of UTF-8 text, hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Certificate(BaseModel):
    """Everything said about one checked snippet: the verdict and why it can be trusted."""

    id: str = Field(description="The snippet id the client gave.")
    verdict: Verdict
    reasons: list[str] = Field(default_factory=list, description="Why the verdict is what it is.")
    tiers: list[TierResult] = Field(default_factory=list, description="Tiers that ran, in order.")
    policy: Policy = Field(default_factory=Policy)
    statement_hash: str | None = Field(default=None, description="sha256 of the stub (statement), if any.")
    proof_hash: str = Field(description="sha256 of the checked code.")
    environment: EnvironmentStamp
    checker_version: str = CHECKER_VERSION
    messages: list[Message] = Field(default_factory=list, description="Merged Lean messages.")
    sorries: list[Sorry] = Field(default_factory=list)
    axioms: dict[str, list[str]] = Field(
        default_factory=dict, description="Declaration -> axioms it depends on."
    )
    goal_at_first_error: str | None = None
    feedback: str | None = Field(default=None, description="Diagnostics shaped for an LLM.")
    violations: list[Violation] = Field(default_factory=list)
    cached: bool = Field(default=False, description="Answered from the result cache.")
    timings: dict[str, float] = Field(
        default_factory=dict, description="Seconds per phase (wait, import, check...)."
    )

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASS

    def tier(self, name: TierName) -> TierResult | None:
        return next((t for t in self.tiers if t.tier == name), None)


# Order in which a failing verdict wins when tiers disagree: the most serious first.
VERDICT_PRECEDENCE: tuple[Verdict, ...] = (
    Verdict.INFRA_ERROR,
    Verdict.OOM,
    Verdict.TIMEOUT,
    Verdict.CHEAT,
    Verdict.LEAN_ERROR,
    Verdict.SORRY,
    Verdict.PASS,
)


def combine(tiers: list[TierResult]) -> tuple[Verdict, list[str]]:
    """Final verdict and reasons from the tiers that ran."""
    failing = [t for t in tiers if not t.ok]
    if not failing:
        return Verdict.PASS, []
    worst = min(failing, key=lambda t: VERDICT_PRECEDENCE.index(t.verdict))
    reasons = [r for t in failing for r in t.reasons]
    return worst.verdict, reasons
