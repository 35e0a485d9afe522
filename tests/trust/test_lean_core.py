"""Against the real Lean 4.35.0 kernel (prelude files): what `#print axioms` reports is what
parse_axioms_message reads and classify_axioms judges, for the names theorem_names finds."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from lean_server.policy import Policy, resolve_policy
from lean_server.source import parse, theorem_names
from lean_server.trust import audit, classify_axioms, parse_axioms_message
from lean_server.verdict import Verdict

pytestmark = pytest.mark.lean_core

PRELUDE = """prelude
universe u
inductive Bool : Type where
  | false : Bool
  | true : Bool
axiom sorryAx (α : Sort u) (synthetic : Bool) : α
inductive MyTrue : Prop where
  | intro : MyTrue
inductive MyFalse : Prop
/- axiom in_a_comment : MyFalse -/
axiom cheat : MyFalse
axiom «weird, name» : MyTrue
namespace Lean
axiom ofReduceBool : MyTrue
end Lean
theorem good : MyTrue := MyTrue.intro
theorem bad : MyFalse := cheat
theorem bad2 : MyTrue := «weird, name»
theorem h' : MyTrue := good
theorem uses_bad (x : MyTrue) : MyFalse := bad
theorem gap : MyTrue := sorryAx MyTrue Bool.false
theorem nat_eval : MyTrue := Lean.ofReduceBool
namespace Deep
theorem inner : MyTrue := bad2
end Deep
"""

EXPECTED = {
    # every named declaration is printed, axioms and inductive types included
    "Bool": [],
    "sorryAx": ["sorryAx"],
    "MyTrue": [],
    "MyFalse": [],
    "cheat": ["cheat"],
    "«weird, name»": ["«weird, name»"],
    "Lean.ofReduceBool": ["Lean.ofReduceBool"],
    "good": [],
    "bad": ["cheat"],
    "bad2": ["«weird, name»"],
    "h'": [],
    "uses_bad": ["cheat"],
    "gap": ["sorryAx"],
    "nat_eval": ["Lean.ofReduceBool"],
    "Deep.inner": ["«weird, name»"],
}


def _lean_axioms(
    lean: Path, tmp_path: Path, source: str
) -> tuple[dict[str, list[str]], list[dict[str, object]]]:
    names = theorem_names(source)
    path = tmp_path / "Check.lean"
    path.write_text(source + "\n" + "\n".join(f"#print axioms {n}" for n in names) + "\n", encoding="utf-8")
    proc = subprocess.run([str(lean), "--json", str(path)], capture_output=True, text=True, timeout=60)
    messages = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    found: dict[str, list[str]] = {}
    for msg in messages:
        parsed = parse_axioms_message(str(msg["data"]))
        if parsed is not None:
            found[parsed[0]] = parsed[1]
    return found, messages


def test_print_axioms_matches_expectation(lean_core_bin: Path, tmp_path: Path) -> None:
    found, messages = _lean_axioms(lean_core_bin, tmp_path, PRELUDE)
    assert [m for m in messages if m["severity"] == "error"] == []
    assert found == EXPECTED
    # The source analyzer sees the same axiom declarations Lean reports (and not the commented one).
    declared = {d.name for d in parse(PRELUDE).declarations if d.kind == "axiom"}
    reported = {ax for axs in found.values() for ax in axs}
    assert reported <= declared
    assert "in_a_comment" not in declared


def test_classify_real_reports(lean_core_bin: Path, tmp_path: Path) -> None:
    found, _ = _lean_axioms(lean_core_bin, tmp_path, PRELUDE)
    strict = Policy()
    assert classify_axioms({"good": found["good"], "h'": found["h'"]}, strict).verdict is Verdict.PASS
    assert classify_axioms({"bad": found["bad"]}, strict).verdict is Verdict.CHEAT
    assert classify_axioms({"bad2": found["bad2"]}, strict).verdict is Verdict.CHEAT
    assert classify_axioms({"gap": found["gap"]}, strict).verdict is Verdict.SORRY
    native = classify_axioms({"nat_eval": found["nat_eval"]}, strict)
    assert native.verdict is Verdict.CHEAT and "native evaluation" in native.reasons[0]
    assert classify_axioms({"nat_eval": found["nat_eval"]}, resolve_policy("lenient")).ok
    assert classify_axioms(found, strict).verdict is Verdict.CHEAT


def test_source_audit_agrees_on_the_cheats(lean_core_bin: Path, tmp_path: Path) -> None:
    """A clean prelude file has no axioms per Lean; the audit still rejects `prelude` itself."""
    clean = "prelude\ninductive T : Prop where\n  | intro : T\ntheorem ok : T := T.intro\n"
    found, messages = _lean_axioms(lean_core_bin, tmp_path, clean)
    assert found == {"T": [], "ok": []} and not [m for m in messages if m["severity"] == "error"]
    assert classify_axioms(found, Policy()).ok
    rules = {v.rule for v in audit(None, PRELUDE, Policy()).violations}
    assert {"prelude", "new_axiom"} <= rules
    assert {v.rule for v in audit(None, clean, Policy()).violations} == {"prelude"}


def test_theorem_names_line_up_with_print_axioms(lean_core_bin: Path, tmp_path: Path) -> None:
    """Every name theorem_names gives is printable; private names come back mangled, so callers
    map reports to names by position (one `#print axioms` line per name), as lean_server does."""
    source = (
        "prelude\ninductive T : Prop where\n  | intro : T\nprivate theorem hidden : T := T.intro\n"
        "namespace N\nprotected theorem prot : T := T.intro\ntheorem «weird name» : T := T.intro\n"
        "private theorem deep : T := T.intro\nend N\ntheorem _root_.rooted : T := T.intro\n"
        "theorem «plain» : T := T.intro\n"
    )
    names = theorem_names(source)
    assert names == ["T", "hidden", "N.prot", "N.«weird name»", "N.deep", "rooted", "plain"]
    _, messages = _lean_axioms(lean_core_bin, tmp_path, source)
    assert [m for m in messages if m["severity"] == "error"] == []
    reports = [parse_axioms_message(str(m["data"])) for m in messages]
    assert all(r is not None and r[1] == [] for r in reports)
    reported = [r[0] for r in reports if r is not None]
    assert len(reported) == len(names)
    for name, shown in zip(names, reported, strict=True):
        assert shown == name or (shown.startswith("_private.") and shown.endswith("." + name))
