"""Split tokenized Lean 4 source into commands: header commands and declarations.

A command starts at a top-level command keyword (``theorem``, ``def``, ``axiom``, ``#eval``,
``macro``, ``namespace``, ``end``, …), at its attribute block ``@[…]`` or at a modifier
(``private``, ``noncomputable``, ``unsafe``, ``local``, ``scoped`` …) that leads to one. Keywords that
can never occur inside a term or tactic block split commands wherever they are: Lean's parser stops
a term at them, so a bracket left open cannot hide a command from this splitter. ``open`` and
``set_option`` also exist as tactics and terms (``open Nat in simp``), so they start a command only
at column 0 or when no declaration body is open.

A command ending in ``in`` (``open Real in``, ``set_option maxRecDepth 999 in``) is a prefix of the
next one and is kept on it (:attr:`Command.prefixes`).

Lean reads a command wherever one can start, whatever its column, so a command keyword this module
does not know would be read as part of the previous declaration. To stay on the safe side, a
lowercase word at column 0 inside a declaration body (or on a later line of another command) that
is not a known tactic or term word, not inside brackets and not after a token that expects more
(``:=``, ``by``, an operator …) starts a command of kind ``unknown_command`` (see
:func:`_column0_split`); the legality tier rejects such a command before the target.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field
from itertools import pairwise

from lean_server.source.keywords import (
    COLUMN0_COMMANDS,
    COMMAND_WORDS,
    DECLARATION_KINDS,
    HEADER_KINDS,
    KEYWORDS,
    MODIFIERS,
    OTHER_COMMANDS,
    SCOPE_PREFIXES,
    SYNTAX_KINDS,
    TACTIC_WORDS,
    TERM_KEYWORDS,
)
from lean_server.source.tokens import Comment, LineIndex, Token, tokenize

# Keywords that split commands wherever they appear.
_ALWAYS_SPLIT: frozenset[str] = COMMAND_WORDS - {
    "open",
    "set_option",
    "deriving",
}
_OPEN_BRACKETS = {"(": ")", "[": "]", "{": "}", "⟨": "⟩", "⦃": "⦄", "@[": "]", "⟦": "⟧"}
_CLOSE_BRACKETS = frozenset(_OPEN_BRACKETS.values())
_NAMELESS_KINDS = frozenset({"example"})
UNKNOWN_COMMAND = "unknown_command"
_COMMAND_LIKE_WORD = re.compile(r"[a-z][a-z0-9_]*[?!]?")
# Tokens after which the next line continues the same term or tactic.
_CONTINUING_WORDS = TERM_KEYWORDS | frozenset(
    [
        "at",
        "using",
        "generalizing",
        "only",
        "to",
        "as",
        "for",
        "exact",
        "apply",
        "refine",
        "refine'",
        "use",
        "exists",
        "specialize",
        "cases",
        "cases'",
        "rcases",
        "obtain",
        "induction",
        "induction'",
        "unfold",
        "change",
        "convert",
        "set",
        "intro",
        "intros",
        "rintro",
    ]
)
# Closing tokens after which a new command may start.
_CLOSING_SYMBOLS = frozenset({")", "]", "}", "⟩", "⦄", "⟧", "!", "?", "'"})
# What follows a name being bound or assigned, never a command keyword.
_BINDING_FOLLOWERS = frozenset({":=", ",", "=", "=>", ")", "]", "}", "⟩", "|", ":", "←", "<;>", ";", "."})


@dataclass(frozen=True, slots=True)
class Span:
    """Half-open ``[start, end)`` range of token indices into :attr:`SourceFile.tokens`."""

    start: int
    end: int

    def __bool__(self) -> bool:
        return self.end > self.start


@dataclass(slots=True)
class Declaration:
    """One command: a declaration (``theorem``, ``def`` …), a header command, or any other command.

    ``name`` is the full name (current namespace prepended, ``_root_.`` stripped); ``short_name``
    is the name as written. ``binders``, ``type`` and ``body`` are token spans (empty when absent).
    ``line``/``column`` are those of the command's first token (attributes and modifiers included).
    """

    kind: str
    tokens: Span
    keyword_index: int
    line: int
    column: int
    start: int
    end: int
    name: str | None = None
    short_name: str | None = None
    modifiers: tuple[str, ...] = ()
    attributes: tuple[str, ...] = ()
    scope: str | None = None  # "local" / "scoped" prefix
    prefixes: tuple[str, ...] = ()  # normalized `… in` prefix commands
    namespace: str = ""
    open_context: tuple[str, ...] = ()  # normalized open commands in effect
    options_context: tuple[tuple[str, str], ...] = ()  # (option, value) set globally before it
    binders: Span = field(default_factory=lambda: Span(0, 0))
    type: Span = field(default_factory=lambda: Span(0, 0))
    body: Span = field(default_factory=lambda: Span(0, 0))

    @property
    def is_declaration(self) -> bool:
        return self.kind in DECLARATION_KINDS

    @property
    def is_theorem(self) -> bool:
        return self.kind in ("theorem", "lemma")


@dataclass(slots=True)
class SourceFile:
    """A parsed Lean file: tokens, comments and the commands in order."""

    text: str
    tokens: list[Token]
    comments: list[Comment]
    commands: list[Declaration]
    line_index: LineIndex

    @property
    def declarations(self) -> list[Declaration]:
        return [c for c in self.commands if c.is_declaration]

    @property
    def header(self) -> list[Declaration]:
        """Header commands before the first non-header command."""
        out: list[Declaration] = []
        for c in self.commands:
            if c.kind not in HEADER_KINDS:
                break
            out.append(c)
        return out

    @property
    def imports(self) -> list[str]:
        return [
            self.tokens[i].text for c in self.commands if c.kind == "import" for i in _range(c.tokens)[1:2]
        ]

    def token_texts(self, span: Span) -> list[str]:
        return [t.text for t in self.tokens[span.start : span.end]]

    def command_tokens(self, command: Declaration) -> list[Token]:
        return self.tokens[command.tokens.start : command.tokens.end]

    def source_of(self, command: Declaration) -> str:
        return self.text[command.start : command.end]

    def position(self, offset: int) -> tuple[int, int]:
        return self.line_index.position(offset)


def _range(span: Span) -> range:
    return range(span.start, span.end)


def _is_command_start(tokens: list[Token], i: int, in_body: bool) -> bool:
    tok = tokens[i]
    text = tok.text
    if tok.kind == "keyword_hash":
        return True
    if tok.kind == "symbol":
        return text == "@["
    if tok.kind != "ident":
        return False
    if text in _ALWAYS_SPLIT:
        return True
    if text in ("open", "set_option") or text in COLUMN0_COMMANDS:
        return tok.column == 0 or not in_body
    if text == "deriving":
        return i + 1 < len(tokens) and tokens[i + 1].text == "instance"
    if text in MODIFIERS or text in SCOPE_PREFIXES:
        j = i + 1
        window = min(len(tokens), i + 24)  # a real modifier run is short; bounded look-ahead stays linear
        while j < window:
            t = tokens[j].text
            if t in MODIFIERS or t in SCOPE_PREFIXES:
                j += 1
            elif t == "[" and text == "scoped":  # scoped[NS] notation
                j = _skip_brackets(tokens, j, min(len(tokens), j + 16))
            else:
                break
        return j < len(tokens) and tokens[j].kind == "ident" and tokens[j].text in _ALWAYS_SPLIT
    return False


def _skip_brackets(tokens: list[Token], i: int, limit: int | None = None) -> int:
    """Index after the bracket group opening at ``i`` (nesting respected; ``limit`` or the end of
    the tokens if unclosed)."""
    depth = 0
    n = len(tokens) if limit is None else limit
    while i < n:
        t = tokens[i]
        if t.kind == "symbol":
            if t.text in _OPEN_BRACKETS:
                depth += 1
            elif t.text in _CLOSE_BRACKETS:
                depth -= 1
                if depth <= 0:
                    return i + 1
        i += 1
    return n


def _split(tokens: list[Token]) -> list[tuple[int, int]]:
    """Token index ranges of the commands."""
    bounds: list[int] = []
    i = 0
    n = len(tokens)
    in_body = False
    while i < n:
        if _is_command_start(tokens, i, in_body):
            bounds.append(i)
            # Consume the command's prefix (attributes, modifiers) and its keyword.
            j = i
            while j < n:
                t = tokens[j]
                if t.text == "@[":
                    j = _skip_brackets(tokens, j)
                elif t.text in MODIFIERS or t.text in SCOPE_PREFIXES:
                    j += 1
                    if t.text == "scoped" and j < n and tokens[j].text == "[":
                        j = _skip_brackets(tokens, j)
                else:
                    break
            if j >= n:
                break
            kw = tokens[j].text
            j += 1
            if kw == "attribute" and j < n and tokens[j].text == "[":
                j = _skip_brackets(tokens, j)
            elif (
                kw in ("class", "deriving")
                and j < n
                and tokens[j].text in ("inductive", "abbrev", "instance")
            ):
                j += 1
            in_body = (
                kw in DECLARATION_KINDS
                or kw in SYNTAX_KINDS
                or kw.startswith("#")
                or kw in OTHER_COMMANDS
                or kw in COLUMN0_COMMANDS
            )
            i = max(j, i + 1)
            continue
        i += 1
    if not bounds or bounds[0] != 0:
        bounds.insert(0, 0)
    bounds.append(n)
    return [(a, b) for a, b in pairwise(bounds) if b > a]


def _normalized(tokens: list[Token]) -> str:
    return " ".join(t.text for t in tokens)


class _Scope:
    __slots__ = ("kind", "name", "opens", "options")

    def __init__(self, kind: str, name: str) -> None:
        self.kind = kind
        self.name = name
        self.opens: list[str] = []
        self.options: list[tuple[str, str]] = []


def _decl_name_and_sig(tokens: list[Token], kind: str, k: int, end: int) -> tuple[str | None, int]:
    """The written name (or None) and the index where the signature starts."""
    i = k + 1
    if kind in _NAMELESS_KINDS or i >= end:
        return None, i
    if kind == "instance":
        if tokens[i].text == "(" and i + 1 < end and tokens[i + 1].text == "priority":
            i = _skip_brackets(tokens, i, end)
        if i < end and tokens[i].kind == "ident" and tokens[i].text not in ("where", "extends"):
            name = tokens[i].text
            i += 1
        else:
            return None, i
    elif tokens[i].kind == "ident":
        name = tokens[i].text
        i += 1
    else:
        return None, i
    # universe parameters: foo.{u, v}
    if (
        i + 1 < end
        and tokens[i].text == "."
        and tokens[i + 1].text == "{"
        and tokens[i].start == tokens[i - 1].end
    ):
        i = _skip_brackets(tokens, i + 1, end)
    return name, i


_LET_WORDS = frozenset({"let", "letI", "have", "haveI", "set"})


def _is_match_alternative(tokens: list[Token], i: int, end: int) -> bool:
    """Whether the line-leading ``|`` at ``i`` starts ``| pat => …`` (not an absolute value ``|x|``)."""
    for j in range(i + 1, end):
        text = tokens[j].text
        if text == "=>":
            return True
        if text in ("|", ":="):
            return False
    return False


def _signature_spans(tokens: list[Token], sig: int, end: int) -> tuple[Span, Span, Span]:
    """(binders, type, body) spans of a declaration whose signature starts at ``sig``.

    The signature ends at the first ``:=`` at bracket depth 0 that does not belong to a
    ``let``/``have`` inside the type, at ``where``/``extends``/``deriving``, or at a line-leading
    ``| pat =>`` alternative (equation-compiler style).
    """
    depth = 0
    colon = -1
    stop = end
    body_start = end
    pending_lets = 0
    i = sig
    while i < end:
        t = tokens[i]
        text = t.text
        if t.kind == "symbol":
            if text in _OPEN_BRACKETS:
                depth += 1
            elif text in _CLOSE_BRACKETS:
                depth = max(0, depth - 1)
            elif depth == 0:
                if text == ":=":
                    if pending_lets:
                        pending_lets -= 1
                    else:
                        stop, body_start = i, i + 1
                        break
                elif text == ":" and colon < 0:
                    colon = i
                elif (
                    text == "|"
                    and i > sig
                    and tokens[i - 1].line < t.line
                    and _is_match_alternative(tokens, i, end)
                ):
                    stop, body_start = i, i
                    break
        elif depth == 0 and t.kind == "ident":
            if text in ("where", "extends", "deriving"):
                stop, body_start = i, i
                break
            if text in _LET_WORDS and colon >= 0:
                pending_lets += 1
        i += 1
    if colon < 0:
        return Span(sig, stop), Span(stop, stop), Span(body_start, end)
    return Span(sig, colon), Span(colon + 1, stop), Span(body_start, end)


def _attributes(tokens: list[Token], a: int, b: int) -> list[str]:
    """Attribute entries of ``@[…]`` / ``attribute […]`` groups in tokens[a:b], comma separated."""
    out: list[str] = []
    i = a
    while i < b:
        if tokens[i].text in ("@[", "[") and (
            tokens[i].text == "@[" or (i > 0 and tokens[i - 1].text == "attribute")
        ):
            close = _skip_brackets(tokens, i, b)
            depth = 0
            current: list[str] = []
            for t in tokens[i + 1 : close - 1]:
                if t.text in _OPEN_BRACKETS:
                    depth += 1
                elif t.text in _CLOSE_BRACKETS:
                    depth -= 1
                if t.text == "," and depth == 0:
                    out.append(" ".join(current))
                    current = []
                else:
                    current.append(t.text)
            if current:
                out.append(" ".join(current))
            i = close
        else:
            i += 1
    return out


def parse(text: str) -> SourceFile:
    """Tokenize and split ``text`` into commands with names, namespaces and contexts."""
    tokens, comments = tokenize(text)
    line_index = LineIndex(text)
    scopes: list[_Scope] = [_Scope("root", "")]
    commands: list[Declaration] = []
    pending_prefixes: list[str] = []
    ranges = _split(tokens)
    column0_words = [i for i, t in enumerate(tokens) if not t.column and _command_like_word(t)]
    split_starts: set[int] = set()
    index = 0
    while index < len(ranges):
        a, b = ranges[index]
        index += 1
        first = tokens[a]
        k = a
        modifiers: list[str] = []
        scope_prefix: str | None = None
        while k < b:
            t = tokens[k].text
            if t == "@[":
                k = _skip_brackets(tokens, k, b)
            elif t in MODIFIERS:
                modifiers.append(t)
                k += 1
            elif t in SCOPE_PREFIXES:
                scope_prefix = t
                k += 1
                if t == "scoped" and k < b and tokens[k].text == "[":
                    k = _skip_brackets(tokens, k, b)
            else:
                break
        if k >= b:
            k = a
        kw_tok = tokens[k]
        kind = kw_tok.text if kw_tok.kind in ("ident", "keyword_hash") else "unknown"
        kw_last = k
        if kind == "class" and k + 1 < b and tokens[k + 1].text in ("inductive", "abbrev"):
            kind = tokens[k + 1].text
            kw_last = k + 1
        elif kind == "deriving":
            kind = "deriving_instance"
        elif (
            kind not in _ALWAYS_SPLIT
            and not kind.startswith("#")
            and kind not in ("open", "set_option")
            and kind not in COLUMN0_COMMANDS
        ):
            kind = "unknown"
            if a in split_starts or (a == 0 and _command_like_word(first)):
                kind = UNKNOWN_COMMAND
        # A column-0 word that may be an unknown command ends this command (see module doc).
        scan_from = k + 1
        if kind in DECLARATION_KINDS:
            short, sig = _decl_name_and_sig(tokens, kind, kw_last, b)
            spans = _signature_spans(tokens, sig, b)
            scan_from = spans[2].start if spans[2] else b
        cut = _column0_split(tokens, scan_from, b, first.line, column0_words)
        if cut > a:
            ranges.insert(index, (cut, b))
            split_starts.add(cut)
            b = cut
            if kind in DECLARATION_KINDS:
                spans = _signature_spans(tokens, sig, b)
        last_is_in = b - a >= 2 and tokens[b - 1].text == "in" and kind not in DECLARATION_KINDS
        namespace = ".".join(s.name for s in scopes if s.name)
        cmd = Declaration(
            kind=kind,
            tokens=Span(a, b),
            keyword_index=k,
            line=first.line,
            column=first.column,
            start=first.start,
            end=tokens[b - 1].end,
            modifiers=tuple(modifiers),
            attributes=tuple(_attributes(tokens, a, b if kind == "attribute" else k)),
            scope=scope_prefix,
            prefixes=tuple(pending_prefixes),
            namespace=namespace,
            open_context=tuple(o for s in scopes for o in s.opens),
            options_context=tuple(o for s in scopes for o in s.options),
        )
        if last_is_in:
            pending_prefixes.append(_normalized(tokens[a:b]))
        else:
            pending_prefixes = []
        if kind in DECLARATION_KINDS:
            cmd.short_name = short
            if short is not None:
                if short.startswith("_root_."):
                    cmd.name = short[len("_root_.") :]
                else:
                    cmd.name = f"{namespace}.{short}" if namespace else short
            cmd.binders, cmd.type, cmd.body = spans
        elif not last_is_in:
            _update_scopes(scopes, kind, tokens[k + 1 : b], cmd)
        commands.append(cmd)
    return SourceFile(text=text, tokens=tokens, comments=comments, commands=commands, line_index=line_index)


def _update_scopes(scopes: list[_Scope], kind: str, args: list[Token], cmd: Declaration) -> None:
    if kind == "namespace" and args:
        for part in args[0].text.split("."):
            scopes.append(_Scope("namespace", part))
    elif kind == "section":
        name = next((t.text for t in args if t.kind == "ident" and t.text != "section"), "")
        scopes.append(_Scope("section", ""))
        scopes[-1].kind = f"section {name}".strip()
    elif kind == "mutual":
        scopes.append(_Scope("mutual", ""))
    elif kind == "end":
        name = args[0].text if args and args[0].kind == "ident" else ""
        pops = len(name.split(".")) if name and scopes[-1].kind == "namespace" else 1
        for _ in range(pops):
            if len(scopes) > 1:
                scopes.pop()
    elif kind == "open":
        scopes[-1].opens.append(_normalized(args))
    elif kind == "set_option" and len(args) >= 2:
        scopes[-1].options.append((args[0].text, " ".join(t.text for t in args[1:])))


def _command_like_word(tok: Token) -> bool:
    """A lowercase ASCII word that is no keyword, tactic or term word this module knows."""
    text = tok.text
    return (
        tok.kind == "ident"
        and _COMMAND_LIKE_WORD.fullmatch(text) is not None
        and text not in TACTIC_WORDS
        and text not in KEYWORDS
    )


def _column0_split(tokens: list[Token], start: int, end: int, first_line: int, candidates: list[int]) -> int:
    """Index of the first column-0 word in tokens[start:end] that may start an unknown command
    (-1 if none): outside brackets, on a later line than the command's first token, after a token
    that ends a term, and not followed by what follows a bound or assigned name. ``candidates``
    (sorted indices of the file's column-0 command-like words) lets most commands skip the scan."""
    k = bisect_left(candidates, start)
    if k == len(candidates) or candidates[k] >= end:
        return -1
    depth = 0
    for i in range(start, end):
        t = tokens[i]
        if t.kind == "symbol":
            if t.text in _OPEN_BRACKETS:
                depth += 1
            elif t.text in _CLOSE_BRACKETS:
                depth = max(0, depth - 1)
            continue
        if t.column or depth or t.line == first_line or not _command_like_word(t):
            continue
        prev = tokens[i - 1]
        if prev.kind == "symbol" and prev.text not in _CLOSING_SYMBOLS:
            continue
        if prev.kind == "ident" and prev.text in _CONTINUING_WORDS:
            continue
        if i + 1 < end and tokens[i + 1].line == t.line and tokens[i + 1].text in _BINDING_FOLLOWERS:
            continue
        return i
    return -1


def theorem_names(text: str) -> list[str]:
    """Full names of the named declarations of ``text`` (for ``#print axioms``), in order, once each."""
    seen: dict[str, None] = {}
    for cmd in parse(text).commands:
        if cmd.name and cmd.kind in DECLARATION_KINDS:
            seen.setdefault(cmd.name, None)
    return list(seen)
