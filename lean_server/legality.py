"""Legality rules: source-level checks that catch reward hacking (no Lean needed).

Each finding is a :class:`~lean_server.verdict.Violation` with a stable rule id:

==========================  ==========================================================================
rule                        what it catches
==========================  ==========================================================================
``exit_command``            ``#exit`` (swallows the rest of the file)
``new_axiom``               an ``axiom`` the stub does not have
``new_opaque``              an ``opaque`` the stub does not have (can hide an axiom)
``syntax_extension``        ``macro``, ``macro_rules``, ``syntax``, ``elab``, ``elab_rules``, ``notation``,
                            Mathlib's ``notation3``, ``infix``/``infixl``/``infixr``/``prefix``/``postfix``,
                            ``declare_syntax_cat``, ``simproc``/``dsimproc``, ``binder_predicate``,
                            ``unif_hint`` (``local``/``scoped`` forms included)
``unsafe``                  ``unsafe`` (modifier or term)
``partial``                 ``partial`` definitions
``implemented_by``          ``@[implemented_by …]`` / ``attribute [implemented_by …]``
``extern``                  ``@[extern …]``
``forbidden_attribute``     attributes that install elaboration-time code (``tactic``, ``command_elab``,
                            ``term_elab``, ``macro``, ``init``, ``builtin_*``, ``norm_num``/``positivity``
                            extensions, ``simproc`` …)
``new_variable``            ``variable``/``variable?``/``include``/``omit`` the stub does not have
``duplicate_declaration``   a name declared twice (candidate-internal)
``local_instance``          ``local``/``scoped`` instances, ``attribute [local instance]`` …
``anonymous_instance``      an ``instance`` without a name the stub does not have
``new_instance``            a named instance (or ``attribute [instance]``, ``deriving instance``) before the
                            target: it can change how the statement elaborates
``banned_option``           a ``set_option`` in ``policy.banned_options`` (anywhere, ``… in`` included)
``heartbeats_override``     ``maxHeartbeats`` raised beyond what the stub or ``policy.max_heartbeats`` allow
``option_not_allowed``      a global ``set_option`` the stub does not set and that is not a resource/printing
                            option (``autoImplicit`` …)
``eval_command``            ``#eval``, ``run_cmd``, ``run_tac``, ``run_elab``, ``run_meta``, ``by_elab``,
                            ``initialize``/``builtin_initialize`` and the ``register_*`` commands built on them,
                            ``#guard``, ``#print`` tricks (unless ``policy.allow_eval_commands``);
                            ``#print axioms``, ``#check``, ``#reduce`` … are allowed
``suppressed_messages``     ``#guard_msgs … in`` put on a declaration: it removes that declaration's errors
                            from the output, so a failed helper or target would look clean
``unknown_command``         a lowercase word at column 0 the analyzer cannot tell from a command (see
                            :mod:`lean_server.source.declarations`), before the target
``prelude``                 a ``prelude`` file (no ``Init``: core definitions can be replaced)
``open_private``            ``open private``
``export_command``          ``export`` (aliases can capture names)
``import_not_allowed``      an import outside ``policy.allowed_imports`` (module prefixes), else the stub's
``sorry``                   ``sorry``, ``admit`` or ``sorryAx`` (unless ``policy.allow_sorry``)
``search_tactic``           ``apply?``, ``exact?``, ``rw?``, ``hint``, ``library_search``, ``rw_search``
                            (unless ``policy.allow_search_tactics``)
``native_evaluation``       ``native_decide``, ``decide +native``, ``native := true``, ``bv_decide``,
                            ``Lean.ofReduceBool``/``ofReduceNat``/``trustCompiler`` (unless ``policy.allow_native``)
==========================  ==========================================================================

Commands after the target cannot change how it is stated: ``deriving instance``, named instances and
unknown column-0 commands are allowed there. Global ``attribute [simp]``/``[-simp]`` changes are allowed
anywhere: they change what ``simp`` tries, not what a statement means, and every proof is still checked
by the kernel. ``add_decl_doc``, ``irreducible_def``, ``proof_wanted``, ``recall`` and the Aesop/simps
registration commands are allowed helpers.

A command that is token-for-token one of the stub's own commands is the stub's, not new: its
axioms, instances, ``variable``s, notations and options are allowed. ``sorry`` is flagged
everywhere, the stub's placeholders included (they are the holes to fill).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from lean_server.policy import Policy
from lean_server.source import SYNTAX_KINDS, Declaration, SourceFile, Token
from lean_server.source.declarations import UNKNOWN_COMMAND
from lean_server.source.keywords import INITIALIZE_COMMANDS
from lean_server.statement import command_text, find_target, is_resource_option
from lean_server.verdict import Violation

DEFAULT_MAX_HEARTBEATS = 200000
SORRY_WORDS = frozenset({"sorry", "admit", "sorryAx"})
SEARCH_TACTICS = frozenset({"apply?", "exact?", "rw?", "library_search", "rw_search", "hint"})
NATIVE_IDENTS = frozenset(
    {
        "native_decide",
        "bv_decide",
        "Lean.ofReduceBool",
        "Lean.ofReduceNat",
        "Lean.trustCompiler",
        "ofReduceBool",
        "ofReduceNat",
        "trustCompiler",
        "Lean.reduceBool",
        "Lean.reduceNat",
    }
)
EVAL_WORDS = INITIALIZE_COMMANDS | {"run_cmd", "run_tac", "run_elab", "run_meta", "by_elab"}
EVAL_HASH = frozenset({"#eval", "#guard", "#exec", "#run"})
HARMLESS_HASH = frozenset(
    {
        "#check",
        "#check_failure",
        "#reduce",
        "#synth",
        "#help",
        "#guard_msgs",
        "#lint",
        "#where",
        "#adaptation_note",
        "#find_home",
        "#simp",
        "#norm_num",
        "#conv",
        "#whnf",
        "#exit",  # has its own rule
        "#print",  # checked separately
    }
)
FORBIDDEN_ATTRIBUTES = frozenset(
    {
        "tactic",
        "command_elab",
        "term_elab",
        "macro",
        "init",
        "builtin_init",
        "builtin_tactic",
        "builtin_term_elab",
        "builtin_command_elab",
        "builtin_macro",
        "env_extension",
        "command_parser",
        "term_parser",
        "tactic_parser",
        "norm_num",
        "positivity",
        "simproc",
        "dsimproc",
        "builtin_simproc",
        "builtin_dsimproc",
        "delab",
        "app_unexpander",
        "command_code_action",
        "code_action_provider",
        "hole_code_action",
        "env_linter",
        "linter",
    }
)
_TACTIC_LEADERS = frozenset(
    {"by", ";", "<;>", "·", ".", "(", "=>", "then", "else", "try", "first", "|", "<|>"}
)
_VARIABLE_KINDS = frozenset({"variable", "variable?", "include", "omit"})


def _v(rule: str, message: str, tok: Token) -> Violation:
    return Violation(rule=rule, message=message, line=tok.line, column=tok.column)


def _import_allowed(module: str, allowed: Iterable[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in allowed)


def _option_banned(name: str, banned: Iterable[str]) -> bool:
    return any(name == b or name.startswith(b + ".") or b in name for b in banned)


def _int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


class _Context:
    """What the stub allows: its own commands and options."""

    def __init__(self, stub: SourceFile | None, policy: Policy) -> None:
        self.policy = policy
        self.stub = stub
        self.stub_commands: Counter[tuple[str, ...]] = Counter()
        self.stub_options: dict[str, set[str]] = {}
        self.stub_names: set[str] = set()
        self.allowed_imports: tuple[str, ...] | None = policy.allowed_imports
        if stub is not None:
            target = find_target(stub)
            for cmd in stub.commands:
                if cmd is not target:
                    self.stub_commands[command_text(stub, cmd)] += 1
                if cmd.name:
                    self.stub_names.add(cmd.name)
            for i, tok in enumerate(stub.tokens):
                if tok.text == "set_option" and i + 2 < len(stub.tokens):
                    self.stub_options.setdefault(stub.tokens[i + 1].text, set()).add(stub.tokens[i + 2].text)
            if self.allowed_imports is None and stub.imports:
                self.allowed_imports = tuple(stub.imports)


def check_legality(candidate: SourceFile, stub: SourceFile | None, policy: Policy) -> list[Violation]:
    """Every legality violation of ``candidate`` (see the module table)."""
    ctx = _Context(stub, policy)
    violations: list[Violation] = []
    target = find_target(stub) if stub is not None else None
    target_index = len(candidate.commands)
    if target is not None:
        for i, cmd in enumerate(candidate.commands):
            if cmd.name == target.name:
                target_index = i
                break
    seen_names: dict[str, Declaration] = {}
    remaining = Counter(ctx.stub_commands)
    for index, cmd in enumerate(candidate.commands):
        key = command_text(candidate, cmd)
        from_stub = remaining[key] > 0
        if from_stub:
            remaining[key] -= 1
        violations.extend(
            _command_rules(candidate, cmd, ctx, from_stub=from_stub, before_target=index < target_index)
        )
        if cmd.name:
            if cmd.name in seen_names:
                violations.append(
                    _v(
                        "duplicate_declaration",
                        f"`{cmd.name}` is declared twice",
                        candidate.tokens[cmd.tokens.start],
                    )
                )
            seen_names[cmd.name] = cmd
        if not from_stub:
            violations.extend(_token_rules(candidate, cmd, ctx))
        violations.extend(_sorry_rule(candidate, cmd, policy))
    return violations


def _command_rules(
    sf: SourceFile, cmd: Declaration, ctx: _Context, *, from_stub: bool, before_target: bool
) -> list[Violation]:
    policy = ctx.policy
    out: list[Violation] = []
    if not cmd.tokens:
        return out
    first = sf.tokens[cmd.tokens.start]
    kw = sf.tokens[cmd.keyword_index]
    kind = cmd.kind
    args = sf.tokens[cmd.keyword_index + 1 : cmd.tokens.end]
    if kind == "#exit":
        out.append(_v("exit_command", "`#exit` stops Lean from reading the rest of the file", kw))
    if kind == "prelude":
        out.append(
            _v("prelude", "`prelude` files do not import `Init`; core definitions can be replaced", kw)
        )
    if kind == "import" and args and ctx.allowed_imports is not None:
        module = args[0].text
        if not _import_allowed(module, ctx.allowed_imports):
            out.append(_v("import_not_allowed", f"`import {module}` is not among the allowed imports", kw))
    if kind == "open" and args and args[0].text == "private":
        out.append(_v("open_private", "`open private` exposes private declarations", kw))
    if kind == "export" and not from_stub:
        out.append(_v("export_command", "`export` creates aliases that can capture names", kw))
    if kind == "set_option" and not from_stub and len(args) >= 2 and args[-1].text != "in":
        name = args[0].text
        if (
            not is_resource_option(name)
            and name not in ctx.stub_options
            and not _option_banned(name, policy.banned_options)
        ):
            out.append(
                _v("option_not_allowed", f"`set_option {name}` can change how the statement elaborates", kw)
            )
    if from_stub:
        return out
    if kind == "axiom":
        out.append(_v("new_axiom", f"new axiom `{cmd.name}`", kw))
    elif kind == "opaque":
        out.append(_v("new_opaque", f"new opaque constant `{cmd.name}` (can hide an axiom)", kw))
    elif kind in SYNTAX_KINDS:
        out.append(_v("syntax_extension", f"`{kind}` adds syntax or elaborators", kw))
    elif kind in _VARIABLE_KINDS:
        out.append(_v("new_variable", f"`{kind}` adds or changes section variables", kw))
    elif kind == "deriving_instance" and before_target:
        out.append(_v("new_instance", "`deriving instance` before the target", kw))
    elif kind in EVAL_WORDS and not policy.allow_eval_commands:
        out.append(_v("eval_command", f"`{kind}` runs code at elaboration time", kw))
    elif kind == UNKNOWN_COMMAND and before_target:
        out.append(
            _v(
                "unknown_command",
                f"`{kw.text}` at column 0 is not a tactic or term word the checker knows and may start a "
                "command that changes how the statement elaborates (indent proof lines)",
                kw,
            )
        )
    elif kind.startswith("#"):
        out.extend(_hash_rule(sf, cmd, kw, policy))
    if cmd.is_declaration and any(p.startswith("#guard_msgs") for p in cmd.prefixes):
        out.append(
            _v(
                "suppressed_messages",
                "`#guard_msgs … in` hides the errors of the declaration it wraps",
                first,
            )
        )
    if kind == "instance":
        if cmd.scope is not None:
            out.append(_v("local_instance", f"`{cmd.scope} instance` changes instance resolution", first))
        elif cmd.name is None:
            out.append(_v("anonymous_instance", "anonymous `instance` changes instance resolution", kw))
        elif before_target:
            out.append(_v("new_instance", f"instance `{cmd.name}` before the target", kw))
    for attr in cmd.attributes:
        words = attr.split()
        if not words:
            continue
        scoped = words[0] in ("local", "scoped")
        erased = words[0] == "-"
        head = words[1] if (scoped or erased) and len(words) > 1 else words[0]
        if head == "implemented_by":
            out.append(_v("implemented_by", "`@[implemented_by]` replaces compiled code", first))
        elif head == "extern":
            out.append(_v("extern", "`@[extern]` replaces compiled code", first))
        elif head in FORBIDDEN_ATTRIBUTES:
            out.append(_v("forbidden_attribute", f"attribute `{head}` installs elaboration-time code", first))
        elif head in ("instance", "default_instance"):
            if scoped:
                out.append(_v("local_instance", f"`{words[0]} {head}` changes instance resolution", first))
            elif before_target:
                what = f"-{head}" if erased else head
                out.append(_v("new_instance", f"attribute `{what}` before the target", first))
    return out


def _hash_rule(sf: SourceFile, cmd: Declaration, kw: Token, policy: Policy) -> list[Violation]:
    kind = cmd.kind
    args = sf.tokens[cmd.keyword_index + 1 : cmd.tokens.end]
    if kind == "#print":
        if args and args[0].text == "axioms":
            return []
        if len(args) == 1 and args[0].kind == "ident":
            return []
        if policy.allow_eval_commands:
            return []
        return [_v("eval_command", "only `#print axioms X` and `#print X` are allowed", kw)]
    if kind in HARMLESS_HASH:
        return []
    if policy.allow_eval_commands:
        return []
    return [_v("eval_command", f"`{kind}` runs code at elaboration time", kw)]


def _tactic_position(tokens: list[Token], i: int, end: int) -> bool:
    """Whether tokens[i] stands where a tactic starts (and is not a name being bound)."""
    nxt = tokens[i + 1].text if i + 1 < end else ""
    if nxt in (":", ":=", ",", ")", "]", "}", "=", "|"):
        return False
    if i == 0:
        return True
    prev = tokens[i - 1]
    return prev.text in _TACTIC_LEADERS or prev.line < tokens[i].line


def _token_rules(sf: SourceFile, cmd: Declaration, ctx: _Context) -> list[Violation]:
    policy = ctx.policy
    out: list[Violation] = []
    tokens = sf.tokens
    end = cmd.tokens.end
    for i in range(cmd.tokens.start, end):
        tok = tokens[i]
        text = tok.text
        if tok.kind == "ident":
            if text == "unsafe":
                out.append(_v("unsafe", "`unsafe` bypasses the kernel's checks", tok))
            elif text == "partial":
                out.append(_v("partial", "`partial` definitions are opaque to the kernel", tok))
            elif text in NATIVE_IDENTS and not policy.allow_native:
                out.append(
                    _v("native_evaluation", f"`{text}` trusts native evaluation (Lean.ofReduceBool)", tok)
                )
            elif text == "native" and not policy.allow_native:
                prev = tokens[i - 1] if i > 0 else None
                nxt = tokens[i + 1].text if i + 1 < end else ""
                after = tokens[i + 2].text if i + 2 < end else ""
                if (prev is not None and prev.text == "+" and prev.end == tok.start) or (
                    nxt == ":=" and after == "true"
                ):
                    out.append(_v("native_evaluation", "`decide` with native evaluation", tok))
            elif text in SEARCH_TACTICS and not policy.allow_search_tactics:
                if text != "hint" or _tactic_position(tokens, i, end):
                    out.append(_v("search_tactic", f"search tactic `{text}`", tok))
            elif text in EVAL_WORDS and i != cmd.keyword_index and not policy.allow_eval_commands:
                out.append(_v("eval_command", f"`{text}` runs code at elaboration time", tok))
            elif (
                text == "open" and i + 1 < end and tokens[i + 1].text == "private" and i != cmd.keyword_index
            ):
                out.append(_v("open_private", "`open private` exposes private declarations", tok))
            elif text == "set_option" and i + 2 < end:
                out.extend(_option_rule(tokens[i + 1].text, tokens[i + 2].text, tok, ctx))
    return out


def _option_rule(name: str, value: str, tok: Token, ctx: _Context) -> list[Violation]:
    policy = ctx.policy
    if _option_banned(name, policy.banned_options):
        return [_v("banned_option", f"`set_option {name}` is banned by the policy", tok)]
    if name != "maxHeartbeats" or value in ctx.stub_options.get(name, set()):
        return []
    requested = _int_or_none(value)
    if requested is None:
        return [_v("heartbeats_override", f"`maxHeartbeats {value}` is not a number", tok)]
    limit = policy.max_heartbeats
    if limit is None:
        stub_values = [_int_or_none(v) for v in ctx.stub_options.get(name, set())]
        base = min((v for v in stub_values if v is not None), default=DEFAULT_MAX_HEARTBEATS)
        limit = base
    if limit == 0 or 0 < requested <= limit:
        return []
    return [_v("heartbeats_override", f"`maxHeartbeats {value}` exceeds the allowed {limit}", tok)]


def _sorry_rule(sf: SourceFile, cmd: Declaration, policy: Policy) -> list[Violation]:
    if policy.allow_sorry:
        return []
    return [
        _v("sorry", f"`{tok.text}` leaves a gap", tok)
        for tok in sf.tokens[cmd.tokens.start : cmd.tokens.end]
        if tok.kind == "ident" and tok.text in SORRY_WORDS
    ]
