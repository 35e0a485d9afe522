"""Light, position-preserving reading of Lean source: comments, top-level commands, theorem heads.

Not a parser: enough to find the declaration to prove, cut it at its `:=`, and put a proof body
back under the original statement. The trust checker (lean_server) is what decides legality.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

_COMMAND_START = re.compile(
    r"^(?:@\[|/--|/-!|theorem\b|lemma\b|def\b|abbrev\b|example\b|instance\b|structure\b|class\b|inductive\b|"
    r"axiom\b|opaque\b|noncomputable\b|private\b|protected\b|partial\b|unsafe\b|nonrec\b|namespace\b|section\b|"
    r"end\b|open\b|variable\b|universe\b|set_option\b|import\b|attribute\b|macro\b|macro_rules\b|syntax\b|"
    r"notation\b|infix\b|infixl\b|infixr\b|prefix\b|postfix\b|elab\b|mutual\b|local\b|scoped\b|#)",
    re.MULTILINE,
)
_THEOREM = re.compile(
    r"(?:@\[[^\]]*\]\s*)?(?:(?:private|protected|noncomputable|nonrec)\s+)*(theorem|lemma)\s+([^\s(:{\[⦃]+)"
)
_SORRY = re.compile(r"(?<![\w.'])(sorry|admit)(?![\w'])")
_OPENERS = "([{⦃⟨"
_CLOSERS = ")]}⦄⟩"


def mask_comments(text: str) -> str:
    """``text`` with comments and string literals replaced by spaces (newlines kept)."""
    out = list(text)
    i, n = 0, len(text)

    def blank(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        if text.startswith("--", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/-", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/-", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("-/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            blank(i, j + 1)
            i = j + 1
        else:
            i += 1
    return "".join(out)


def starts_command(text: str) -> bool:
    """``text`` begins with a top-level command keyword (``theorem``, ``import``, ``open``, ...)."""
    return _COMMAND_START.match(text) is not None


def strip_comments(text: str) -> str:
    masked = mask_comments(text)
    return "".join(c for c, m in zip(text, masked, strict=True) if m != " " or c in " \n\t")


def normalize_ws(text: str) -> str:
    return " ".join(text.split())


def has_sorry(text: str) -> bool:
    return _SORRY.search(mask_comments(text)) is not None


@dataclass(frozen=True)
class Declaration:
    """A top-level theorem/lemma: ``text[start:assign]`` is the head, ``text[assign+2:end]`` the proof."""

    kind: str
    name: str
    start: int
    assign: int  # index of the `:=` that starts the proof (-1 when none)
    end: int

    def head(self, text: str) -> str:
        return text[self.start : self.assign + 2] if self.assign >= 0 else text[self.start : self.end]

    def body(self, text: str) -> str:
        return text[self.assign + 2 : self.end] if self.assign >= 0 else ""


def _command_starts(masked: str) -> list[int]:
    return [m.start() for m in _COMMAND_START.finditer(masked)]


def _find_assign(masked: str, start: int, end: int) -> int:
    depth = 0
    i = start
    while i < end - 1:
        ch = masked[i]
        if ch in _OPENERS:
            depth += 1
        elif ch in _CLOSERS:
            depth = max(0, depth - 1)
        elif ch == ":" and masked[i + 1] == "=" and depth == 0:
            return i
        i += 1
    return -1


def declarations(text: str) -> list[Declaration]:
    """Top-level theorem/lemma declarations (attributes and modifiers included in the span)."""
    masked = mask_comments(text)
    starts = _command_starts(masked)
    out: list[Declaration] = []
    covered = -1
    for k, start in enumerate(starts):
        if start < covered:
            continue  # `theorem` keyword of an attribute line already taken
        m = _THEOREM.match(masked, start)
        if m is None:
            continue
        covered = m.end()
        end = next((nxt for nxt in starts[k + 1 :] if nxt > m.end()), len(text))
        assign = _find_assign(masked, m.end(), end)
        out.append(Declaration(kind=m.group(1), name=m.group(2), start=start, assign=assign, end=end))
    return out


def find_target(text: str, name: str | None = None) -> Declaration | None:
    """The declaration to prove: by name, else the last sorry-ed theorem/lemma, else the last one."""
    decls = declarations(text)
    if name is not None:
        short = name.rsplit(".", 1)[-1]
        for d in reversed(decls):
            if d.name in (name, short) or d.name.endswith("." + short):
                return d
        return None
    sorried = [d for d in decls if d.assign >= 0 and has_sorry(d.body(text))]
    if sorried:
        return sorried[-1]
    return decls[-1] if decls else None


@dataclass(frozen=True)
class StubParts:
    """A sorry-stub cut around its target: ``prefix + head + ' <proof>' + suffix``."""

    prefix: str  # header + preamble before the target declaration
    head: str  # the target declaration up to and including `:=`
    suffix: str  # whatever followed the target's proof (e.g. `end Namespace`)
    name: str

    @property
    def statement(self) -> str:
        """The target declaration as a stub (`... := by sorry`)."""
        return f"{self.head} by sorry"


def split_stub(stub: str, target: str | None = None) -> StubParts:
    text = stub.replace("\r\n", "\n")
    decl = find_target(text, target)
    if decl is None or decl.assign < 0:
        raise ValueError("no theorem/lemma with a `:=` proof found in the statement")
    suffix = text[decl.end :]
    return StubParts(prefix=text[: decl.start], head=decl.head(text), suffix=suffix, name=decl.name)


def normalized_statement(stub: str, target: str | None = None) -> str:
    """Statement text with comments, keyword and name removed and whitespace collapsed."""
    try:
        parts = split_stub(stub, target)
    except ValueError:
        return normalize_ws(strip_comments(stub))
    head = strip_comments(parts.head)
    m = _THEOREM.match(head.lstrip())
    if m is not None:
        head = head.lstrip()[m.end() :]
    head = head.rstrip()
    if head.endswith(":="):
        head = head[:-2]
    return normalize_ws(head)


def top_level_chunks(text: str) -> list[str]:
    """``text`` cut at the start of every top-level command."""
    masked = mask_comments(text)
    starts = _command_starts(masked)
    if not starts or starts[0] != 0:
        starts = [0, *starts]
    bounds = [*starts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds) if text[a:b].strip()]
