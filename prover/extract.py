"""From raw model text to a Lean file to check, with the ORIGINAL statement re-spliced.

Rules (picked per profile):
- ``last_block``: the last fenced ```lean4 / ```lean block (a missing closing fence runs to the
  end), looser unlabelled fences as fallback;
- ``kimina_block``: the last lean4 block containing all of ``theorem``, ``by``, ``:=``, ``import``;
- continuation (non-CoT prompts prefilled up to ``:= by``): the text up to the first closing fence.

``<think>…</think>`` sections are dropped first (when the think section is unclosed, the whole
text is searched), CRLF becomes LF. The candidate is then rebuilt as *stub prefix + model helper
lemmas + original target head + model proof body*, so the statement cannot silently change; helper
lemmas the model wrote before its target are kept (the legality tier checks them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from prover.lean_text import (
    StubParts,
    find_target,
    mask_comments,
    normalize_ws,
    split_stub,
    top_level_chunks,
)

Rule = Literal["last_block", "kimina_block"]
Source = Literal["block", "continuation", "body"]

_FENCE_OPEN = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n", re.MULTILINE)
# a closing fence ends a line: usually alone on it, sometimes glued to the last line of code
_FENCE_CLOSE = re.compile(r"```[ \t]*$", re.MULTILINE)
_THINK_CLOSE = "</think>"
_LEAN_TAGS = ("lean4", "lean", "lean3")


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    closed: bool


@dataclass(frozen=True)
class Candidate:
    """A file to check, and its parts (so a proof can be written back into a source file)."""

    code: str
    body: str  # the proof after the target's `:=`
    helpers: str = ""  # declarations the model placed before the target
    source: Source = "block"
    notes: list[str] = field(default_factory=list)


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def strip_think(text: str) -> str:
    """The answer part of a reasoning model's output."""
    text = normalize_newlines(text)
    if _THINK_CLOSE in text:
        return text.rsplit(_THINK_CLOSE, 1)[1]
    return text


def fenced_blocks(text: str) -> list[Block]:
    """Every fenced block in order; the last may be unclosed (truncated output)."""
    blocks: list[Block] = []
    pos = 0
    while True:
        m = _FENCE_OPEN.search(text, pos)
        if m is None:
            break
        close = _FENCE_CLOSE.search(text, m.end())
        if close is None:
            blocks.append(Block(lang=m.group(1).lower(), code=text[m.end() :], closed=False))
            break
        blocks.append(Block(lang=m.group(1).lower(), code=text[m.end() : close.start()], closed=True))
        pos = close.end()
    return blocks


def last_lean_block(text: str) -> str | None:
    """The last lean4/lean block; else the last unlabelled block that looks like Lean."""
    for source in (strip_think(text), normalize_newlines(text)):
        blocks = fenced_blocks(source)
        lean = [b for b in blocks if b.lang in _LEAN_TAGS]
        if lean:
            return lean[-1].code
        loose = [b for b in blocks if not b.lang and (":=" in b.code or "theorem" in b.code)]
        if loose:
            return loose[-1].code
    return None


def kimina_block(text: str) -> str | None:
    """Kimina's rule: the last lean4 block containing `theorem`, `by`, `:=` and `import`."""
    for source in (strip_think(text), normalize_newlines(text)):
        for block in reversed(fenced_blocks(source)):
            if block.lang in _LEAN_TAGS and all(k in block.code for k in ("theorem", "by", ":=", "import")):
                return block.code
    return None


def continuation_body(text: str) -> str:
    """Non-CoT continuation after `:= by`: the text up to the first closing fence (or the end)."""
    text = normalize_newlines(text)
    idx = text.find("```")
    return text if idx < 0 else text[:idx]


# ---- splicing ------------------------------------------------------------------------------------
def splice_body(parts: StubParts, body: str, helpers: str = "", *, source: Source = "body") -> Candidate:
    """``prefix + helpers + head + body + suffix``; ``body`` is the text after `:=`."""
    body = body.rstrip()
    if not body.startswith((" ", "\n")):
        body = " " + body
    helper_text = helpers.strip()
    pieces = [parts.prefix]
    if helper_text:
        if pieces[0] and not pieces[0].endswith("\n\n"):
            pieces.append("\n" if pieces[0].endswith("\n") else "\n\n")
        pieces.append(helper_text + "\n\n")
    pieces.append(parts.head + body + "\n")
    if parts.suffix.strip():
        pieces.append(parts.suffix if parts.suffix.startswith("\n") else "\n" + parts.suffix)
    return Candidate(code="".join(pieces), body=body, helpers=helper_text, source=source)


def splice_tactics(parts: StubParts, tactics: str) -> Candidate:
    """A tactic proof (`by` + indented tactics) under the original statement."""
    lines = normalize_newlines(tactics).strip("\n").split("\n")
    body = " by\n" + "\n".join(("  " + ln) if ln.strip() else ln for ln in lines)
    return splice_body(parts, body)


def splice_continuation(parts: StubParts, text: str) -> Candidate:
    """A non-CoT continuation: the prompt ended with `:= by` + newline + two spaces."""
    cont = continuation_body(text)
    return splice_body(parts, " by\n  " + cont.rstrip(), source="continuation")


def splice_file(parts: StubParts, code: str) -> Candidate | None:
    """Rebuild a model-written file around the original statement (None when no proof found)."""
    code = normalize_newlines(code)
    decl = find_target(code, parts.name)
    if decl is None:
        decl = find_target(code)
    if decl is None or decl.assign < 0:
        return None
    body = decl.body(code)
    if not body.strip():
        return None
    helpers = _new_helpers(parts.prefix, code[: decl.start])
    return splice_body(parts, body, helpers, source="block")


def _new_helpers(stub_prefix: str, model_prefix: str) -> str:
    """Top-level commands the model wrote before its target that the stub does not already have."""
    known = normalize_ws(stub_prefix)
    kept: list[str] = []
    for chunk in top_level_chunks(model_prefix):
        flat = normalize_ws(chunk)
        if not normalize_ws(mask_comments(chunk)):
            continue  # comments only
        if flat.startswith("import ") or flat in known:
            continue
        kept.append(chunk.strip("\n"))
    return "\n\n".join(kept)


def extract(
    text: str, stub: str, *, rule: Rule = "last_block", continuation: bool = False, target: str | None = None
) -> Candidate | None:
    """The candidate file for raw model ``text`` answering the sorry-stub ``stub``."""
    parts = split_stub(stub, target)
    if continuation:
        if continuation_body(text).strip():
            return splice_continuation(parts, text)
        return None
    block = kimina_block(text) if rule == "kimina_block" else last_lean_block(text)
    if block is None and rule == "kimina_block":
        block = last_lean_block(text)
    if block is None:
        return None
    if find_target(block) is None:
        # a bare tactic block: treat it as the proof body
        stripped = block.strip()
        if not stripped:
            return None
        if stripped.startswith("by"):
            return splice_body(parts, " " + stripped)
        return splice_tactics(parts, block)
    return splice_file(parts, block)
