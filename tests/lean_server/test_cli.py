"""`sorryless check FILE.lean` exit codes and output; `lean-server` is registered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from lean_server.cli import EXIT_BAD_INPUT, EXIT_FAIL, EXIT_PASS, register
from lean_server.verdict import Certificate, Verdict
from sorryless.config import Settings
from tests.lean_server.test_app_helpers import GOOD, SORRY


@pytest.fixture
def cli(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> typer.Typer:
    """The commands, with SORRYLESS_* pointing at the test's fake REPL and data dir."""
    env = {
        "SORRYLESS_LEAN_REPL_CMD": settings.lean_repl_cmd or "",
        "SORRYLESS_DATA_DIR": str(settings.data_dir),
        "SORRYLESS_REDIS_URL": settings.redis_url,
        "SORRYLESS_REDIS_KEY_PREFIX": settings.redis_key_prefix,
        "SORRYLESS_LEAN_MAX_PROCESSES": "1",
        "SORRYLESS_LEAN_WARM_SPARES": "0",
        "SORRYLESS_LEAN_RECHECK_PASSING": "false",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("SORRYLESS_LEAN_SERVER_URL", raising=False)
    app = typer.Typer()
    register(app)
    return app


def _file(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_pass_exits_0_and_prints_the_verdict(cli: typer.Typer, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["check", str(_file(tmp_path, "good.lean", GOOD))])
    assert result.exit_code == EXIT_PASS, result.output
    assert "good.lean: PASS" in result.output


def test_sorry_exits_1_with_reasons(cli: typer.Typer, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["check", str(_file(tmp_path, "sorry.lean", SORRY))])
    assert result.exit_code == EXIT_FAIL, result.output
    assert "sorry.lean: SORRY" in result.output
    assert "  - " in result.output  # at least one reason line


def test_json_prints_the_certificate(cli: typer.Typer, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["check", "--json", str(_file(tmp_path, "good.lean", GOOD))])
    assert result.exit_code == EXIT_PASS, result.output
    cert = Certificate.model_validate(json.loads(result.stdout))
    assert cert.verdict is Verdict.PASS and cert.id == "good.lean"


def test_lean_error_exits_1(cli: typer.Typer, tmp_path: Path) -> None:
    code = "theorem bad : 1 = 1 := by\n  simp -- FAKE:error=simp made no progress"
    result = CliRunner().invoke(cli, ["check", "--policy", "lenient", str(_file(tmp_path, "bad.lean", code))])
    assert result.exit_code == EXIT_FAIL, result.output
    assert "LEAN_ERROR" in result.output


@pytest.mark.parametrize("content", [None, b"\xff\xfe not utf-8", "   \n"])
def test_unreadable_input_exits_2(cli: typer.Typer, tmp_path: Path, content: bytes | str | None) -> None:
    path = tmp_path / "missing.lean" if content is None else _file(tmp_path, "in.lean", content)
    result = CliRunner().invoke(cli, ["check", str(path)])
    assert result.exit_code == EXIT_BAD_INPUT, result.output


def test_unreadable_stub_exits_2(cli: typer.Typer, tmp_path: Path) -> None:
    good = _file(tmp_path, "good.lean", GOOD)
    result = CliRunner().invoke(cli, ["check", "--stub", str(tmp_path / "nope.lean"), str(good)])
    assert result.exit_code == EXIT_BAD_INPUT


def test_lean_server_command_is_registered(cli: typer.Typer) -> None:
    result = CliRunner().invoke(cli, ["lean-server", "--help"])
    assert result.exit_code == 0
    assert "--port" in result.output and "--host" in result.output


def test_stub_is_enforced(cli: typer.Typer, tmp_path: Path) -> None:
    stub = _file(tmp_path, "stub.lean", "theorem good_one : 1 + 1 = 2 := by sorry")
    proof = _file(tmp_path, "proof.lean", GOOD)
    changed = _file(tmp_path, "changed.lean", "theorem good_one : 1 + 1 = 3 := by rfl")
    ok = CliRunner().invoke(cli, ["check", "--stub", str(stub), str(proof)])
    bad = CliRunner().invoke(cli, ["check", "--stub", str(stub), "--json", str(changed)])
    assert ok.exit_code == EXIT_PASS, ok.output
    assert bad.exit_code == EXIT_FAIL, bad.output
    cert = Certificate.model_validate(json.loads(bad.stdout))
    assert cert.verdict is not Verdict.PASS
    assert cert.statement_hash is not None  # the stub was sent along


def test_an_unknown_policy_exits_2_with_a_clear_message(cli: typer.Typer, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["check", "--policy", "bogus", str(_file(tmp_path, "good.lean", GOOD))])
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert "invalid --policy" in result.output and "'bogus'" in result.output
    assert "Traceback" not in result.output
