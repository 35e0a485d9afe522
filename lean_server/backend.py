"""The one async interface both Lean backends (REPL pool, one-shot `lean --json`) implement."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from lean_server.checker import Priority
from lean_server.header import SplitCode
from lean_server.protocol import ReplStatus


@dataclass(slots=True)
class CompileUnit:
    """One compilation: the user's code (already split) plus commands appended after it."""

    code: str
    split: SplitCode
    appended: str = ""
    """Text appended after the code on a new line (``#print axioms`` commands); may be empty."""
    timeout_s: float = 60.0
    priority: Priority = Priority.INTERACTIVE
    repl_options: dict[str, Any] | None = None
    """Extra REPL request fields (``{"infotree": "original"}``); ignored by the one-shot backend."""

    def text_for_body(self) -> str:
        return self.split.body + ("\n" + self.appended if self.appended else "")

    def text_for_file(self) -> str:
        return self.code + ("\n" + self.appended if self.appended else "")


@dataclass(slots=True)
class CompileOutcome:
    """What a backend made of a :class:`CompileUnit`.

    ``response`` is REPL-shaped (``messages``/``sorries``/``env``) with positions already in the
    user's original text (appended commands sit on the lines after it).
    """

    status: ReplStatus
    backend: str
    response: dict[str, Any] | None = None
    detail: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    header_failed: bool = False
    """The import header itself failed to elaborate (unknown module...): a LEAN_ERROR."""
    pid: int | None = None
    """The Lean process that answered (REPL backend)."""
    rss_bytes: int = 0
    """Last sampled resident memory of that process (0 when not sampled)."""


class Backend(Protocol):
    """A Lean backend: compiles units, one response per unit, never raising for Lean's sake."""

    name: str

    async def start(self) -> None: ...

    async def aclose(self) -> None: ...

    async def compile(self, unit: CompileUnit) -> CompileOutcome: ...

    def health(self) -> dict[str, Any]: ...
