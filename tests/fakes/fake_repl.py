#!/usr/bin/env python3
"""A PLUMBING DOUBLE of the leanprover-community Lean REPL, for tests only.

Its answers about proofs are *scripted*, not verification: it never type-checks anything.
It exists so the process pool, the protocol code, the verdict tiers and the services around
them can be tested on a machine without Lean. Real verification is tested with the real
kernel (``lean_core`` marker) and with a full Lean project (``lean`` marker).

Run it as ``python tests/fakes/fake_repl.py``. It speaks the REPL's stdin/stdout protocol
(see docs/lean-repl.md) the way the real ``repl`` binary does:

* Framing: lines are read until a blank line (a line that is only whitespace). Each line is
  right-trimmed and the lines are joined WITHOUT newline characters (upstream
  ``getLines``): a raw newline inside a JSON string disappears (``"by<NL>sorry"`` becomes
  ``"bysorry"``), so clients must escape newlines. An input block starting with ``#`` or
  ``--`` is skipped. EOF ends the process with exit code 0.
* A block that is not JSON, or no known command, is an *uncaught* error: a message on stderr
  (``uncaught exception: ...``) and exit code 1. A stray extra blank line is such a block
  (the real REPL tries to parse it too).
* Each response is one JSON object (printed over several lines like the real REPL's pretty
  printer; set FAKE_REPL_COMPACT=1 for one line) followed by a blank line. Empty lists are
  omitted.

Commands: ``{"cmd"}`` (fresh environment; imports allowed), ``{"cmd", "env"}`` (builds on a
stored environment), ``{"path"}`` (file mode), ``{"tactic", "proofState"}``, ``pickleTo`` /
``unpickleEnvFrom`` / ``unpickleProofStateFrom``. ``env`` and ``proofState`` ids are per-process
counters that only grow. Unknown ids answer ``{"message": "Unknown environment."}`` /
``{"message": "Unknown proof state."}``. Extra fields (``gc``, ``infotree``, ``allTactics``...)
are accepted and ignored.

Default semantics of ``cmd`` (comments and strings are masked before looking at tokens):

* declarations (theorem, lemma, def, example, axiom, abbrev, instance, opaque, structure,
  inductive, class), with ``namespace``/``end`` prefixes, are recorded in the new environment;
  re-declaring a name present in the base environment (or earlier in the same command) gives
  the error ``'N' has already been declared`` at the name;
* each ``sorry``/``admit`` token gives a ``sorries`` entry (new proofState, goal ``⊢ <type>``
  with the statement's binders as hypotheses) and the warning "declaration uses `sorry`"
  (FAKE_REPL_SORRY_QUOTE=single: "declaration uses 'sorry'") on the enclosing declaration's
  name (on the keyword for ``example``/unnamed instances);
* ``import`` lines are accepted without ``env`` (sleep FAKE_REPL_IMPORT_MS); with ``env`` they
  are an error, as upstream;
* ``#print axioms N`` gives the info message "'N' depends on axioms: [..]" (sorted) or
  "'N' does not depend on any axioms" at ``#print``; the list holds the ``axiom``s that N's
  body mentions (transitively through other recorded declarations), ``sorryAx`` if a body on
  the way has sorry or an error, ``Lean.ofReduceBool`` for ``native_decide``/``decide +native``, plus
  FAKE_REPL_DEFAULT_AXIOMS (default "propext,Classical.choice,Quot.sound") for non-axioms;
  an unknown N gives the error "unknown constant 'N'".

Tactic mode: ``{"tactic": T, "proofState": P}`` answers ``proofStatus`` "Completed" (goals
``[]``), or "Incomplete: contains sorry" when T has sorry, with a new proofState id.

Control surface (environment variables):

* FAKE_REPL_SERVICE_MS: sleep per command (default 0).
* FAKE_REPL_IMPORT_MS: extra sleep per command with an import header (default 0).
* FAKE_REPL_SORRY_QUOTE: ``backtick`` (default) or ``single``.
* FAKE_REPL_DEFAULT_AXIOMS: comma-separated axioms every non-axiom declaration reports.
* FAKE_REPL_RULES: path of a JSON list of rules; the first rule whose ``match`` regex is
  found in the cmd (or tactic) text applies: ``messages`` (REPL messages, pos/endPos relative
  to the cmd; they REPLACE the default messages), ``sleep_ms``, ``action`` (hang | crash |
  garbage | oom | empty), ``axioms`` (the axiom list reported by ``#print axioms`` for the
  declarations of that cmd and for any ``#print axioms`` in it), and, for tactics,
  ``proofStatus``/``goals``.
* FAKE_REPL_LOG: append one JSON line per request: ``{"pid", "request", "response"}``
  (``response`` is null for hang/crash/oom/garbage/empty; the line is written before acting).
* FAKE_REPL_TRANSCRIPTS: path of lean_repl_transcripts.jsonl. A process whose first request
  equals a transcript's first request replays that transcript: the i-th request gets the
  i-th recorded response (env/proofState numbering included) while the requests keep
  matching; after a mismatch it falls back to the default semantics with its counters past
  the replayed ids. Transcripts whose ``requests`` is null are read from ``raw_input`` with
  the framing rule above.
* FAKE_REPL_COMPACT=1: print each response on one line.
* FAKE_REPL_OOM_CAP_MB: safety cap of the ``oom`` action (default 4096); when reached
  without the OS stopping the process, it kills itself with SIGKILL like the OOM killer.

In-code triggers (anywhere in the cmd text, comments included):
``FAKE:hang`` (sleep forever), ``FAKE:crash`` (partial output, then SIGKILL itself: exit
status -9 / 137), ``FAKE:garbage`` (a non-JSON line and a blank line, then keeps serving),
``FAKE:oom`` (allocate and touch 64 MB chunks until the rlimit/OS stops it; on MemoryError
prints ``INTERNAL PANIC: out of memory`` on stderr and exits 1 like Lean),
``FAKE:slow=<ms>`` (extra sleep), ``FAKE:error=<text>`` (an error message with that text, up
to the end of the line, at the trigger's position; the enclosing declaration then reports
``sorryAx`` like an elaboration error turned into sorry).
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any

Json = dict[str, Any]

_DECL_KEYWORDS = (
    "theorem",
    "lemma",
    "def",
    "example",
    "axiom",
    "abbrev",
    "instance",
    "opaque",
    "structure",
    "inductive",
    "class",
)
_MODIFIERS = r"(?:(?:private|protected|noncomputable|unsafe|partial|nonrec|scoped|local)\s+)*"
_DECL_RE = re.compile(
    r"^(?P<head>[ \t]*(?:@\[[^\]]*\]\s*)?" + _MODIFIERS + r")"
    r"(?P<kw>" + "|".join(_DECL_KEYWORDS) + r")\b(?:[ \t]+(?P<name>[^\s:({\[]+))?",
    re.MULTILINE,
)
_COMMAND_START_RE = re.compile(
    r"^[ \t]*(?:@\[|(?:private|protected|noncomputable|unsafe|partial|nonrec|scoped|local)\b|"
    r"(?:" + "|".join(_DECL_KEYWORDS) + r"|namespace|section|end|open|variable|universe|"
    r"set_option|attribute|import|mutual|macro|syntax|notation|infix|infixl|infixr|prefix|postfix)\b|#)",
    re.MULTILINE,
)
_NAMESPACE_RE = re.compile(r"^[ \t]*(?P<kw>namespace|end|section)\b[ \t]*(?P<name>[^\s]*)", re.MULTILINE)
_SORRY_RE = re.compile(r"(?<![\w.'])(?:sorry|admit)(?![\w'!?])")
_NATIVE_DECIDE_RE = re.compile(r"\bdecide\s*\+native\b")
_IMPORT_RE = re.compile(r"^[ \t]*import\b", re.MULTILINE)
_PRINT_AXIOMS_RE = re.compile(r"#print[ \t]+axioms[ \t]+(?P<name>[^\s]+)")
_IDENT_RE = re.compile(r"[A-Za-z_\u0370-\u03ff][\w.'!?\u2080-\u209c]*")
_TRIGGER_RE = re.compile(r"FAKE:(?P<kind>hang|crash|garbage|oom|slow=(?P<ms>\d+)|error=(?P<text>[^\n]*))")

_UNKNOWN_ENV: Json = {"message": "Unknown environment."}
_UNKNOWN_PROOF_STATE: Json = {"message": "Unknown proof state."}


class UncaughtError(Exception):
    """What the real REPL raises without catching: the process ends with exit code 1."""


# --------------------------------------------------------------------------------------------
# framing
# --------------------------------------------------------------------------------------------
def _rtrim(line: str) -> str:
    return line.rstrip(" \t\r\n\v\f")


def split_blocks(raw: str) -> list[str]:
    """Split raw REPL input into request blocks exactly as the REPL's ``getLines`` does."""
    blocks: list[str] = []
    lines = raw.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        query = ""
        while i < len(lines):
            line = lines[i]
            i += 1
            if line.strip() == "":
                query += line
                break
            query += _rtrim(line)
        if query == "":
            break
        blocks.append(query)
    return blocks


