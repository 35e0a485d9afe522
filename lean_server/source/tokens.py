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
from typing import Literal, NamedTuple

from lean_server.source.keywords import KEYWORDS

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
# «…» parts stop at a newline and at 256 characters: an unclosed « cannot make lexing quadratic.
_ID_PART = f"(?:[{_ID_FIRST}][{_ID_REST}]*|«[^»\n]{{0,256}}»)"
IDENT_RE = re.compile(f"{_ID_PART}(?:\\.{_ID_PART})*")

_PLAIN_PART = re.compile(f"[{_ID_FIRST}][{_ID_REST}]*")
_NAME_PART = re.compile(f"{_ID_PART}")
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
            r"(?P<block>/-)",
            r"(?P<line>--[^\n]*)",
            r'(?P<interp>(?:s|m|f)!")',
            r'(?P<raw>r#*")',
            r'(?P<string>"(?:[^"\\]|\\.)*")',
            r"(?P<char>'(?:\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)|[^\\'\n])')",
            r"(?P<number>0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)",
            r"(?P<mathtok>ℝ≥0∞|ℝ≥0|ℚ≥0)",  # Mathlib tokens longer than the identifier they start with
            f"(?P<ident>{IDENT_RE.pattern})",
            r"(?P<hash>#[A-Za-z_][A-Za-z_0-9]*)",
            f"(?P<namelit>`{{1,2}}{IDENT_RE.pattern})",
            "(?P<symbol>" + "|".join(re.escape(s) for s in _MULTI_SYMBOLS) + r"|\S)",
        )
    ),
    re.DOTALL,
)
_COMMENT_DELIM = re.compile(r"/-|-/")
_INTERP_STOP = re.compile(r'["\\{}]')
_PLAIN_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NEWLINE = re.compile(r"\n")


class Token(NamedTuple):
    """One token of code (comments and whitespace are not tokens)."""

    kind: TokenKind
    text: str
    start: int
    end: int
    line: int
    column: int


class Comment(NamedTuple):
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
    """Code tokens and comments of ``text``, in order.

    Identifier tokens carry :func:`plain_name` of their text (``«foo»`` reads as ``foo``, as in Lean);
    ``start``/``end`` always index the original text. One ``finditer`` pass does the work (whitespace
    never matches, so it is skipped in C); it restarts only after a nested comment, an interpolated
    or raw string, or an unterminated string, whose ends need a small scanner.
    """
    tokens: list[Token] = []
    comments: list[Comment] = []
    starts = [0, *(m.end() for m in _NEWLINE.finditer(text))]
    append = tokens.append
    n = len(text)
    pos = 0
    while pos < n:
        restart = -1
        for m in _MASTER.finditer(text, pos):
            group = m.lastgroup
            start = m.start()
            line = bisect_right(starts, start)
            column = start - starts[line - 1]
            if group == "ident":
                word = m.group()
                append(
                    Token("ident", plain_name(word) if "«" in word else word, start, m.end(), line, column)
                )
            elif group == "symbol":
                sym = m.group()
                if sym == '"':  # unterminated string: the rest of the file
                    append(Token("string", text[start:], start, n, line, column))
                    restart = n
                    break
                append(Token("symbol", sym, start, m.end(), line, column))
            elif group in _SIMPLE_KINDS:
                append(Token(_SIMPLE_KINDS[group], m.group(), start, m.end(), line, column))
            elif group == "line":
                comments.append(Comment("line", m.group(), start, m.end(), line, column))
            else:
                if group == "block":
                    end = _block_comment_end(text, start)
                    body = text[start:end]
                    kind: CommentKind = (
                        "doc" if body.startswith("/--") else "moddoc" if body.startswith("/-!") else "block"
                    )
                    comments.append(Comment(kind, body, start, end, line, column))
                elif group == "interp":
                    end = _interpolated_end(text, m.end() - 1)
                    append(Token("string", text[start:end], start, end, line, column))
                else:  # raw string
                    end = _raw_string_end(text, m.end(), m.end() - start - 2)
                    append(Token("string", text[start:end], start, end, line, column))
                restart = end
                break
        if restart < 0:
            break
        pos = restart
    return tokens, comments


_SIMPLE_KINDS: dict[str, TokenKind] = {
    "string": "string",
    "char": "char",
    "number": "number",
    "mathtok": "symbol",
    "hash": "keyword_hash",
    "namelit": "name_lit",
}


def plain_name(text: str) -> str:
    """``text`` with needless ``«»`` quotes dropped: ``Lean.«ofReduceBool»`` → ``Lean.ofReduceBool``.

    Lean reads both spellings as the same name; parts that need the quotes (spaces, keywords) keep them.
    """
    if "«" not in text:
        return text
    parts = [m.group() for m in _NAME_PART.finditer(text)]
    out: list[str] = []
    for part in parts:
        if part.startswith("«"):
            inner = part[1:-1]
            if _PLAIN_PART.fullmatch(inner) and inner not in KEYWORDS:
                part = inner
        out.append(part)
    return ".".join(out)
