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


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_llm_strategy_without_llm_is_a_usage_error(app: typer.Typer, tmp_path: Path) -> None:
    src = tmp_path / "one.lean"
    src.write_text("theorem t : 1 = 1 := by\n  sorry\n")
    result = CliRunner().invoke(app, ["prove", str(src), "--strategy", "whole", "--budget", "1"])
    assert result.exit_code == 2, result.output
    assert "strategy 'whole' needs an LLM: pass --llm-url" in _flat(result.output)
    assert src.read_text() == "theorem t : 1 = 1 := by\n  sorry\n"


def test_unreachable_llm_url_is_an_infrastructure_error(app: typer.Typer, tmp_path: Path) -> None:
    src = tmp_path / "one.lean"
    src.write_text("theorem t : 1 = 1 := by\n  sorry\n")
    url = "http://127.0.0.1:9/v1"  # the discard port: connection refused
    result = CliRunner().invoke(app, ["prove", str(src), "--llm-url", url, "--strategy", "whole"])
    assert result.exit_code == 2, result.output
    assert f"the LLM server at {url} is not reachable or not ready" in _flat(result.output)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--strategy", "wholee"], "unknown strategy 'wholee'"),
        (["--profile", "gpt-17"], "unknown profile 'gpt-17'"),
    ],
)
def test_bad_strategy_or_profile_fails_even_without_sorry_theorems(
    app: typer.Typer, tmp_path: Path, option: list[str], message: str
) -> None:
    src = tmp_path / "proved.lean"
    src.write_text("theorem t : 1 = 1 := rfl\n")
    result = CliRunner().invoke(app, ["prove", str(src), *option])
    assert result.exit_code == 2, result.output
    assert message in _flat(result.output)


def test_non_utf8_file_is_reported_with_its_name(app: typer.Typer, tmp_path: Path) -> None:
    src = tmp_path / "latin1.lean"
    src.write_bytes("theorem café : 1 = 1 := by\n  sorry\n".encode("latin-1"))
    result = CliRunner().invoke(app, ["prove", str(src)])
    assert result.exit_code == 2, result.output
    flat = _flat(result.output)
    assert "latin1.lean" in flat and "not UTF-8 text (byte 0xe9" in flat


def test_human_output_says_why_each_theorem_was_left(app: typer.Typer, tmp_path: Path) -> None:
    src = tmp_path / "demo.lean"
    src.write_text(SOURCE)
    result = CliRunner().invoke(app, ["prove", str(src), "--out", str(tmp_path / "o.lean"), "--budget", "3"])
    assert result.exit_code == 1, result.output
    hard = next(line for line in result.stdout.splitlines() if line.startswith("Demo.hard"))
    assert "left as is (budget: max_attempts=3 reached; last verdict LEAN_ERROR)" in hard


def test_llm_failing_mid_run_prints_the_error_and_exits_2(app: typer.Typer, tmp_path: Path) -> None:
    src = tmp_path / "one.lean"
    src.write_text("import Mathlib\n\ntheorem t (n : ℕ) : n * 1 = n := by\n  sorry\n")
    script = FakeLLMScript(replies=["x"])
    script.fail_next(10, 400)
    with serve_fake_llm(script) as url:
        result = CliRunner().invoke(app, ["prove", str(src), "--llm-url", url, "--strategy", "whole"])
    assert result.exit_code == 2, result.output
    line = next(line for line in result.stdout.splitlines() if line.startswith("t (line 3)"))
    assert "left as is (error: LLMBadRequest: LLM server rejected the request (400)" in line