# --------------------------------------------------------------------------------------------
# source helpers
# --------------------------------------------------------------------------------------------
def _mask(code: str) -> str:
    """Replace comments and string/char literals by spaces (newlines kept) so offsets stay."""
    out = list(code)
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if code.startswith("--", i):
            j = code.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif code.startswith("/-", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if code.startswith("/-", j):
                    depth, j = depth + 1, j + 2
                elif code.startswith("-/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        elif c == '"':
            j = i + 1
            while j < n and code[j] != '"':
                j += 2 if code[j] == "\\" else 1
            j = min(j + 1, n)
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        else:
            i += 1
    return "".join(out)


def _pos(code: str, offset: int) -> Json:
    line = code.count("\n", 0, offset) + 1
    col = offset - (code.rfind("\n", 0, offset) + 1)
    return {"line": line, "column": col}


def _message(code: str, start: int, end: int, severity: str, data: str) -> Json:
    return {"severity": severity, "pos": _pos(code, start), "endPos": _pos(code, end), "data": data}


def _statement_goal(statement: str) -> str:
    """``(a b : Nat) (h : P) : T`` -> ``a b : Nat\\nh : P\\n⊢ T`` (good enough for a double)."""
    hyps: list[str] = []
    i, depth, n = 0, 0, len(statement)
    type_start = -1
    group_start = -1
    while i < n:
        c = statement[i]
        if c in "([{⦃":
            if depth == 0:
                group_start = i
            depth += 1
        elif c in ")]}⦄":
            depth -= 1
            if depth == 0 and group_start >= 0:
                inner = statement[group_start + 1 : i]
                if ":" in inner and statement[group_start] in "({⦃":
                    hyps.append(" ".join(inner.split()))
        elif c == ":" and depth == 0 and not statement.startswith(":=", i):
            type_start = i + 1
            break
        i += 1
    goal_type = " ".join(statement[type_start:].split()) if type_start >= 0 else "?"
    return "\n".join([*hyps, f"⊢ {goal_type}"])


# --------------------------------------------------------------------------------------------
# state
# --------------------------------------------------------------------------------------------
@dataclass
class Decl:
    name: str
    is_axiom: bool
    direct_axioms: set[str] = field(default_factory=set)
    refs: set[str] = field(default_factory=set)
    axioms_override: list[str] | None = None


@dataclass
class ProofState:
    goals: list[str]


@dataclass
class Rule:
    pattern: re.Pattern[str]
    spec: Json


def _load_rules() -> list[Rule]:
    path = os.environ.get("FAKE_REPL_RULES")
    if not path:
        return []
    with open(path, encoding="utf-8") as fh:
        raw = json.load(fh)
    return [Rule(re.compile(r["match"]), r) for r in raw]


def _load_transcripts() -> list[tuple[list[Json], list[Json]]]:
    path = os.environ.get("FAKE_REPL_TRANSCRIPTS")
    if not path:
        return []
    out: list[tuple[list[Json], list[Json]]] = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = json.loads(line)
            requests = row.get("requests")
            if requests is None:
                requests = [json.loads(b) for b in split_blocks(row["raw_input"])]
            responses = row.get("responses")
            if responses is None:
                responses = [json.loads(b) for b in split_blocks(row["raw_expected_output"])]
            out.append((requests, responses))
    return out


def _env_ms(name: str) -> float:
    raw = os.environ.get(name, "").strip()
    return float(raw) / 1000.0 if raw else 0.0


class FakeRepl:
    def __init__(self) -> None:
        self.service_s = _env_ms("FAKE_REPL_SERVICE_MS")
        self.import_s = _env_ms("FAKE_REPL_IMPORT_MS")
        quote = os.environ.get("FAKE_REPL_SORRY_QUOTE", "backtick").strip().lower()
        self.sorry_warning = "declaration uses 'sorry'" if quote == "single" else "declaration uses `sorry`"
        defaults = os.environ.get("FAKE_REPL_DEFAULT_AXIOMS", "propext,Classical.choice,Quot.sound")
        self.default_axioms = [a.strip() for a in defaults.split(",") if a.strip()]
        self.compact = os.environ.get("FAKE_REPL_COMPACT") == "1"
        self.oom_cap_mb = int(os.environ.get("FAKE_REPL_OOM_CAP_MB", "4096"))
        self.rules = _load_rules()
        log_path = os.environ.get("FAKE_REPL_LOG")
        self.log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) if log_path else None
        self.envs: dict[int, dict[str, Decl]] = {}
        self.proof_states: dict[int, ProofState] = {}
        self.next_env = 0
        self.next_ps = 0
        self.transcripts = _load_transcripts()
        self.replay_candidates: list[int] | None = (
            list(range(len(self.transcripts))) if self.transcripts else None
        )
        self.seq = 0

    # ---- ids -------------------------------------------------------------------------------
    def _new_env(self, decls: dict[str, Decl]) -> int:
        env_id = self.next_env
        self.next_env += 1
        self.envs[env_id] = decls
        return env_id

    def _new_ps(self, goals: list[str]) -> int:
        ps = self.next_ps
        self.next_ps += 1
        self.proof_states[ps] = ProofState(goals)
        return ps

    # ---- replay ----------------------------------------------------------------------------
    def _replay(self, req: Json) -> Json | None:
        if self.replay_candidates is None:
            return None
        i = self.seq
        matching = [
            t
            for t in self.replay_candidates
            if i < len(self.transcripts[t][0])
            and self.transcripts[t][0][i] == req
            and i < len(self.transcripts[t][1])
        ]
        if not matching:
            self.replay_candidates = None
            return None
        self.replay_candidates = matching
        resp = self.transcripts[matching[0]][1][i]
        self._absorb_ids(resp)
        return resp

    def _absorb_ids(self, resp: Json) -> None:
        env = resp.get("env")
        if isinstance(env, int):
            self.envs.setdefault(env, {})
            self.next_env = max(self.next_env, env + 1)
        ids = [resp.get("proofState")] + [s.get("proofState") for s in resp.get("sorries", []) or []]
        for ps in ids:
            if isinstance(ps, int):
                self.proof_states.setdefault(ps, ProofState(list(resp.get("goals", []) or [])))
                self.next_ps = max(self.next_ps, ps + 1)

    # ---- rules and triggers ------------------------------------------------------------------
    def _rule_for(self, text: str) -> Json | None:
        for rule in self.rules:
            if rule.pattern.search(text):
                return rule.spec
        return None

    def _act(self, action: str) -> None:
        """Misbehave like a broken REPL process."""
        if action == "hang":
            while True:
                time.sleep(3600)
        if action == "crash":
            sys.stdout.write('{"env":')
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        if action == "garbage":
            sys.stdout.write("this is not JSON: <garbage from the fake REPL>\n\n")
            sys.stdout.flush()
            return
        if action == "empty":
            sys.stdout.write("\n")
            sys.stdout.flush()
            return
        if action == "oom":
            self._eat_memory()
        raise UncaughtError(f"unknown fake action {action!r}")

    def _eat_memory(self) -> None:
        chunks: list[bytearray] = []
        chunk = 64 * 1024 * 1024
        try:
            while True:
                buf = bytearray(chunk)
                for k in range(0, chunk, 4096):  # touch every page so RSS really grows
                    buf[k] = 1
                chunks.append(buf)
                if len(chunks) * 64 >= self.oom_cap_mb:
                    os.kill(os.getpid(), signal.SIGKILL)
        except MemoryError:
            chunks.clear()
            os.write(2, b"INTERNAL PANIC: out of memory\n")
            os._exit(1)

    def _triggers(self, text: str) -> tuple[str | None, float, list[tuple[int, int, str]]]:
        """(action, extra sleep seconds, [(start, end, error text)]) from FAKE:... triggers."""
        action: str | None = None
        sleep_s = 0.0
        errors: list[tuple[int, int, str]] = []
        for m in _TRIGGER_RE.finditer(text):
            kind = m.group("kind")
            if m.group("ms") is not None:
                sleep_s += int(m.group("ms")) / 1000.0
            elif m.group("text") is not None:
                msg = m.group("text").strip()
                msg = re.sub(r"\s*(-/|\*/)\s*$", "", msg)
                errors.append((m.start(), m.end(), msg))
            elif action is None:
                action = kind
        return action, sleep_s, errors

    # ---- commands ------------------------------------------------------------------------------
    def run_cmd(self, req: Json, code: str) -> Json | None:
        env_req = req.get("env")
        if env_req is not None:
            if not isinstance(env_req, int) or env_req not in self.envs:
                return dict(_UNKNOWN_ENV)
            base = self.envs[env_req]
        else:
            base = {}
        rule = self._rule_for(code)
        action, extra_s, trigger_errors = self._triggers(code)
        if rule and rule.get("action") and action is None:
            action = str(rule["action"])
        sleep_s = self.service_s + extra_s + (float(rule.get("sleep_ms", 0)) / 1000.0 if rule else 0.0)
        masked = _mask(code)
        has_imports = bool(_IMPORT_RE.search(masked))
        if has_imports and env_req is None:
            sleep_s += self.import_s
        if sleep_s > 0:
            time.sleep(sleep_s)
        if action is not None:
            self._log(req, None)
            self._act(action)
            return None  # garbage / empty: nothing more to answer for this request

        messages: list[Json] = []
        sorries: list[Json] = []
        decls = dict(base)
        if has_imports and env_req is not None:
            m = _IMPORT_RE.search(masked)
            assert m is not None
            start = m.start() + (len(m.group(0)) - len("import"))
            messages.append(
                _message(
                    code,
                    start,
                    start + 6,
                    "error",
                    "invalid 'import' command, it must be used in the beginning of the file",
                )
            )
        error_spans = [(s, e) for s, e, _ in trigger_errors]
        # spans of commands: [start, end)
        starts = sorted({m.start() for m in _COMMAND_START_RE.finditer(masked)} | {0})
        ends = [*starts[1:], len(code)]
        spans = list(zip(starts, ends, strict=True))
        namespaces: list[tuple[str, str]] = []  # (kind, name)
        rule_axioms = list(rule["axioms"]) if rule and "axioms" in rule else None
        for start, end in spans:
            segment = masked[start:end]
            ns_m = _NAMESPACE_RE.match(segment)
            if ns_m:
                kw, nm = ns_m.group("kw"), ns_m.group("name")
                if kw in ("namespace", "section"):
                    namespaces.append((kw, nm))
                elif namespaces:
                    namespaces.pop()
                continue
            pa = _PRINT_AXIOMS_RE.match(segment)
            if pa:
                messages.append(self._print_axioms(code, start, pa, decls, namespaces, rule_axioms))
                continue
            dm = _DECL_RE.match(segment)
            if dm is None:
                continue
            self._declare(
                code, masked, start, end, dm, decls, namespaces, messages, sorries, error_spans, rule_axioms
            )
        for s, e, text in trigger_errors:
            messages.append(_message(code, s, e, "error", text))
        messages.sort(key=lambda m: (m["pos"]["line"], m["pos"]["column"]))
        if rule and "messages" in rule:
            messages = list(rule["messages"])
        env_id = self._new_env(decls)
        resp: Json = {}
        if sorries:
            resp["sorries"] = sorries
        if messages:
            resp["messages"] = messages
        resp["env"] = env_id
        return resp

    def _declare(
        self,
        code: str,
        masked: str,
        start: int,
        end: int,
        dm: re.Match[str],
        decls: dict[str, Decl],
        namespaces: list[tuple[str, str]],
        messages: list[Json],
        sorries: list[Json],
        error_spans: list[tuple[int, int]],
        rule_axioms: list[str] | None,
    ) -> None:
        kw = dm.group("kw")
        raw_name = dm.group("name")
        if kw == "example" or raw_name is None or raw_name.startswith(("where", ":=")):
            raw_name = None
        prefix = ".".join(n for k, n in namespaces if k == "namespace" and n)
        full = raw_name if raw_name is None or not prefix else f"{prefix}.{raw_name}"
        if raw_name is not None and raw_name.startswith("_root_."):
            full = raw_name[len("_root_.") :]
        name_start = start + dm.start("name") if raw_name is not None else start + dm.start("kw")
        name_end = start + dm.end("name") if raw_name is not None else start + dm.end("kw")
        body = masked[name_end:end]
        body_start = name_end
        decl_sorries = list(_SORRY_RE.finditer(body))
        assign = body.find(":=")
        statement = body[: assign if assign >= 0 else len(body)]
        goal = _statement_goal(statement)
        for sm in decl_sorries:
            s, e = body_start + sm.start(), body_start + sm.end()
            ps = self._new_ps([goal])
            sorries.append({"proofState": ps, "pos": _pos(code, s), "goal": goal, "endPos": _pos(code, e)})
        if decl_sorries:
            messages.append(_message(code, name_start, name_end, "warning", self.sorry_warning))
        if full is not None and full in decls:
            messages.append(
                _message(code, name_start, name_end, "error", f"'{full}' has already been declared")
            )
            return
        direct: set[str] = set()
        refs = {m.group(0) for m in _IDENT_RE.finditer(body)}
        if decl_sorries or any(start <= s < end for s, _ in error_spans):
            direct.add("sorryAx")
        if "native_decide" in refs or _NATIVE_DECIDE_RE.search(body):
            direct.add("Lean.ofReduceBool")
        decl = Decl(name=full or "_example", is_axiom=kw == "axiom", direct_axioms=direct, refs=refs)
        if rule_axioms is not None:
            decl.axioms_override = rule_axioms
        if full is not None:
            decls[full] = decl

    def _axioms_of(self, name: str, decls: dict[str, Decl]) -> list[str]:
        root = decls[name]
        if root.axioms_override is not None:
            return sorted(set(root.axioms_override))
        found: set[str] = set()
        seen: set[str] = set()
        stack = [name]
        while stack:
            cur = stack.pop()
            if cur in seen or cur not in decls:
                continue
            seen.add(cur)
            d = decls[cur]
            if d.is_axiom:
                found.add(cur)
            found |= d.direct_axioms
            stack.extend(r for r in d.refs if r in decls and r != cur)
        if not root.is_axiom:
            found |= set(self.default_axioms)
        return sorted(found)

    def _print_axioms(
        self,
        code: str,
        start: int,
        pa: re.Match[str],
        decls: dict[str, Decl],
        namespaces: list[tuple[str, str]],
        rule_axioms: list[str] | None,
    ) -> Json:
        name = pa.group("name")
        prefix = ".".join(n for k, n in namespaces if k == "namespace" and n)
        candidates = [f"{prefix}.{name}", name] if prefix else [name]
        resolved = next((c for c in candidates if c in decls), None)
        if resolved is None:
            s = start + pa.start("name")
            return _message(code, s, s + len(name), "error", f"unknown constant '{name}'")
        axioms = sorted(set(rule_axioms)) if rule_axioms is not None else self._axioms_of(resolved, decls)
        if axioms:
            data = f"'{resolved}' depends on axioms: [{', '.join(axioms)}]"
        else:
            data = f"'{resolved}' does not depend on any axioms"
        return _message(code, start, start + len("#print"), "info", data)

    def run_tactic(self, req: Json) -> Json | None:
        ps = req.get("proofState")
        if not isinstance(ps, int) or ps not in self.proof_states:
            return dict(_UNKNOWN_PROOF_STATE)
        tactic = str(req["tactic"])
        rule = self._rule_for(tactic)
        action, extra_s, trigger_errors = self._triggers(tactic)
        if rule and rule.get("action") and action is None:
            action = str(rule["action"])
        sleep_s = self.service_s + extra_s + (float(rule.get("sleep_ms", 0)) / 1000.0 if rule else 0.0)
        if sleep_s > 0:
            time.sleep(sleep_s)
        if action is not None:
            self._log(req, None)
            self._act(action)
            return None
        if trigger_errors:
            return {"message": "Lean error:\n" + trigger_errors[0][2]}
        has_sorry = bool(_SORRY_RE.search(_mask(tactic)))
        status = "Incomplete: contains sorry" if has_sorry else "Completed"
        goals: list[str] = []
        if rule and "proofStatus" in rule:
            status = str(rule["proofStatus"])
            goals = list(rule.get("goals", []))
        new_ps = self._new_ps(goals)
        resp: Json = {"proofStatus": status, "proofState": new_ps, "goals": goals}
        if rule and "messages" in rule and rule["messages"]:
            resp = {
                "proofStatus": status,
                "proofState": new_ps,
                "messages": list(rule["messages"]),
                "goals": goals,
            }
        return resp

    def pickle(self, req: Json) -> Json:
        target = str(req["pickleTo"])
        if "proofState" in req and req.get("proofState") is not None:
            ps = req["proofState"]
            if not isinstance(ps, int) or ps not in self.proof_states:
                return {"message": "Unknown proof State."}
            goals = self.proof_states[ps].goals
            self._write_pickle(target, {"kind": "proofState", "goals": goals})
            new_ps = self._new_ps(goals)
            return {"proofStatus": "Incomplete: open goals remain", "proofState": new_ps, "goals": goals}
        env = req.get("env")
        if not isinstance(env, int) or env not in self.envs:
            return dict(_UNKNOWN_ENV)
        names = {
            n: {"is_axiom": d.is_axiom, "axioms": sorted(d.direct_axioms)} for n, d in self.envs[env].items()
        }
        self._write_pickle(target, {"kind": "env", "decls": names})
        return {"env": env}

    @staticmethod
    def _write_pickle(path: str, payload: Json) -> None:
        try:
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(payload, fh)
        except OSError as exc:
            raise UncaughtError(str(exc)) from exc

    @staticmethod
    def _read_pickle(path: str) -> Json:
        try:
            with open(path, encoding="utf-8") as fh:
                data: Json = json.load(fh)
                return data
        except (OSError, ValueError) as exc:
            raise UncaughtError(f"failed to read {path}: {exc}") from exc

    def unpickle_env(self, req: Json) -> Json:
        data = self._read_pickle(str(req["unpickleEnvFrom"]))
        decls = {
            n: Decl(name=n, is_axiom=bool(v["is_axiom"]), direct_axioms=set(v["axioms"]))
            for n, v in dict(data.get("decls", {})).items()
        }
        return {"env": self._new_env(decls)}

    def unpickle_ps(self, req: Json) -> Json:
        env = req.get("env")
        if env is not None and env not in self.envs:
            return dict(_UNKNOWN_ENV)
        data = self._read_pickle(str(req["unpickleProofStateFrom"]))
        goals = [str(g) for g in data.get("goals", [])]
        new_ps = self._new_ps(goals)
        return {"proofStatus": "Incomplete: open goals remain", "proofState": new_ps, "goals": goals}

    # ---- dispatch ---------------------------------------------------------------------------------
    def handle(self, query: str) -> Json | None:
        try:
            req = json.loads(query)
        except ValueError as exc:
            raise UncaughtError(json.dumps({"message": f"Could not parse JSON:\n{exc}"})) from exc
        if not isinstance(req, dict):
            raise UncaughtError(
                json.dumps({"message": "Could not parse as a valid JSON command:\nnot an object"})
            )
        replayed = self._replay(req)
        if replayed is not None:
            return replayed
        if isinstance(req.get("tactic"), str) and isinstance(req.get("proofState"), int):
            return self.run_tactic(req)
        if isinstance(req.get("pickleTo"), str) and ("env" in req or "proofState" in req):
            return self.pickle(req)
        if isinstance(req.get("unpickleEnvFrom"), str):
            return self.unpickle_env(req)
        if isinstance(req.get("unpickleProofStateFrom"), str):
            return self.unpickle_ps(req)
        if isinstance(req.get("cmd"), str):
            return self.run_cmd(req, req["cmd"])
        if isinstance(req.get("path"), str):
            try:
                with open(req["path"], encoding="utf-8") as fh:
                    code = fh.read()
            except OSError as exc:
                return {"message": str(exc)}
            return self.run_cmd(req, code)
        raise UncaughtError(
            json.dumps({"message": "Could not parse as a valid JSON command:\nno known command"})
        )

    # ---- I/O ------------------------------------------------------------------------------------------
    def _log(self, req: object, resp: Json | None) -> None:
        if self.log_fd is None:
            return
        line = json.dumps({"pid": os.getpid(), "request": req, "response": resp}, ensure_ascii=False)
        os.write(self.log_fd, (line + "\n").encode("utf-8"))

    def emit(self, resp: Json) -> None:
        text = (
            json.dumps(resp, ensure_ascii=False)
            if self.compact
            else json.dumps(resp, ensure_ascii=False, indent=1)
        )
        sys.stdout.write(text + "\n\n")
        sys.stdout.flush()

    def _read_query(self) -> str:
        query = ""
        while True:
            line = sys.stdin.readline()
            if line.strip() == "":
                return query + line
            query += _rtrim(line)

    def serve(self) -> int:
        while True:
            query = self._read_query()
            if query == "":
                return 0
            if query.startswith(("#", "--")):
                continue
            try:
                resp = self.handle(query)
            except UncaughtError as exc:
                sys.stderr.write(f"uncaught exception: {exc}\n")
                sys.stderr.flush()
                return 1
            self.seq += 1
            if resp is None:
                continue
            self._log(json.loads(query), resp)
            self.emit(resp)


def main() -> int:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        return FakeRepl().serve()
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
