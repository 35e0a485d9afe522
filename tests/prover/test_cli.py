"""`sorryless prove FILE` through Typer's CliRunner (portfolio baseline, fake REPL, fake LLM)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from prover.cli import register
from sorryless.config import Settings
from tests.fakes.fake_llm import FakeLLMScript, serve_fake_llm

SOURCE = """import Mathlib

namespace Demo

/-- Easy. -/
theorem easy (x : ℕ) : x + 0 = x := by
  sorry

theorem hard (x : ℕ) -- FAKE:error=linarith failed
    : x * 0 = 0 := by
  sorry

lemma done : 1 = 1 := rfl

lemma also_easy (y : ℕ) : y = y := sorry

end Demo
"""


@pytest.fixture
def app(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> typer.Typer:
    for key, value in {
        "SORRYLESS_DATA_DIR": str(settings.data_dir),
        "SORRYLESS_LEAN_REPL_CMD": settings.lean_repl_cmd or "",
        "SORRYLESS_REDIS_URL": settings.redis_url,
        "SORRYLESS_REDIS_KEY_PREFIX": settings.redis_key_prefix,
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("SORRYLESS_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("SORRYLESS_LEAN_SERVER_URL", raising=False)
    typer_app = typer.Typer()
    register(typer_app)

    @typer_app.command("noop")
    def _noop() -> None:  # a second command keeps `prove` a sub-command
        pass

    return typer_app


def test_prove_file_writes_only_pass_proofs(app: typer.Typer, tmp_path: Path) -> None:
    src = tmp_path / "demo.lean"
    src.write_text(SOURCE)
    out = tmp_path / "out.lean"
    result = CliRunner().invoke(app, ["prove", str(src), "--out", str(out), "--budget", "3", "--json"])
    assert result.exit_code == 1, result.output  # `hard` stays unsolved
    report = json.loads(result.stdout)
    by_name = {t["name"]: t for t in report["theorems"]}
    assert set(by_name) == {"Demo.easy", "Demo.hard", "Demo.also_easy"}
    assert by_name["Demo.easy"]["solved"] and by_name["Demo.also_easy"]["solved"]
    assert not by_name["Demo.hard"]["solved"] and by_name["Demo.hard"]["verdict"] == "LEAN_ERROR"
    assert report["unsolved"] == ["Demo.hard"] and report["solved"] == 2
    assert (
        report["cost"]["compile_calls"] >= 5 and report["cost"]["attempts"] == 9
    )  # each theorem submits its 3 tries at once
    written = out.read_text()
    assert src.read_text() == SOURCE  # input untouched when --out is given
    # the first passing tactic in portfolio order wins, whatever order the checks finish in
    assert re.search(r"theorem easy \(x : ℕ\) : x \+ 0 = x := by\n  (rfl|decide|norm_num)\n", written)
    assert re.search(r"lemma also_easy \(y : ℕ\) : y = y := by\n  (rfl|decide|norm_num)\n", written)
    assert "    : x * 0 = 0 := by\n  sorry" in written  # left as it was
    assert "/-- Easy. -/" in written and written.rstrip().endswith("end Demo")


def test_prove_file_in_place_with_llm(app: typer.Typer, tmp_path: Path) -> None:
    src = tmp_path / "one.lean"
    src.write_text("import Mathlib\n\ntheorem t (n : ℕ) : n * 1 = n := by\n  sorry\n")
    script = FakeLLMScript(
        replies=["```lean4\nimport Mathlib\n\ntheorem t (n : ℕ) : n * 1 = n := by\n  simp\n```"]
    )
    with serve_fake_llm(script) as url:
        result = CliRunner().invoke(
            app, ["prove", str(src), "--llm-url", url, "--strategy", "whole", "--budget", "1"]
        )
    assert result.exit_code == 0, result.output
    assert "1/1 proved" in result.stdout
    assert src.read_text() == "import Mathlib\n\ntheorem t (n : ℕ) : n * 1 = n := by\n  simp\n"
    assert script.bodies("/v1/chat/completions")
