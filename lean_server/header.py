"""Split a snippet into its import header and its body, and map body positions back.

The pool keys processes by the *exact* import header (never collapsed to ``import Mathlib``)
and runs only the body on the pristine header environment. Lean reports positions relative
to the text it was given, so every position of a body is shifted back by the number of lines
the header took in the user's original text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class SplitCode:
    """A snippet cut into the header the pool imports once and the body it runs per check."""

    header: str
    """Canonical header command (``import A\\nimport B``), ``""`` when the code imports nothing."""
    body: str
    """The rest of the code, starting at the first line after the last import."""
    line_offset: int
    """Original line = body line + line_offset."""
    imports: tuple[str, ...]


def _strip_line_comment(line: str) -> str:
    cut = line.find("--")
    return line if cut < 0 else line[:cut]


def _block_comment_end(lines: list[str], start: int) -> int | None:
    """Index of the line that closes the block comment opened at ``lines[start]`` (nesting aware),
    or None when it never closes or code follows the close on the same line."""
    depth = 0
    for i in range(start, len(lines)):
        text = lines[i]
        j = 0
        while j < len(text) - 1:
            pair = text[j : j + 2]
            if pair == "/-":
                depth += 1
                j += 2
                continue
            if pair == "-/":
                depth -= 1
                j += 2
                if depth == 0:
                    return i if not text[j:].strip() else None
                continue
            j += 1
    return None


def split_header(code: str) -> SplitCode:
    """Cut the leading ``import`` lines (with comments and blank lines among them) off ``code``."""
    if "import" not in code:
        return SplitCode("", code, 0, ())
    lines = code.split("\n")
    imports: list[str] = []
    last_import_line = -1
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if not stripped or stripped.startswith("--"):
            i += 1
            continue
        if stripped.startswith("/-"):
            end = _block_comment_end(lines, i)
            if end is None:
                break
            i = end + 1
            continue
        if stripped.startswith("import ") or stripped == "import":
            modules = _strip_line_comment(stripped)[len("import") :].split()
            if not modules or any("/-" in m for m in modules):
                break
            imports.extend(modules)
            last_import_line = i
            i += 1
            continue
        break
    if last_import_line < 0:
        return SplitCode("", code, 0, ())
    header = "\n".join(f"import {m}" for m in imports)
    body = "\n".join(lines[last_import_line + 1 :])
    return SplitCode(header, body, last_import_line + 1, tuple(imports))


def _shift_pos(pos: Any, offset: int) -> Any:
    if isinstance(pos, dict):
        line = pos.get("line")
        if isinstance(line, int) and line > 0:
            return {**pos, "line": line + offset}
    return pos


def _shift_entries(entries: Any, offset: int, keys: tuple[str, ...]) -> Any:
    if not isinstance(entries, list):
        return entries
    shifted = []
    for entry in entries:
        if isinstance(entry, dict):
            entry = dict(entry)
            for key in keys:
                if key in entry:
                    entry[key] = _shift_pos(entry[key], offset)
        shifted.append(entry)
    return shifted


_POS_KEYS = ("pos", "endPos")


def shift_response(response: dict[str, Any], offset: int) -> dict[str, Any]:
    """A copy of a REPL response with every ``pos``/``endPos`` moved down by ``offset`` lines
    (messages, sorries, tactics, infotree ranges). Line 0 (no position) is left alone."""
    if offset == 0:
        return response
    out = dict(response)
    for field in ("messages", "sorries", "tactics"):
        if field in out:
            out[field] = _shift_entries(out[field], offset, _POS_KEYS)
    if "infotree" in out:
        out["infotree"] = _shift_tree(out["infotree"], offset)
    return out


_TREE_POS_KEYS = frozenset({"pos", "endPos", "start", "finish"})


def _shift_tree(node: Any, offset: int) -> Any:
    """Infotree copy with every position (``range.start``/``finish``, ``pos``/``endPos``) shifted."""
    if isinstance(node, list):
        return [_shift_tree(child, offset) for child in node]
    if isinstance(node, dict):
        return {
            key: _shift_pos(value, offset) if key in _TREE_POS_KEYS else _shift_tree(value, offset)
            for key, value in node.items()
        }
    return node
