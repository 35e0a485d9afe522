"""Pure-Python Lean 4 source analysis: tokens, commands, declarations (no Lean needed)."""

from __future__ import annotations

from lean_server.source.declarations import Declaration, SourceFile, Span, parse, theorem_names
from lean_server.source.keywords import DECLARATION_KINDS, HEADER_KINDS, MODIFIERS, SYNTAX_KINDS
from lean_server.source.tokens import Comment, LineIndex, Token, tokenize

__all__ = [
    "DECLARATION_KINDS",
    "HEADER_KINDS",
    "MODIFIERS",
    "SYNTAX_KINDS",
    "Comment",
    "Declaration",
    "LineIndex",
    "SourceFile",
    "Span",
    "Token",
    "parse",
    "theorem_names",
    "tokenize",
]
