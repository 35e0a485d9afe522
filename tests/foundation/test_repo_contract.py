"""The promises the repository makes to a newcomer: two commands, CI = `make test`, Redis set-up,
and test doubles that stay inside tests/."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
from pathlib import Path

import redis

REPO = Path(__file__).resolve().parents[2]


def test_readme_quick_start_has_exactly_the_two_commands() -> None:
    readme = (REPO / "README.md").read_text()
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = quick.split("```bash", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in block.strip().splitlines()]
    assert commands == ["make run", "make test"]


def test_ci_runs_make_test_and_is_executable() -> None:
    ci = REPO / ".ci" / "run"
    assert os.access(ci, os.X_OK)
    lines = [ln.strip() for ln in ci.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert "make test" in lines
    assert "export CI=true" in lines


def test_make_targets_share_one_bootstrap() -> None:
    makefile = (REPO / "Makefile").read_text()
    run = makefile.split("\nrun:", 1)[1].split("\n\n", 1)[0]
    test = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "scripts/bootstrap.sh" in run and "sorryless run" in run
    assert "scripts/bootstrap.sh" in test
    for script in ("bootstrap.sh", "ensure_redis.sh"):
        assert os.access(REPO / "scripts" / script, os.X_OK)


def test_product_code_never_imports_the_test_doubles() -> None:
    pattern = re.compile(r"^\s*(from|import)\s+tests(\.|\s|$)|fakes\.fake_(repl|llm)", re.MULTILINE)
    offenders = [
        str(path.relative_to(REPO))
        for package in ("sorryless", "api", "lean_server", "prover")
        for path in (REPO / package).rglob("*.py")
        if pattern.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_ensure_redis_starts_a_server_when_none_answers() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "SORRYLESS_REDIS_PORT": str(port)}
    script = str(REPO / "scripts" / "ensure_redis.sh")
    first = subprocess.run([script], env=env, capture_output=True, text=True, timeout=30)
    client = redis.Redis(host="127.0.0.1", port=port)
    try:
        assert first.returncode == 0, first.stderr
        assert "starting redis-server" in first.stdout
        assert client.ping() is True
        assert client.config_get("appendonly") == {"appendonly": "no"}
        again = subprocess.run([script], env=env, capture_output=True, text=True, timeout=30)
        assert again.returncode == 0
        assert "starting" not in again.stdout
    finally:
        with contextlib.suppress(redis.ConnectionError):
            client.shutdown(nosave=True)
        client.close()


def _fake_exe(path: Path, body: str) -> None:
    path.write_text(f"#!/usr/bin/env bash\n{body}\n")
    path.chmod(0o755)


def test_bootstrap_installs_once_and_skips_pip_while_pyproject_is_unchanged(tmp_path: Path) -> None:
    """scripts/bootstrap.sh on a copy of the repo, with a recording stand-in for .venv's python."""
    work = tmp_path / "repo"
    (work / "scripts").mkdir(parents=True)
    for script in ("bootstrap.sh", "ensure_redis.sh", "common.sh"):
        target = work / "scripts" / script
        target.write_text((REPO / "scripts" / script).read_text())
        target.chmod(0o755)
    (work / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text())
    calls = tmp_path / "pip-calls.txt"
    (work / ".venv" / "bin").mkdir(parents=True)
    _fake_exe(work / ".venv" / "bin" / "python", f'echo "$*" >> {calls}')
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("chromium", "cc"):
        _fake_exe(tools / name, "exit 0")
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}"}

    def bootstrap() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(work / "scripts" / "bootstrap.sh")],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    first = bootstrap()
    assert first.returncode == 0, first.stderr
    assert "-m pip install -q -e .[dev]" in calls.read_text()
    assert (work / ".venv" / ".sorryless-install-stamp").is_file()
    installs = calls.read_text().count("install -q -e")

    second = bootstrap()
    assert second.returncode == 0, second.stderr
    assert "package up to date" in second.stdout
    assert calls.read_text().count("install -q -e") == installs

    with (work / "pyproject.toml").open("a") as fh:
        fh.write("\n# changed\n")
    third = bootstrap()
    assert third.returncode == 0, third.stderr
    assert calls.read_text().count("install -q -e") == installs + 1
