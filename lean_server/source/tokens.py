"""A Lean 4 tokenizer in pure Python, driven by one compiled regular expression.

It follows Lean's own lexical rules where they matter for auditing a proof:

- nested block comments ``/- … /- … -/ … -/`` (doc comments ``/--`` and ``/-!`` included) and
  line comments ``--``;
- string literals with escapes, raw strings ``r"…"`` / ``r#"…"#``, and interpolated strings
  ``s!"…{…}…"`` (a string inside the braces does not end the literal);
- char literals (``'a'``, ``'\\n'``, ``'\\x41'``): a ``'`` only starts one at the start of a token,
  so ``h'`` and ``f''`` stay identifiers;
- identifiers with Lean's letter-like Unicode ranges (Greek except ``λ Π Σ``, letter-like symbols
  such as ``ℕ``), subscripts (``h₁``), the trailing ``'`` ``!`` ``?`` characters, dotted names and
  ``«…»`` parts;
- numeric literals (decimal, scientific, ``0x`` / ``0b`` / ``0o``).

Positions are Lean's: 1-based lines, 0-based columns counted in codepoints.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Literal

TokenKind = Literal["ident", "keyword_hash", "number", "string", "char", "name_lit", "symbol"]
CommentKind = Literal["line", "block", "doc", "moddoc"]

# Lean's `isLetterLike` (Init/Meta): Greek (without λ, Π, Σ), Coptic, Greek extended,
# letter-like symbols (ℕ ℝ …) and the mathematical alphanumeric block.
_LETTER_LIKE = (
    "\u03b1-\u03ba\u03bc-\u03c9"
    "\u0391-\u039f\u03a1\u03a2\u03a4-\u03a9"
    "\u03ca-\u03fb"
    "\u1f00-\u1ffe"
    "\u2100-\u214f"
    "\U0001d49c-\U0001d59f"
)
# Lean's `isSubScriptAlnum`.
_SUBSCRIPT = "\u2080-\u2089\u2090-\u209c\u1d62-\u1d6a\u2c7c"
_ID_FIRST = f"A-Za-z_{_LETTER_LIKE}"
_ID_REST = f"{_ID_FIRST}0-9'!?{_SUBSCRIPT}"
_ID_PART = f"(?:[{_ID_FIRST}][{_ID_REST}]*|«[^»]*»)"
IDENT_RE = re.compile(f"{_ID_PART}(?:\\.{_ID_PART})*")

# Multi-character symbols worth keeping whole (longest first inside each alternation).
_MULTI_SYMBOLS = (
    "<;>",
    "<->",
    "...",
    ":=",
    "=>",
    "->",
    "<-",
    "@[",
    "..",
    "::",
    "<=",
    ">=",
    "!=",
    "==",
    "&&",
    "||",
    "/\\",
    "\\/",
    "++",
    "|>.",
    "|>",
    "<|",
    ">>=",
    "^^",
)

_MASTER = re.compile(
    "|".join(
        (
            r"(?P<ws>\s+)",
            r"(?P<block>/-)",
            r"(?P<line>--[^\n]*)",
            r'(?P<interp>(?:s|m|f)!")',
            r'(?P<raw>r#*")',
            r'(?P<string>"(?:[^"\\]|\\.)*")',
            r"(?P<char>'(?:\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)|[^\\'\n])')",
            r"(?P<number>0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)",
            f"(?P<ident>{IDENT_RE.pattern})",
            r"(?P<hash>#[A-Za-z_][A-Za-z_0-9]*)",
            f"(?P<namelit>`{{1,2}}{IDENT_RE.pattern})",
            "(?P<symbol>" + "|".join(re.escape(s) for s in _MULTI_SYMBOLS) + r"|.)",
        )
    ),
    re.DOTALL,
)
_COMMENT_DELIM = re.compile(r"/-|-/")
_INTERP_STOP = re.compile(r'["\\{}]')
_PLAIN_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NEWLINE = re.compile(r"\n")


@dataclass(frozen=True, slots=True)
class Token:
    """One token of code (comments and whitespace are not tokens)."""

    kind: TokenKind
    text: str
    start: int
    end: int
    line: int
    column: int


@dataclass(frozen=True, slots=True)
class Comment:
    kind: CommentKind
    text: str
    start: int
    end: int
    line: int
    column: int


class LineIndex:
    """Offset → (1-based line, 0-based codepoint column)."""

    __slots__ = ("_starts",)

    def __init__(self, text: str) -> None:
        self._starts = [0, *(m.end() for m in _NEWLINE.finditer(text))]

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect_right(self._starts, offset)
        return line, offset - self._starts[line - 1]

    def line_start(self, line: int) -> int:
        return self._starts[line - 1]


def _block_comment_end(text: str, start: int) -> int:
    """End offset of the nested block comment opening at ``start`` (end of text if unclosed)."""
    depth = 1
    pos = start + 2
    search = _COMMENT_DELIM.search
    while depth:
        m = search(text, pos)
        if m is None:
            return len(text)
        depth += 1 if m.group() == "/-" else -1
        pos = m.end()
    return pos


def _interpolated_end(text: str, start: int) -> int:
    """End offset of an interpolated string whose opening quote is at ``start``."""
    depth = 0
    pos = start + 1
    n = len(text)
    while pos < n:
        m = _INTERP_STOP.search(text, pos)
        if m is None:
            return n
        c = m.group()
        pos = m.end()
        if c == "\\":
            pos += 1
        elif c == "{":
            depth += 1
        elif c == "}":
            depth = max(0, depth - 1)
        elif depth == 0:
            return pos
        else:
            inner = _PLAIN_STRING.match(text, m.start())
            pos = inner.end() if inner else n
    return n


def _raw_string_end(text: str, start: int, hashes: int) -> int:
    closing = '"' + "#" * hashes
    idx = text.find(closing, start)
    return len(text) if idx < 0 else idx + len(closing)


def tokenize(text: str) -> tuple[list[Token], list[Comment]]:
    """Code tokens and comments of ``text``, in order."""
    tokens: list[Token] = []
    comments: list[Comment] = []
    starts = [0, *(m.end() for m in _NEWLINE.finditer(text))]
    n = len(text)
    pos = 0
    line_idx = 0  # index into starts of the line holding `pos`
    nlines = len(starts)
    match = _MASTER.match
    while pos < n:
        m = match(text, pos)
        if m is None:  # pragma: no cover - the `.` alternative always matches
            break
        group = m.lastgroup
        end = m.end()
        if group == "ws":
            pos = end
            continue
        while line_idx + 1 < nlines and starts[line_idx + 1] <= pos:
            line_idx += 1
        line, column = line_idx + 1, pos - starts[line_idx]
        if group == "block":
            end = _block_comment_end(text, pos)
            body = text[pos:end]
            kind: CommentKind = "doc" if body.startswith("/--") else "moddoc" if body.startswith("/-!") else "block"
            comments.append(Comment(kind, body, pos, end, line, column))
        elif group == "line":
            comments.append(Comment("line", m.group(), pos, end, line, column))
        elif group == "interp":
            end = _interpolated_end(text, end - 1)
            tokens.append(Token("string", text[pos:end], pos, end, line, column))
        elif group == "raw":
            end = _raw_string_end(text, end, end - pos - 2)
            tokens.append(Token("string", text[pos:end], pos, end, line, column))
        elif group == "string":
            tokens.append(Token("string", m.group(), pos, end, line, column))
        elif group == "char":
            tokens.append(Token("char", m.group(), pos, end, line, column))
        elif group == "number":
            tokens.append(Token("number", m.group(), pos, end, line, column))
        elif group == "ident":
            tokens.append(Token("ident", m.group(), pos, end, line, column))
        elif group == "hash":
            tokens.append(Token("keyword_hash", m.group(), pos, end, line, column))
        elif group == "namelit":
            tokens.append(Token("name_lit", m.group(), pos, end, line, column))
        else:
            sym = m.group()
            if sym == '"':  # unterminated string: the rest of the file
                end = n
                sym = text[pos:]
                tokens.append(Token("string", sym, pos, end, line, column))
            else:
                tokens.append(Token("symbol", sym, pos, end, line, column))
        pos = end
    return tokens, comments
