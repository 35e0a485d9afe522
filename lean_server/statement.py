"""Statement match: does a candidate prove exactly the stub's target theorem?

The stub is a whole checkable file (header, preamble, target ``… := by sorry``). The candidate
passes when:

- the target (the stub's last ``theorem``/``lemma`` whose body is ``sorry``; else its last
  declaration of any kind with a ``sorry`` body, e.g. ProofNet's ``def … : CommGroup G := by sorry``;
  or the name given) is declared exactly once in the candidate, under the same full name;
- with the same kind (``lemma`` and ``theorem`` count as the same kind: Mathlib's ``lemma`` is a
  macro for ``theorem``), the same ``private``/``protected`` modifiers, and the same binders and
  type token for token, after dropping whitespace and comments and after normalising notations
  Lean itself treats as the same (:data:`NOTATION_SYNONYMS`; ``≠``/``!=`` and ``¬``/``!`` are *not*
  synonyms: ``!=`` and ``!`` are ``Bool`` operations; ``ℕ ℤ ℚ ℝ ℂ`` are Mathlib notations for
  ``Nat Int Rat Real Complex``; ``∑ x in s, f`` is ``∑ x ∈ s, f``), universe variables renamed by
  order of appearance;
- in the same context: the same namespace, the same opened namespaces (``open A B`` ≡ ``open B A``),
  the same ``… in`` prefixes (resource options such as ``maxHeartbeats … in`` aside) and the same
  statement-affecting global options (options that only bound resources are ignored here; the
  legality tier polices them);
- every other command of the stub before its target (definitions, ``variable``s, instances,
  axioms, notations …) appears unchanged in the candidate, before the target. A prerequisite whose
  body is ``sorry`` may receive a body when it is a ``theorem``/``lemma`` (a proof obligation) or an
  answer slot whose name ends in ``_solution`` (PutnamBench ``abbrev putnam_…_solution : T := sorry``):
  its kind, signature, modifiers and attributes must stay the same (the body is the candidate's; a
  ``sorry`` left in it is the legality tier's ``sorry``). Other ``sorry`` definitions must stay as they
  are. Every named prerequisite must also keep its context (namespace, ``open``s, options, ``… in``
  prefixes): ``open Foo in def f …`` can change what an unchanged ``def f`` means.
- no new declaration before the target reuses a name the statement mentions (a fresh ``pow``,
  ``Nat.Prime`` …), and no declaration of the stub is declared twice.

Rule ids: ``target_missing``, ``target_duplicated``, ``target_kind_changed``,
``target_modifiers_changed``, ``statement_changed`` (at the first differing token),
``statement_context_changed``, ``prerequisite_missing``, ``prerequisite_changed``,
``prerequisite_moved``, ``duplicate_declaration``, ``redefines_statement_name``, and
``stub_without_target`` (the stub itself is unusable).

A candidate without any ``import`` inherits the stub's header context (a header-less body checked
in the stub's environment); a header-less stub (a bare ``theorem … := by sorry``) is read in the
candidate's header. A stub without any ``sorry`` body targets its last ``theorem``/``lemma`` that
has no body at all (``theorem t : P :=``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from lean_server.source import Declaration, SourceFile, Span, Token
from lean_server.source.keywords import SCOPE_KINDS
from lean_server.verdict import Violation

NOTATION_SYNONYMS: dict[str, str] = {
    "λ": "fun",
    "↦": "=>",
    "→": "->",
    "∀": "forall",
    "∃": "exists",
    "≤": "<=",
    "≥": ">=",
    "↔": "<->",
    "∧": "/\\",
    "∨": "\\/",
    "$": "<|",
    # Mathlib's `notation "ℕ" => Nat` and friends
    "ℕ": "Nat",
    "ℤ": "Int",
    "ℚ": "Rat",
    "ℝ": "Real",
    "ℂ": "Complex",
}
KIND_SYNONYMS: dict[str, str] = {"lemma": "theorem"}
# Options that bound resources or printing only: they do not change what a statement means.
RESOURCE_OPTION_PREFIXES: tuple[str, ...] = (
    "maxHeartbeats",
    "maxRecDepth",
    "synthInstance.maxHeartbeats",
    "synthInstance.maxSize",
    "maxSynthPendingDepth",
    "exponentiation.threshold",
    "pp.",
    "linter.",
    "trace.",
    "profiler",
    "diagnostics",
)
ANSWER_SUFFIX = "_solution"
_BINDER_INTROS = frozenset(
    {"∀", "forall", "∃", "exists", "∃!", "fun", "λ", "∑", "∏", "⨆", "⨅", "⋃", "⋂", "∫", "Σ", "Π"}
)
_BINDER_STOPS = frozenset({",", "=>", "↦", ":", "∈", "in", "|", ")", "∉", "<", "≤", ">", "≥", "⊆", "≠", "∣"})


def normalize(texts: Iterable[str]) -> tuple[str, ...]:
    """Token texts with notation synonyms mapped to one spelling."""
    get = NOTATION_SYNONYMS.get
    return tuple(get(t, t) for t in texts)


def is_resource_option(name: str) -> bool:
    return any(
        name == p or name.startswith(p if p.endswith(".") else p + ".") or name == p.rstrip(".")
        for p in RESOURCE_OPTION_PREFIXES
    )


def _prefix_is_resource_option(prefix: str) -> bool:
    parts = prefix.split()
    return len(parts) >= 2 and parts[0] == "set_option" and is_resource_option(parts[1])


def is_sorry_body(sf: SourceFile, decl: Declaration) -> bool:
    return sf.token_texts(decl.body) in (["sorry"], ["by", "sorry"])


def find_target(sf: SourceFile, name: str | None = None) -> Declaration | None:
    """The stub's target declaration (see module doc)."""
    decls = sf.declarations
    if name is not None:
        named = [d for d in decls if name in (d.name, d.short_name)]
        return named[-1] if named else None
    theorems = [d for d in decls if d.is_theorem and d.name and is_sorry_body(sf, d)]
    if theorems:
        return theorems[-1]
    others = [d for d in decls if d.name and is_sorry_body(sf, d)]
    if others:
        return others[-1]
    # A bare statement (`theorem t : P :=` or no body at all): its last theorem.
    bare = [d for d in decls if d.is_theorem and d.name and not sf.token_texts(d.body)]
    return bare[-1] if bare else None


