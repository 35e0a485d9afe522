"""The seam between Lean and everything that asks it questions.

:class:`Checker` is implemented by the in-process pool and by the HTTP client of
``sorryless lean-server``; the prover, the API workers and evaluation only know this Protocol.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from enum import IntEnum
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from lean_server.verdict import Certificate
from sorryless.errors import SorrylessError


class Priority(IntEnum):
    """Lower value is served first."""

    INTERACTIVE = 0
    BATCH = 1


class Snippet(BaseModel):
    """One piece of Lean code to check (a whole file: header + body)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Client-chosen id, echoed in the certificate.")
    code: str = Field(description="The Lean source: imports/options header followed by declarations.")
    stub: str | None = Field(
        default=None,
        description="The sorry-stub this code must prove (enables the statement and legality tiers).",
    )
    policy: str | None = Field(default=None, description="Policy preset: strict (default), sketch, lenient.")
    policy_overrides: dict[str, Any] | None = Field(default=None, description="Per-request policy fields.")
    timeout_s: float | None = Field(default=None, gt=0, description="Deadline of this check, seconds.")
    recheck: bool | None = Field(
        default=None, description="Re-check a PASS in a fresh one-shot process (default: settings)."
    )
    use_cache: bool = Field(default=True, description="Answer from the result cache when possible.")


class LeanError(SorrylessError):
    """Something went wrong talking to Lean (not a verdict: verdicts are never raised)."""


class BacklogFull(LeanError):
    """The pool's wait queue is at its backlog limit; retry after ``retry_after`` seconds."""

    def __init__(self, retry_after: float, message: str = "verification backlog is full") -> None:
        super().__init__(message)
        self.retry_after = retry_after


class CheckerUnavailable(LeanError):
    """No Lean backend is configured or reachable."""


@runtime_checkable
class Checker(Protocol):
    """Checks snippets and yields one certificate per snippet, in completion order."""

    def check(
        self, snippets: Sequence[Snippet], *, priority: Priority = Priority.INTERACTIVE
    ) -> AsyncIterator[Certificate]: ...

    async def aclose(self) -> None: ...


async def check_one(
    checker: Checker, snippet: Snippet, *, priority: Priority = Priority.INTERACTIVE
) -> Certificate:
    """Convenience: check a single snippet and return its certificate."""
    async for cert in checker.check([snippet], priority=priority):
        return cert
    raise LeanError(f"checker returned no certificate for {snippet.id!r}")
