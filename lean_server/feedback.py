"""Lean diagnostics shaped for an LLM: merged duplicates, truncated walls of text, stable
error categories, and a compact rendering with the goal at the first error."""

from __future__ import annotations

import re

from lean_server.verdict import ErrorCategory, Message, Sorry

MAX_MESSAGE_CHARS = 2000
MAX_FEEDBACK_MESSAGES = 20
TRUNCATION_MARKER = "… [truncated {n} chars]"

_CATEGORY_RULES: tuple[tuple[ErrorCategory, re.Pattern[str]], ...] = (
    (
        "timeout",
        re.compile(
            r"deterministic\)? timeout|maxHeartbeats|heartbeats|maximum recursion depth|\(kernel\) deep recursion",
            re.IGNORECASE,
        ),
    ),
    ("unsolved_goals", re.compile(r"^unsolved goals|^linarith failed|^omega could not prove", re.IGNORECASE)),
    (
        "unknown_identifier",
        re.compile(r"^unknown (identifier|constant|namespace)|^Unknown (identifier|constant)", re.IGNORECASE),
    ),
    (
        "type_mismatch",
        re.compile(r"type mismatch|^function expected", re.IGNORECASE),
    ),
    (
        "syntax",
        re.compile(
            r"^unexpected token|^unexpected |^expected |^unterminated|^invalid syntax|^missing end of",
            re.IGNORECASE,
        ),
    ),
)


def categorize(data: str) -> ErrorCategory:
    """Stable category of an error message's text."""
    for category, pattern in _CATEGORY_RULES:
        if pattern.search(data):
            return category
    return "other"


def truncate(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + TRUNCATION_MARKER.format(n=len(text) - limit)


def shape_messages(messages: list[Message]) -> list[Message]:
    """Duplicates merged (same severity, place and text), long texts truncated, errors categorised."""
    seen: set[tuple[str, int, int, str]] = set()
    shaped: list[Message] = []
    for msg in messages:
        pos = msg.pos
        key = (msg.severity, pos.line if pos else -1, pos.column if pos else -1, msg.data)
        if key in seen:
            continue
        seen.add(key)
        data = truncate(msg.data)
        category = categorize(msg.data) if msg.severity == "error" else None
        if data is not msg.data or category is not None:
            msg = msg.model_copy(update={"data": data, "category": category})
        shaped.append(msg)
    return shaped


def goal_at_first_error(messages: list[Message], sorries: list[Sorry]) -> str | None:
    """The goal state at the first error ("unsolved goals" carries it), else at the first sorry."""
    for msg in messages:
        if msg.severity == "error":
            head, _, rest = msg.data.partition("\n")
            if head.strip().lower().startswith("unsolved goals") and rest.strip():
                return truncate(rest.strip())
            break
    for sorry in sorries:
        if sorry.goal:
            return truncate(sorry.goal)
    return None


def _where(msg: Message) -> str:
    return f"line {msg.pos.line}, col {msg.pos.column}" if msg.pos else "file"


def render_feedback(
    messages: list[Message], reasons: list[str], goal: str | None, *, verdict: str
) -> str | None:
    """A compact text for an LLM: verdict, reasons, errors then warnings (categorised), the goal."""
    if verdict == "PASS" and not messages:
        return None
    lines = [f"verdict: {verdict}"]
    lines.extend(f"reason: {r}" for r in reasons[:5])
    ordered = [m for m in messages if m.severity == "error"] + [
        m for m in messages if m.severity == "warning"
    ]
    for msg in ordered[:MAX_FEEDBACK_MESSAGES]:
        tag = f"{msg.severity} [{msg.category}]" if msg.category else msg.severity
        lines.append(f"{_where(msg)}: {tag}: {msg.data}")
    if len(ordered) > MAX_FEEDBACK_MESSAGES:
        lines.append(f"… {len(ordered) - MAX_FEEDBACK_MESSAGES} more messages")
    if goal:
        lines.append("goal at first error:\n" + goal)
    return "\n".join(lines)