def _universe_names(sf: SourceFile, decl: Declaration) -> set[str]:
    """Universe variables: declared by ``universe`` commands or in the declaration's ``.{u, v}``."""
    names = {
        t.text
        for c in sf.commands
        if c.kind == "universe"
        for t in sf.tokens[c.keyword_index + 1 : c.tokens.end]
        if t.kind == "ident"
    }
    names.update(t.text for t in sf.tokens[decl.keyword_index + 2 : decl.binders.start] if t.kind == "ident")
    return names


def _big_operator_in(texts: tuple[str, ...]) -> tuple[str, ...]:
    """``∑ x in s, f`` → ``∑ x ∈ s, f``: Mathlib's deprecated spelling expands to the same term."""
    if "in" not in texts:
        return texts
    out: list[str] = []
    open_binder = False
    for t in texts:
        if t in ("∑", "∏"):
            open_binder = True
        elif t == ",":
            open_binder = False
        elif t == "in" and open_binder:
            t = "∈"
            open_binder = False
        out.append(t)
    return tuple(out)


def signature(sf: SourceFile, decl: Declaration) -> tuple[str, ...]:
    """Normalized binders ``:`` type of a declaration; universe variables are renamed by order of
    appearance (``Type u_1`` and ``Type u_2`` state the same thing)."""
    head = sf.token_texts(decl.binders)
    tail = sf.token_texts(decl.type)
    texts = _big_operator_in(normalize([*head, ":", *tail] if decl.type else head))
    universes = _universe_names(sf, decl)
    if not universes:
        return texts
    renamed: dict[str, str] = {}
    return tuple(renamed.setdefault(t, f"?u{len(renamed)}") if t in universes else t for t in texts)


