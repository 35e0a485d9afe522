"""Attempt lines as they happen, from the prover's events.

The runner's ``verdict`` event carries the attempt itself (:attr:`ProverEvent.record`: candidate,
verdict, certificate), so the attempt line is written the moment Lean has answered. A prover whose
events carry no record (one whose checks the eval cannot see) still gets a line from what the
events say (index, sample, round, strategy, verdict, error, retrieved proofs), without candidate
or certificate.

What a live line cannot know (per-attempt tokens and seconds, finish reason) is in the sample's
cost. Attempts that never got a verdict event (checks dropped after a PASS, cancelled work), and
attempts whose final record says more than the live line, are written when the sample ends;
readers keep the last line per (uid, attempt index).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lean_server.verdict import Verdict
from prover.types import Attempt, ProverEvent


@dataclass
class LiveAttempts:
    """What one prove call has shown so far through its events."""

    started: dict[int, dict[str, Any]] = field(default_factory=dict)
    retrieved: list[str] = field(default_factory=list)
    logged: dict[int, Attempt] = field(default_factory=dict)

    def attempt_from(self, event: ProverEvent) -> Attempt | None:
        """Note what an event says; for a ``verdict`` event, the attempt it completes (a copy,
        remembered as logged)."""
        if event.kind == "memory_hit":
            self.retrieved = [str(x) for x in event.data.get("ids", [])]
            return None
        if event.attempt is None:
            return None
        if event.kind == "attempt_started":
            self.started[event.attempt] = dict(event.data)
            return None
        if event.kind != "verdict":
            return None
        if event.record is not None:
            attempt = event.record.model_copy(deep=True)  # the prover keeps changing its own
        else:
            started = self.started.get(event.attempt, {})
            attempt = Attempt(
                index=event.attempt,
                # an attempt reported without a sample (portfolio's tactic tries) is its own sample
                sample=int(started.get("sample", event.attempt)),
                round=int(started.get("round", 0)),
                strategy=str(started.get("strategy") or "unknown"),
                verdict=_verdict(event.data.get("verdict")),
                error=event.data.get("error"),
                memory_hits=list(self.retrieved),
            )
        self.logged[attempt.index] = attempt
        return attempt

    def needs_final_line(self, final: Attempt) -> bool:
        """Whether the attempt's final record says more than (or else than) its live line."""
        live = self.logged.get(final.index)
        if live is None:
            return True
        return (
            live.candidate != final.candidate
            or live.verdict != final.verdict
            or live.error != final.error
            or (live.certificate is None) != (final.certificate is None)
        )


def _verdict(raw: object) -> Verdict | None:
    try:
        return Verdict(str(raw)) if raw else None
    except ValueError:
        return None
