"""Lean 4 keyword sets: the one place the analyzer, the statement matcher and the tokenizer read them.

Command words are grouped by what the splitter does with them (declarations, syntax extensions,
header/scope commands, other commands); :data:`KEYWORDS` is every word Lean reads as a keyword,
so a name part spelled like one keeps its ``«»`` quotes.
"""

from __future__ import annotations

DECLARATION_KINDS: frozenset[str] = frozenset(
    {
        "theorem",
        "lemma",
        "def",
        "abbrev",
        "instance",
        "axiom",
        "opaque",
        "example",
        "structure",
        "class",
        "inductive",
        "coinductive",
        "irreducible_def",
        "alias",
    }
)
SYNTAX_KINDS: frozenset[str] = frozenset(
    {
        "macro",
        "macro_rules",
        "syntax",
        "elab",
        "elab_rules",
        "notation",
        "infix",
        "infixl",
        "infixr",
        "prefix",
        "postfix",
        "declare_syntax_cat",
        "simproc",
        "dsimproc",
        "simproc_decl",
        "dsimproc_decl",
        "binder_predicate",
        "unif_hint",
        "declare_simp_like_tactic",
    }
)
# Commands that only set the scope a declaration is read in (imports, namespaces, options ...):
# a stub's prerequisites are its commands other than these.
SCOPE_KINDS: frozenset[str] = frozenset(
    {"import", "prelude", "open", "set_option", "namespace", "section", "end", "universe", "mutual"}
)
HEADER_KINDS: frozenset[str] = SCOPE_KINDS | {"variable", "include", "omit", "export", "attribute"}
OTHER_COMMANDS: frozenset[str] = frozenset(
    {
        "run_cmd",
        "run_elab",
        "run_meta",
        "initialize",
        "builtin_initialize",
        "deriving",
        "add_decl_doc",
        "assert_not_exists",
        "suppress_compilation",
        "unseal",
        "seal",
        "register_option",
        "register_simp_attr",
        "compile_inductive",
        "termination_by_default",
    }
)
MODIFIERS: frozenset[str] = frozenset(
    {"private", "protected", "noncomputable", "unsafe", "partial", "nonrec"}
)
SCOPE_PREFIXES: frozenset[str] = frozenset({"local", "scoped"})
COMMAND_WORDS: frozenset[str] = DECLARATION_KINDS | SYNTAX_KINDS | HEADER_KINDS | OTHER_COMMANDS
# Keywords of terms and tactics.
TERM_KEYWORDS: frozenset[str] = frozenset(
    {
        "fun",
        "by",
        "have",
        "show",
        "from",
        "at",
        "if",
        "then",
        "else",
        "do",
        "let",
        "in",
        "match",
        "with",
        "where",
        "sorry",
        "admit",
        "forall",
        "exists",
        "Type",
        "Sort",
        "Prop",
        "extends",
        "calc",
        "suffices",
        "obtain",
        "this",
        "termination_by",
        "decreasing_by",
    }
)
KEYWORDS: frozenset[str] = COMMAND_WORDS | MODIFIERS | SCOPE_PREFIXES | TERM_KEYWORDS