def command_text(sf: SourceFile, cmd: Declaration) -> tuple[str, ...]:
    """Normalized tokens of a whole command (attributes and modifiers included)."""
    return normalize(sf.token_texts(cmd.tokens))


def _violation(rule: str, message: str, tok: Token | None) -> Violation:
    if tok is None:
        return Violation(rule=rule, message=message, line=0, column=0)
    return Violation(rule=rule, message=message, line=tok.line, column=tok.column)


def _first_token(sf: SourceFile, cmd: Declaration) -> Token | None:
    return sf.tokens[cmd.tokens.start] if cmd.tokens else None


def _sig_tokens(sf: SourceFile, decl: Declaration) -> list[Token]:
    toks = sf.tokens[decl.binders.start : decl.binders.end]
    if decl.type:
        toks = toks + sf.tokens[decl.type.start - 1 : decl.type.end]
    return toks


def _first_difference(expected: Sequence[str], got: Sequence[str]) -> int:
    for i, (a, b) in enumerate(zip(expected, got, strict=False)):
        if a != b:
            return i
    return min(len(expected), len(got))


def _header_context(sf: SourceFile) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    opens: list[str] = []
    options: list[tuple[str, str]] = []
    for cmd in sf.header:
        texts = sf.token_texts(Span(cmd.keyword_index + 1, cmd.tokens.end))
        if cmd.kind == "open" and not cmd.prefixes and texts[-1:] != ["in"]:
            opens.append(" ".join(texts))
        elif cmd.kind == "set_option" and len(texts) >= 2 and texts[-1] != "in":
            options.append((texts[0], " ".join(texts[1:])))
    return tuple(opens), tuple(options)


def _context(
    sf: SourceFile, decl: Declaration, inherited: tuple[tuple[str, ...], tuple[tuple[str, str], ...]] | None
) -> tuple[str, tuple[str, ...], tuple[tuple[str, str], ...], tuple[str, ...]]:
    opens = decl.open_context
    options = decl.options_context
    if inherited is not None:
        opens = inherited[0] + opens
        options = inherited[1] + options
    opens = _open_items(opens)
    meaningful_options = tuple(sorted({o for o in options if not is_resource_option(o[0])}))
    prefixes = tuple(p for p in decl.prefixes if not _prefix_is_resource_option(p))
    return decl.namespace, opens, meaningful_options, prefixes


def _open_items(opens: Iterable[str]) -> tuple[str, ...]:
    """Open commands as a sorted set of opened items: ``open A B`` and ``open B A`` are the same."""
    items: set[str] = set()
    for text in opens:
        words = text.split()
        scoped = bool(words) and words[0] == "scoped"
        names = words[1:] if scoped else words
        if names and all(w[:1].isalpha() or w[:1] in "_«" or ord(w[0]) > 127 for w in names):
            items.update(("scoped " if scoped else "") + w for w in names)
        else:
            items.add(text)
    return tuple(sorted(items))


def bound_names(texts: Sequence[str]) -> set[str]:
    """Names a statement binds itself (binder groups, ∀/∃/fun/∑ binders): an approximation."""
    bound: set[str] = set()
    depth = 0
    group_start: list[int] = []
    collecting = False
    for i, t in enumerate(texts):
        if t in ("(", "{", "[", "⦃", "⟨"):
            depth += 1
            group_start.append(i)
        elif t in (")", "}", "]", "⦄", "⟩"):
            depth = max(0, depth - 1)
            if group_start:
                group_start.pop()
        elif t == ":" and group_start:
            # idents between the group's opening bracket and this colon are bound
            for name in texts[group_start[-1] + 1 : i]:
                if name not in ("(", "{", "[", "⦃", "_"):
                    bound.add(name)
        if t in _BINDER_INTROS:
            collecting = True
        elif collecting:
            if t in _BINDER_STOPS:
                collecting = False
            elif t not in ("(", "{", "[", "⦃", "_", ")", "}", "]"):
                bound.add(t)
    return bound


