"""`sorryless audit` through typer's CliRunner on a local app."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from lean_server.audit_cli import register

STUB = "import Mathlib\n\ntheorem t (n : ℕ) : n + 0 = n := by sorry\n"
GOOD = "import Mathlib\n\ntheorem t (n : ℕ) : n + 0 = n := by\n  simp\n"
CHEAT = "import Mathlib\n\naxiom c : False\n\ntheorem t (n : ℕ) : n + 0 = n := c.elim\n"


@pytest.fixture
def app() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.command("noop")  # a second command keeps `audit` a named sub-command
    def noop() -> None:
        pass

    return app


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_single_ok(app: typer.Typer, tmp_path: Path) -> None:
    stub, proof = _write(tmp_path, "stub.lean", STUB), _write(tmp_path, "p.lean", GOOD)
    result = CliRunner().invoke(app, ["audit", "--stub", str(stub), "--proof", str(proof), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["ok"] is True and out["violations"] == [] and out["target"] == "t"


def test_single_violation_human_output(app: typer.Typer, tmp_path: Path) -> None:
    stub, proof = _write(tmp_path, "stub.lean", STUB), _write(tmp_path, "p.lean", CHEAT)
    result = CliRunner().invoke(app, ["audit", "--stub", str(stub), "--proof", str(proof)])
    assert result.exit_code == 1
    assert "[new_axiom]" in result.stdout and ":3:0:" in result.stdout


def test_policy_option(app: typer.Typer, tmp_path: Path) -> None:
    stub = _write(tmp_path, "stub.lean", STUB)
    proof = _write(tmp_path, "p.lean", GOOD.replace("simp", "sorry"))
    args = ["audit", "--stub", str(stub), "--proof", str(proof), "--json"]
    assert CliRunner().invoke(app, args).exit_code == 1
    assert CliRunner().invoke(app, [*args, "--policy", "sketch"]).exit_code == 0
    assert CliRunner().invoke(app, [*args, "--policy", "nonsense"]).exit_code == 2


def test_usage_errors(app: typer.Typer, tmp_path: Path) -> None:
    stub = _write(tmp_path, "stub.lean", STUB)
    runner = CliRunner()
    assert runner.invoke(app, ["audit"]).exit_code == 2
    assert runner.invoke(app, ["audit", "--stub", str(stub)]).exit_code == 2
    assert (
        runner.invoke(
            app, ["audit", "--stub", str(stub), "--proof", str(tmp_path / "missing.lean")]
        ).exit_code
        == 2
    )
    assert runner.invoke(app, ["audit", "--stub", str(stub), "--proofs", str(stub)]).exit_code == 2
    bad_json = _write(tmp_path, "bad.jsonl", "{not json\n")
    assert (
        runner.invoke(app, ["audit", "--benchmark", str(bad_json), "--proofs", str(bad_json)]).exit_code == 2
    )


def test_batch(app: typer.Typer, tmp_path: Path) -> None:
    bench = _write(
        tmp_path,
        "bench.jsonl",
        json.dumps({"id": "t", "split": "test", "lean4_code": STUB}) + "\n",
    )
    rows = [
        {"problem_id": "t", "proof": GOOD},
        {"problem_id": "t", "proof": CHEAT},
        {"problem_id": "nope", "proof": GOOD},
    ]
    proofs = _write(tmp_path, "proofs.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    result = CliRunner().invoke(app, ["audit", "--benchmark", str(bench), "--proofs", str(proofs), "--json"])
    assert result.exit_code == 1
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line.get("ok") for line in lines[:3]] == [True, False, False]
    assert lines[1]["violations"][0] == {
        "rule": "new_axiom",
        "message": lines[1]["violations"][0]["message"],
        "line": 3,
        "column": 0,
    }
    assert lines[2]["violations"][0]["rule"] == "unknown_problem"
    summary = lines[3]
    assert summary["summary"] is True and summary["total"] == 3 and summary["passed"] == 1
    only_good = _write(tmp_path, "good.jsonl", json.dumps(rows[0]) + "\n")
    ok = CliRunner().invoke(app, ["audit", "--benchmark", str(bench), "--proofs", str(only_good)])
    assert ok.exit_code == 0 and "1/1 passed" in ok.stdout
