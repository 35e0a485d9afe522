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

Two kinds of stub need more than that:

- **Answer slots.** A stub declaration the benchmark leaves for the prover to fill (PutnamBench's
  ``abbrev putnam_…_solution : T := sorry``, or a ``sorry``-ed lemma before the target: exactly what
  :func:`lean_server.statement.may_fill` accepts) is *replaced in the stub prefix* by the model's
  declaration of the same full name, instead of being appended as a helper (which would declare it
  twice and keep the ``sorry``). Whatever the model wrote is spliced as is: a changed name, kind,
  type or attribute is then the trust checker's ``prerequisite_changed``, not silently fixed here.
- **Data targets.** ProofNet has 14 targets that are ``def … : CommGroup G := by sorry``;
  :func:`split_target` cuts them with the trust analyzer when the theorem-only
  :func:`prover.lean_text.split_stub` finds nothing, and :func:`splice_file` finds the model's
  ``def`` by name. A statement with no target at all raises :class:`TargetNotFound` (a
  ``ProverError`` and a ``ValueError``, so the runner reports it as the outcome's error).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Literal

from lean_server.source import Declaration, SourceFile, parse, tokenize
from lean_server.statement import find_target as find_stub_target
from lean_server.statement import may_fill
from prover.errors import TargetNotFound
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


def split_target(stub: str, target: str | None = None) -> StubParts:
    """The stub cut around its target: theorem/lemma targets as :func:`prover.lean_text.split_stub`
    cuts them, else the trust analyzer's target (a ``sorry``-ed ``def``/``abbrev``/``instance``, such as
    ProofNet's ``def exercise_2_1_21 … : CommGroup G := by sorry``). Raises :class:`TargetNotFound`."""
    try:
        return split_stub(stub, target)
    except ValueError:
        pass
    text = normalize_newlines(stub)
    sf = parse(text)
    decl = find_stub_target(sf, target)
    if decl is None or not decl.body or decl.short_name is None:
        if target:
            raise TargetNotFound(f"the statement has no declaration `{target}` with a `:=` body to prove")
        raise TargetNotFound(
            "the statement has no theorem, lemma or definition whose `:=` body is `sorry`: nothing to prove"
        )
    assign = sf.tokens[decl.body.start - 1]
    if assign.text != ":=":
        raise TargetNotFound(
            f"`{decl.name}` is defined by `{assign.text}` clauses, not `:=`; there is no single body to prove"
        )
    return StubParts(
        prefix=text[: decl.start],
        head=text[decl.start : assign.end],
        suffix=text[decl.end :],
        name=decl.short_name,
    )


def _model_target(code: str, name: str) -> tuple[int, str] | None:
    """(start offset, text after `:=`) of the model's declaration of ``name``: a theorem/lemma as
    :mod:`prover.lean_text` finds it, else any declaration kind (a ``def`` target) by name."""
    decl = find_target(code, name)
    if decl is not None and decl.assign >= 0:
        return decl.start, decl.body(code)
    sf = parse(code)
    short = name.rsplit(".", 1)[-1]
    for cand in reversed(sf.declarations):
        names = (cand.name or "", cand.short_name or "")
        if not cand.body or not any(n in (name, short) or n.endswith("." + short) for n in names):
            continue
        assign = sf.tokens[cand.body.start - 1]
        if assign.text == ":=":
            return cand.start, code[assign.end : cand.end]
    return None


def splice_file(parts: StubParts, code: str) -> Candidate | None:
    """Rebuild a model-written file around the original statement (None when no proof found).

    The model's versions of the stub's answer slots replace them in the prefix (module doc)."""
    code = normalize_newlines(code)
    found = _model_target(code, parts.name)
    if found is None:
        decl = find_target(code)
        if decl is None or decl.assign < 0:
            return None
        found = decl.start, decl.body(code)
    start, body = found
    if not body.strip():
        return None
    prefix, model_prefix = fill_answer_slots(parts.prefix, code[:start])
    helpers = _new_helpers(prefix, model_prefix)
    return splice_body(replace(parts, prefix=prefix), body, helpers, source="block")


def fill_answer_slots(stub_prefix: str, model_prefix: str) -> tuple[str, str]:
    """``(stub prefix with its fillable slots replaced by the model's declarations of the same full
    names, rest of the model prefix)``; both unchanged when there is nothing to fill.

    New commands the model wrote before such a declaration (an auxiliary ``def`` its answer uses)
    move with it, in front of the slot; what follows it stays for :func:`_new_helpers`."""
    if "sorry" not in stub_prefix:
        return stub_prefix, model_prefix
    stub_sf = parse(stub_prefix)
    slots = {d.name: d for d in stub_sf.declarations if d.name and may_fill(stub_sf, d)}
    if not slots:
        return stub_prefix, model_prefix
    stub_edits: list[tuple[int, int, str]] = []
    model_cuts: list[tuple[int, int, str]] = []
    taken = 0  # model text up to here has moved into the stub prefix
    for decl in _named_declarations(parse(model_prefix)):
        slot = slots.pop(decl.name or "", None)
        if slot is None:
            continue
        before = _new_helpers(stub_prefix, model_prefix[taken : decl.start])
        moved = model_prefix[decl.start : decl.end]
        stub_edits.append((slot.start, slot.end, f"{before}\n\n{moved}" if before else moved))
        model_cuts.append((taken, decl.end, ""))
        taken = decl.end
    return _apply(stub_prefix, stub_edits), _apply(model_prefix, model_cuts)


def _named_declarations(sf: SourceFile) -> list[Declaration]:
    return [d for d in sf.declarations if d.name]


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def _token_text(text: str) -> str:
    """The code tokens of ``text`` joined by single spaces (comments and layout dropped)."""
    return " ".join(t.text for t in tokenize(text)[0])


def _new_helpers(stub_prefix: str, model_prefix: str) -> str:
    """Top-level commands the model wrote before its target that the stub does not already have."""
    known = f" {_token_text(stub_prefix)} "
    kept: list[str] = []
    for chunk in top_level_chunks(model_prefix):
        if not normalize_ws(mask_comments(chunk)):
            continue  # comments only
        flat = _token_text(chunk)
        if flat.startswith("import ") or f" {flat} " in known:
            continue
        kept.append(chunk.strip("\n"))
    return "\n\n".join(kept)


def extract(
    text: str, stub: str, *, rule: Rule = "last_block", continuation: bool = False, target: str | None = None
) -> Candidate | None:
    """The candidate file for raw model ``text`` answering the sorry-stub ``stub``."""
    parts = split_target(stub, target)
    if continuation:
        if continuation_body(text).strip():
            return splice_continuation(parts, text)
        return None
    block = kimina_block(text) if rule == "kimina_block" else last_lean_block(text)
    if block is None and rule == "kimina_block":
        block = last_lean_block(text)
    if block is None:
        return None
    if find_target(block) is None and _model_target(normalize_newlines(block), parts.name) is None:
        # a bare tactic block: treat it as the proof body
        stripped = block.strip()
        if not stripped:
            return None
        if stripped.startswith("by"):
            return splice_body(parts, " " + stripped)
        return splice_tactics(parts, block)
    return splice_file(parts, block)