def statement_identifiers(
    stub: SourceFile, target: Declaration, prerequisites: Sequence[Declaration]
) -> set[str]:
    """Last name components of the global identifiers the statement (and its preamble) uses."""
    sig = _sig_tokens(stub, target)
    used = set(normalize(t.text for t in sig if t.kind == "ident")) - bound_names(
        normalize(t.text for t in sig)
    )
    for cmd in prerequisites:
        used.update(
            normalize(t.text for t in stub.tokens[cmd.tokens.start : cmd.tokens.end] if t.kind == "ident")
        )
        if cmd.name:
            used.add(cmd.name)
    return {name.rsplit(".", 1)[-1] for name in used}


def prerequisites(stub: SourceFile, target: Declaration) -> list[Declaration]:
    """Stub commands before the target that the candidate must keep (not header/context commands)."""
    out: list[Declaration] = []
    for cmd in stub.commands:
        if cmd is target:
            break
        if cmd.kind in SCOPE_KINDS:
            continue
        if cmd.kind == "unknown" and not cmd.tokens:
            continue
        out.append(cmd)
    return out


def may_fill(stub: SourceFile, cmd: Declaration) -> bool:
    """Whether the candidate may give the stub's ``cmd`` a body: a ``sorry``-ed theorem/lemma before
    the target (a proof obligation) or a ``sorry``-ed answer slot named ``…_solution``."""
    if not is_sorry_body(stub, cmd):
        return False
    if cmd.is_theorem:
        return True
    return bool(cmd.short_name and cmd.short_name.endswith(ANSWER_SUFFIX))


def match_statement(
    stub: SourceFile, candidate: SourceFile, target_name: str | None = None
) -> list[Violation]:
    """Violations of the statement match (empty when the candidate states the stub's target)."""
    target = find_target(stub, target_name)
    if target is None:
        return [_violation("stub_without_target", "the stub has no sorry-ed target declaration", None)]
    violations: list[Violation] = []
    cand_decls = candidate.declarations
    matches = [d for d in cand_decls if d.name == target.name]
    if not matches:
        return [
            _violation(
                "target_missing",
                f"the target `{target.name}` is not declared (under that full name) in the candidate",
                None,
            )
        ]
    cand_target = matches[0]
    for extra in matches[1:]:
        violations.append(
            _violation(
                "target_duplicated",
                f"`{target.name}` is declared more than once",
                _first_token(candidate, extra),
            )
        )
    target_tok = _first_token(candidate, cand_target)
    if KIND_SYNONYMS.get(cand_target.kind, cand_target.kind) != KIND_SYNONYMS.get(target.kind, target.kind):
        violations.append(
            _violation(
                "target_kind_changed",
                f"`{target.name}` is a `{cand_target.kind}`, the stub has a `{target.kind}`",
                target_tok,
            )
        )
    visibility = {"private", "protected"}
    if set(cand_target.modifiers) & visibility != set(target.modifiers) & visibility:
        violations.append(
            _violation(
                "target_modifiers_changed", f"modifiers of `{target.name}` differ from the stub", target_tok
            )
        )
    expected = signature(stub, target)
    got = signature(candidate, cand_target)
    if expected != got:
        idx = _first_difference(expected, got)
        sig_toks = _sig_tokens(candidate, cand_target)
        tok = sig_toks[idx] if idx < len(sig_toks) else target_tok
        want = expected[idx] if idx < len(expected) else "<end of statement>"
        found = got[idx] if idx < len(got) else "<end of statement>"
        violations.append(
            _violation(
                "statement_changed",
                f"the statement of `{target.name}` differs from the stub: found `{found}` where the stub has `{want}`",
                tok,
            )
        )
    # A header-less side is read in the other side's header.
    cand_inherits = _header_context(stub) if not candidate.imports and stub.imports else None
    stub_inherits = _header_context(candidate) if not stub.imports and candidate.imports else None
    if _context(stub, target, stub_inherits) != _context(candidate, cand_target, cand_inherits):
        violations.append(
            _violation(
                "statement_context_changed",
                f"`{target.name}` is stated under different `open`s, options or `… in` prefixes than in the stub",
                target_tok,
            )
        )
    violations.extend(
        _check_prerequisites(stub, target, candidate, cand_target, (stub_inherits, cand_inherits))
    )
    return violations


