"""The cheat and legit corpus under tests/trust/corpus.

Each file starts with ``-- expect: RULE`` (cheats) or ``-- expect: pass`` (legit), then
``-- stub: NAME`` (a file in corpus/stubs/) and optionally ``-- policy: NAME``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lean_server.policy import resolve_policy
from lean_server.trust import AuditReport, audit
from lean_server.verdict import Verdict

CORPUS = Path(__file__).parent / "corpus"
CHEATS = sorted((CORPUS / "cheat").glob("*.lean"))
LEGIT = sorted((CORPUS / "legit").glob("*.lean"))
_META = re.compile(r"^-- (expect|stub|policy): (\S+)$", re.MULTILINE)
# Every rule the legality and statement tiers can report, except the stub-side error.
ALL_RULES = frozenset(
    {
        "exit_command",
        "new_axiom",
        "new_opaque",
        "syntax_extension",
        "unsafe",
        "partial",
        "implemented_by",
        "extern",
        "forbidden_attribute",
        "new_variable",
        "duplicate_declaration",
        "local_instance",
        "anonymous_instance",
        "new_instance",
        "banned_option",
        "heartbeats_override",
        "option_not_allowed",
        "eval_command",
        "prelude",
        "open_private",
        "export_command",
        "import_not_allowed",
        "sorry",
        "search_tactic",
        "native_evaluation",
        "target_missing",
        "target_duplicated",
        "target_kind_changed",
        "target_modifiers_changed",
        "statement_changed",
        "statement_context_changed",
        "prerequisite_missing",
        "prerequisite_changed",
        "prerequisite_moved",
        "redefines_statement_name",
        "suppressed_messages",
        "unknown_command",
    }
)


def _meta(path: Path) -> dict[str, str]:
    return dict(_META.findall(path.read_text(encoding="utf-8")))


def _run(path: Path) -> tuple[dict[str, str], AuditReport]:
    meta = _meta(path)
    stub = (CORPUS / "stubs" / f"{meta.get('stub', 'default')}.lean").read_text(encoding="utf-8")
    return meta, audit(stub, path.read_text(encoding="utf-8"), resolve_policy(meta.get("policy")))


def test_corpus_sizes_and_rule_coverage() -> None:
    assert len(CHEATS) >= 60
    assert len(LEGIT) >= 60
    expected = {_meta(p)["expect"] for p in CHEATS}
    assert expected == ALL_RULES


@pytest.mark.parametrize("path", CHEATS, ids=[p.stem for p in CHEATS])
def test_cheat_is_rejected_for_the_right_rule(path: Path) -> None:
    meta, report = _run(path)
    rules = [v.rule for v in report.violations]
    assert not report.ok
    assert meta["expect"] in rules, rules
    expected_verdict = Verdict.SORRY if set(rules) == {"sorry"} else Verdict.CHEAT
    assert report.verdict is expected_verdict
    for v in report.violations:
        if v.line:
            assert 1 <= v.line <= len(path.read_text(encoding="utf-8").splitlines())


@pytest.mark.parametrize("path", LEGIT, ids=[p.stem for p in LEGIT])
def test_legit_proof_passes(path: Path) -> None:
    meta, report = _run(path)
    assert meta["expect"] == "pass"
    assert report.violations == [], [(v.rule, v.message, v.line) for v in report.violations]
    assert report.ok
