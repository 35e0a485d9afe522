"""Wire format of the leanprover-community REPL and the typed outcome of one round trip.

Requests are one JSON object followed by a blank line; responses are one (pretty-printed)
JSON object followed by a blank line. A round trip never raises to the caller: a dead, silent,
babbling or out-of-memory process is a :class:`ReplStatus`.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from lean_server.verdict import Message, Pos, Severity, Sorry


class ReplStatus(StrEnum):
    OK = "ok"
    TIMEOUT = "timeout"
    CRASH = "crash"
    GARBAGE = "garbage"
    OOM = "oom"
    REPL_ERROR = "repl_error"
    """The REPL answered ``{"message": ...}`` (unknown env, bad command)."""


@dataclass(slots=True)
class ReplReply:
    """Outcome of one request to one process."""

    status: ReplStatus
    response: dict[str, Any] | None = None
    detail: str = ""
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status is ReplStatus.OK


class GarbageOutput(Exception):
    """The process wrote something that is not a JSON response."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def encode_request(request: dict[str, Any]) -> bytes:
    """One request on the wire: JSON (via the json library, never by hand) and a blank line."""
    return json.dumps(request, ensure_ascii=False).encode("utf-8") + b"\n\n"


async def read_response(reader: asyncio.StreamReader) -> dict[str, Any]:
    """Read one response: a JSON object ended by a blank line.

    Raises ``asyncio.IncompleteReadError`` on EOF and :class:`GarbageOutput` when the output is
    empty or not a JSON object (detected on the first line, so babble fails fast).
    """
    first = await reader.readuntil(b"\n")
    if not first.strip():
        # Every response's closing blank line is consumed with it: a leading blank line is an
        # empty answer (kimina #66), not a slow one.
        raise GarbageOutput("empty response")
    if not first.lstrip().startswith(b"{"):
        raise GarbageOutput(first[:2000].decode("utf-8", "replace"))
    nxt = await reader.readexactly(1)
    data = first if nxt == b"\n" else first + nxt + await reader.readuntil(b"\n\n")
    try:
        obj = json.loads(data)
    except ValueError as exc:
        raise GarbageOutput(data[:2000].decode("utf-8", "replace")) from exc
    if not isinstance(obj, dict):
        raise GarbageOutput(data[:2000].decode("utf-8", "replace"))
    return obj


_SEVERITIES: dict[str, Severity] = {
    "information": "info",
    "info": "info",
    "warning": "warning",
    "error": "error",
    "trace": "trace",
}


def normalise_severity(raw: Any) -> Severity:
    return _SEVERITIES.get(str(raw), "info")


def _pos(raw: Any) -> Pos | None:
    if isinstance(raw, dict):
        line, column = raw.get("line"), raw.get("column")
        if isinstance(line, int) and isinstance(column, int):
            return Pos.model_construct(line=line, column=column)
    return None


def message_from_raw(raw: dict[str, Any]) -> Message:
    """A :class:`Message` from a REPL message or a ``lean --json`` line (positions as given)."""
    kind = raw.get("kind")
    return Message.model_construct(
        severity=normalise_severity(raw.get("severity")),
        data=str(raw.get("data", "")),
        pos=_pos(raw.get("pos")),
        end_pos=_pos(raw.get("endPos")),
        category=None,
        kind=kind if isinstance(kind, str) else None,
    )


def sorry_from_raw(raw: dict[str, Any]) -> Sorry:
    goal = raw.get("goal")
    state = raw.get("proofState")
    return Sorry.model_construct(
        pos=_pos(raw.get("pos")),
        end_pos=_pos(raw.get("endPos")),
        goal=goal if isinstance(goal, str) else None,
        proof_state=state if isinstance(state, int) else None,
    )


def timeout_detail(timeout_s: float | None) -> str:
    """The text of a check that passed its deadline (Kimina's wording; clients match "timed out")."""
    return f"Lean REPL command timed out in {timeout_s or 0:g} seconds"