_Inherited = tuple[tuple[str, ...], tuple[tuple[str, str], ...]] | None


def _check_prerequisites(
    stub: SourceFile,
    target: Declaration,
    candidate: SourceFile,
    cand_target: Declaration,
    inherited: tuple[_Inherited, _Inherited],
) -> list[Violation]:
    violations: list[Violation] = []
    prereqs = prerequisites(stub, target)
    cand_before: list[Declaration] = []
    for cmd in candidate.commands:
        if cmd is cand_target:
            break
        cand_before.append(cmd)
    by_name: dict[str, list[Declaration]] = {}
    for cmd in candidate.declarations:
        if cmd.name:
            by_name.setdefault(cmd.name, []).append(cmd)
    unnamed = Counter(command_text(candidate, c) for c in cand_before if not c.name)
    before_ids = {id(c) for c in cand_before}
    stub_names: set[str] = set()
    for pre in prereqs:
        if pre.name:
            stub_names.add(pre.name)
            found = by_name.get(pre.name, [])
            if not found:
                violations.append(
                    _violation(
                        "prerequisite_missing", f"the stub's `{pre.name}` is missing from the candidate", None
                    )
                )
                continue
            for dup in found[1:]:
                violations.append(
                    _violation(
                        "duplicate_declaration",
                        f"`{pre.name}` is declared twice",
                        _first_token(candidate, dup),
                    )
                )
            got = found[0]
            tok = _first_token(candidate, got)
            if id(got) not in before_ids:
                violations.append(
                    _violation("prerequisite_moved", f"`{pre.name}` must come before the target", tok)
                )
            if may_fill(stub, pre):
                same = (
                    KIND_SYNONYMS.get(got.kind, got.kind) == KIND_SYNONYMS.get(pre.kind, pre.kind)
                    and signature(candidate, got) == signature(stub, pre)
                    and got.modifiers == pre.modifiers
                    and got.attributes == pre.attributes
                    and got.scope == pre.scope
                )
            else:
                same = command_text(candidate, got) == command_text(stub, pre)
            if not same:
                violations.append(
                    _violation("prerequisite_changed", f"the stub's `{pre.name}` was changed", tok)
                )
            elif _context(stub, pre, inherited[0]) != _context(candidate, got, inherited[1]):
                violations.append(
                    _violation(
                        "prerequisite_changed",
                        f"the stub's `{pre.name}` is stated under different `open`s, options or `… in` "
                        "prefixes than in the stub",
                        tok,
                    )
                )
        else:
            key = command_text(stub, pre)
            if unnamed[key] > 0:
                unnamed[key] -= 1
            else:
                violations.append(
                    _violation(
                        "prerequisite_changed",
                        f"the stub's `{' '.join(key[:8])}…` ({pre.kind}, line {pre.line}) is missing or changed",
                        None,
                    )
                )
    used = statement_identifiers(stub, target, prereqs)
    stub_all_names = {d.name for d in stub.declarations if d.name}
    for cmd in cand_before:
        if not cmd.name or cmd.name in stub_all_names:
            continue
        last = NOTATION_SYNONYMS.get(cmd.name.rsplit(".", 1)[-1], cmd.name.rsplit(".", 1)[-1])
        if last in used:
            violations.append(
                _violation(
                    "redefines_statement_name",
                    f"`{cmd.name}` redefines `{last}`, a name the statement uses",
                    _first_token(candidate, cmd),
                )
            )
    return violations
