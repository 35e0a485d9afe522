"""Attempt lines as they happen: build each attempt from the prover's events while it runs.

The runner reports an attempt's verdict through its ``on_event`` sink (``verdict`` events carry
the attempt index, the verdict and the error), but not the candidate or its certificate. An
in-process run therefore wraps the runner's checker in :class:`RecordingChecker`: every snippet
checked while a sample runs is remembered (code, certificate) in that sample's
:class:`LiveAttempts`, found through a context variable, so concurrent samples never mix. When the
``verdict`` event of attempt *i* arrives, the attempt line is complete and written at once.

What a live line cannot know (per-attempt tokens and seconds, finish reason) is in the sample's
cost. Attempts that never got a verdict event (checks dropped after a PASS, cancelled work), and
attempts whose final record says more than the live line (a prover without a recording checker),
are written when the sample ends; readers keep the last line per (uid, attempt index).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from lean_server.checker import Checker, Priority, Snippet
from lean_server.verdict import Certificate, Verdict
from prover.types import Attempt, ProverEvent

_CURRENT: ContextVar[LiveAttempts | None] = ContextVar("sorryless_eval_live_attempts", default=None)


@dataclass
class LiveAttempts:
    """What one prove call has shown so far: snippets checked, attempts started, retrieved proofs."""

    task_id: str
    codes: dict[str, str] = field(default_factory=dict)
    certificates: dict[str, Certificate] = field(default_factory=dict)
    started: dict[int, dict[str, Any]] = field(default_factory=dict)
    retrieved: list[str] = field(default_factory=list)
    logged: dict[int, Attempt] = field(default_factory=dict)

    @contextlib.contextmanager
    def active(self) -> Iterator[LiveAttempts]:
        """Make this the recorder of the checks made by the current task (and tasks it starts)."""
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)

    def attempt_from(self, event: ProverEvent) -> Attempt | None:
        """Note what an event says; for a ``verdict`` event, the attempt it completes."""
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
        snippet_id = f"{self.task_id}#{event.attempt}"
        started = self.started.get(event.attempt, {})
        certificate = self.certificates.get(snippet_id)
        verdict = certificate.verdict if certificate is not None else _verdict(event.data.get("verdict"))
        return Attempt(
            index=event.attempt,
            # an attempt reported without a sample (portfolio's tactic tries) is its own sample
            sample=int(started.get("sample", event.attempt)),
            round=int(started.get("round", 0)),
            strategy=str(started.get("strategy") or "unknown"),
            candidate=self.codes.get(snippet_id),
            verdict=verdict,
            certificate=certificate,
            error=event.data.get("error"),
            memory_hits=list(self.retrieved),
        )

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


class RecordingChecker:
    """A :class:`Checker` that remembers, per running sample, what it checked and what it answered."""

    def __init__(self, inner: Checker) -> None:
        self.inner = inner

    async def check(
        self, snippets: Sequence[Snippet], *, priority: Priority = Priority.INTERACTIVE
    ) -> AsyncIterator[Certificate]:
        recorder = _CURRENT.get()
        if recorder is not None:
            for snippet in snippets:
                recorder.codes[snippet.id] = snippet.code
        stream = self.inner.check(snippets, priority=priority)
        try:
            async for cert in stream:
                if recorder is not None:
                    recorder.certificates[cert.id] = cert
                yield cert
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()

    async def aclose(self) -> None:
        await self.inner.aclose()


def _verdict(raw: object) -> Verdict | None:
    try:
        return Verdict(str(raw)) if raw else None
    except ValueError:
        return None
