"""Sorry-ed theorems of a Lean file: find them, turn them into ProofTasks, write proofs back.

Each task's statement is the file up to that theorem, with its proof replaced by `by sorry`,
proofs found so far filled in, and earlier theorems that are still sorry-ed left out (so their
`sorry` cannot make a later proof fail or pass). Only PASS proofs are ever written back.
"""

from __future__ import annotations

from dataclasses import dataclass

from lean_server.source import parse
from prover.extract import Candidate
from prover.types import ProofTask

_SORRY_TOKENS = frozenset({"sorry", "admit"})


@dataclass(frozen=True)
class SorryTheorem:
    """A theorem/lemma whose proof contains `sorry`; offsets into the file text."""

    name: str  # full name (namespace included)
    short_name: str
    start: int  # first character of the command (attributes included)
    doc_start: int  # start of a doc comment directly above, else == start
    assign: int  # offset of the `:=` before the proof
    end: int  # end of the proof
    line: int


@dataclass(frozen=True)
class FilledProof:
    theorem: SorryTheorem
    candidate: Candidate


def find_sorry_theorems(text: str) -> list[SorryTheorem]:
    """Theorems/lemmas of ``text`` whose proof uses `sorry`/`admit`, in file order."""
    source = parse(text)
    out: list[SorryTheorem] = []
    for cmd in source.commands:
        if not cmd.is_theorem or not cmd.body or cmd.name is None or cmd.short_name is None:
            continue
        body_tokens = source.tokens[cmd.body.start : cmd.body.end]
        if not any(t.text in _SORRY_TOKENS for t in body_tokens):
            continue
        assign_tok = source.tokens[cmd.body.start - 1]
        if assign_tok.text != ":=":
            continue  # equation-compiler style (`| pat => ...`): not handled
        doc_start = cmd.start
        for comment in source.comments:
            if (
                comment.text.startswith("/--")
                and comment.end <= cmd.start
                and not text[comment.end : cmd.start].strip()
            ):
                doc_start = comment.start
        out.append(
            SorryTheorem(
                name=cmd.name,
                short_name=cmd.short_name,
                start=cmd.start,
                doc_start=doc_start,
                assign=assign_tok.start,
                end=cmd.end,
                line=cmd.line,
            )
        )
    return out


def _render(
    text: str, theorems: list[SorryTheorem], filled: dict[str, Candidate], upto: int, *, drop_unsolved: bool
) -> str:
    """``text[:upto]`` with filled proofs written in and (optionally) unsolved sorry-ed theorems left out."""
    pieces: list[str] = []
    pos = 0
    for thm in theorems:
        if thm.start >= upto:
            break
        cand = filled.get(thm.name)
        if cand is not None:
            pieces.append(text[pos : thm.start])
            if cand.helpers:
                pieces.append(_line_endings_of(text, cand.helpers.strip() + "\n\n"))
            pieces.append(text[thm.start : thm.assign + 2] + _line_endings_of(text, cand.body.rstrip()))
            pos = thm.end
        elif drop_unsolved:
            pieces.append(text[pos : thm.doc_start])
            pos = thm.end
    pieces.append(text[pos:upto])
    return "".join(pieces)


def _line_endings_of(text: str, inserted: str) -> str:
    """``inserted`` (LF, as extraction makes it) with the line endings of the file it goes into."""
    return inserted.replace("\n", "\r\n") if "\r\n" in text else inserted


def task_for(
    text: str,
    theorems: list[SorryTheorem],
    theorem: SorryTheorem,
    filled: dict[str, Candidate],
    *,
    file_id: str = "file",
) -> ProofTask:
    """The ProofTask of one sorry-ed theorem, given the proofs found so far."""
    before = _render(text, theorems, filled, theorem.start, drop_unsolved=True)
    head = text[theorem.start : theorem.assign + 2]
    stub = f"{before}{head} by sorry\n"
    return ProofTask(id=f"{file_id}:{theorem.name}", statement=stub, target=theorem.short_name)


def apply_proofs(text: str, filled: dict[str, Candidate]) -> str:
    """``text`` with every proved theorem's proof replaced (helpers inserted above it)."""
    theorems = find_sorry_theorems(text)
    return _render(text, theorems, filled, len(text), drop_unsolved=False)


def tasks_from_text(text: str, *, file_id: str = "file") -> list[ProofTask]:
    """One task per sorry-ed theorem assuming none of the others get proved (for batch use)."""
    theorems = find_sorry_theorems(text)
    return [task_for(text, theorems, t, {}, file_id=file_id) for t in theorems]
