"""setup-lean: offline failure, idempotency, staging clean-up, lock file, and the real thing."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from sorryless.config import Settings
from sorryless.lean_env import NO_TOOLCHAIN_REASON, LeanLock, probe_lean, read_lock, write_lock
from sorryless.setup_lean import LeanInstaller, SetupError, StepFailed, register

REPO = Path(__file__).resolve().parents[2]
MATHLIB_SHA = "a" * 40
REPL_SHA = "b" * 40


@pytest.fixture(autouse=True)
def _no_lean_env(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The installer tests describe their own Lean settings: a machine's SORRYLESS_LEAN_* (set for
    the `lean`-marked tests) must not leak into them (the CLI tests build Settings from the env)."""
    if request.node.get_closest_marker("lean") is None:
        for name in ("SORRYLESS_LEAN_PROJECT", "SORRYLESS_LEAN_REPL_CMD", "SORRYLESS_LEAN_BIN"):
            monkeypatch.delenv(name, raising=False)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _settings(tmp_path: Path, **extra: Any) -> Settings:
    base = Settings(
        data_dir=tmp_path / "data",
        elan_home=tmp_path / "elan",
        lean_probe_url=f"http://127.0.0.1:{_closed_port()}",
        lean_repl_cmd=None,
        lean_bin=None,
        lean_project=None,
        _env_file=None,
    )
    return base.model_copy(update=extra)


class FakeRunner:
    """Stands in for git/elan/lake: records argv and creates what the real commands would."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.calls: list[list[str]] = []
        self.fail_on = fail_on

    def __call__(
        self, argv: Sequence[str], *, cwd: Path | None = None, env: Mapping[str, str] | None = None
    ) -> str:
        args = list(argv)
        self.calls.append(args)
        joined = " ".join(args)
        if self.fail_on and self.fail_on in joined:
            raise StepFailed(f"`{joined}` failed with exit code 1:\nscripted failure")
        if args[:2] == ["git", "clone"]:
            Path(args[-1]).mkdir(parents=True)
        elif "rev-parse" in args:
            return REPL_SHA + "\n"
        elif args[-2:] == ["lean", "--version"]:
            return "Lean (version 4.24.0, x86_64-unknown-linux-gnu, commit abc, Release)\n"
        elif args[-2:] == ["lake", "build"] and cwd is not None:
            (cwd / ".lake" / "build" / "bin").mkdir(parents=True)
            (cwd / ".lake" / "build" / "bin" / "repl").write_text("#!/bin/sh\n")
        elif args[-2:] == ["lake", "update"] and cwd is not None:
            manifest = {
                "packages": [{"name": "mathlib", "rev": MATHLIB_SHA}, {"name": "aesop", "rev": "c" * 40}]
            }
            (cwd / "lake-manifest.json").write_text(json.dumps(manifest))
        elif args[-2:] == ["which", "lake"]:
            return "/elan/toolchains/leanprover--lean4---v4.24.0/bin/lake\n"
        return ""


def _fake_fetch(url: str, dest: Path) -> None:
    dest.write_text("#!/bin/sh\n")


def _installer(
    settings: Settings, runner: FakeRunner, network: bool = True
) -> tuple[LeanInstaller, list[str]]:
    probes: list[str] = []

    def network_ok(url: str) -> bool:
        probes.append(url)
        return network

    installer = LeanInstaller(
        settings,
        run=runner,
        network_ok=network_ok,
        fetch=_fake_fetch,
        which=lambda name: "/usr/bin/elan" if name == "elan" else None,
        say=lambda line: None,
    )
    return installer, probes


def _cli_app() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.callback()
    def _root() -> None:  # keeps `setup-lean` a named sub-command
        pass

    return app


# --------------------------------------------------------------------------------------------
def test_offline_exits_2_with_a_clear_message_and_leaves_nothing(tmp_path: Path) -> None:
    port = _closed_port()
    env = {
        "SORRYLESS_DATA_DIR": str(tmp_path / "data"),
        "SORRYLESS_ELAN_HOME": str(tmp_path / "elan"),
        "SORRYLESS_LEAN_PROBE_URL": f"http://127.0.0.1:{port}",
    }
    result = CliRunner().invoke(_cli_app(), ["setup-lean"], env=env)
    assert result.exit_code == 2, result.output
    assert "no network" in result.output
    assert "Nothing was installed" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").rglob("*"))
    assert not (tmp_path / "elan").exists()


def test_offline_through_the_real_command_line_is_fast_and_has_no_traceback(tmp_path: Path) -> None:
    code = "from sorryless.setup_lean import register; import typer; app = typer.Typer(); register(app)\n"
    code += "@app.callback()\ndef _r() -> None: pass\napp()"
    env = {
        **os.environ,
        "SORRYLESS_DATA_DIR": str(tmp_path / "data"),
        "SORRYLESS_ELAN_HOME": str(tmp_path / "elan"),
    }
    proc = subprocess.run(
        [sys.executable, "-c", code, "setup-lean", "--probe-url", f"http://127.0.0.1:{_closed_port()}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        cwd=REPO,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "needs the network" in proc.stderr
    assert not (tmp_path / "data").exists()


def test_install_builds_in_staging_moves_into_place_and_writes_the_lock(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    runner = FakeRunner()
    installer, probes = _installer(settings, runner)
    lock = installer.install()
    assert probes == [settings.lean_probe_url]
    assert lock.toolchain == settings.lean_toolchain
    assert lock.lean_version == "4.24.0"
    assert lock.mathlib_commit == MATHLIB_SHA
    assert lock.repl_commit == REPL_SHA
    assert lock.repl_bin == settings.lean_dir / "repl" / ".lake" / "build" / "bin" / "repl"
    assert lock.repl_bin.is_file()
    assert (settings.lean_project_dir / "lakefile.toml").read_text().count(settings.mathlib_rev) == 1
    assert (settings.lean_project_dir / "lean-toolchain").read_text().strip() == settings.lean_toolchain
    assert (settings.lean_dir / "repl" / "lean-toolchain").read_text().strip() == settings.lean_toolchain
    assert read_lock(settings) == lock
    assert [p.name for p in settings.lean_dir.iterdir() if p.name.startswith(".")] == []
    commands = [" ".join(c[1:]) for c in runner.calls if c[0] == "/usr/bin/elan"]
    assert commands.index(f"run {settings.lean_toolchain} lake exe cache get") < commands.index(
        f"run {settings.lean_toolchain} lake build SorrylessCheck"
    )
    assert [
        "git",
        "-C",
        str(settings.lean_dir / f".staging-{os.getpid()}" / "repl"),
        "checkout",
        "--quiet",
        "v4.24.0",
    ] in runner.calls


def test_rerun_with_everything_present_runs_nothing(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    first, _ = _installer(settings, FakeRunner())
    lock = first.install()
    runner = FakeRunner()
    again, probes = _installer(settings, runner, network=False)
    assert again.install() == lock
    assert runner.calls == []
    assert probes == []


def test_changed_pin_or_missing_binary_triggers_a_rebuild(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    _installer(settings, FakeRunner())[0].install()
    bumped = settings.model_copy(update={"mathlib_rev": "v4.25.0"})
    runner = FakeRunner()
    lock = _installer(bumped, runner)[0].install()
    assert lock.mathlib_rev == "v4.25.0"
    assert runner.calls
    lock.repl_bin.unlink()
    runner2 = FakeRunner()
    _installer(bumped, runner2)[0].install()
    assert any("clone" in c for c in runner2.calls)


def test_failed_step_cleans_staging_and_keeps_the_previous_install(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    good = _installer(settings, FakeRunner())[0].install()
    bumped = settings.model_copy(update={"repl_rev": "v9.9.9"})
    installer, _ = _installer(bumped, FakeRunner(fail_on="cache get"))
    with pytest.raises(StepFailed, match="scripted failure"):
        installer.install()
    assert read_lock(settings) == good
    assert good.repl_bin.is_file()
    assert sorted(p.name for p in settings.lean_dir.iterdir()) == [
        "project",
        "repl",
        "sorryless-lean.lock.json",
    ]


def test_failed_first_install_leaves_no_lean_dir(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    installer, _ = _installer(settings, FakeRunner(fail_on="lake build"))
    with pytest.raises(StepFailed):
        installer.install()
    assert not settings.lean_dir.exists()
    assert read_lock(settings) is None


def test_lock_round_trip_and_garbage_lock(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    lock = LeanLock(
        toolchain="leanprover/lean4:v4.24.0",
        lean_version="4.24.0",
        mathlib_commit=MATHLIB_SHA,
        repl_commit=REPL_SHA,
        project_dir=settings.lean_project_dir,
        repl_bin=settings.lean_dir / "repl" / "bin" / "repl",
        created_at=datetime(2026, 1, 2, tzinfo=UTC),
    )
    path = write_lock(settings, lock)
    assert path == settings.lean_lock_file
    assert read_lock(settings) == lock
    assert json.loads(path.read_text())["mathlib_commit"] == MATHLIB_SHA
    path.write_text("{not json")
    assert read_lock(settings) is None


def test_probe_reports_unavailable_with_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    status = probe_lean(_settings(tmp_path))
    assert status.available is False
    assert status.backend == "none"
    assert status.reason == NO_TOOLCHAIN_REASON
    assert status.describe() == f"unavailable — {NO_TOOLCHAIN_REASON}"


def test_probe_prefers_custom_repl_cmd_then_lock_then_lean_bin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    custom = probe_lean(_settings(tmp_path, lean_repl_cmd="python fake.py --x"))
    assert (custom.backend, custom.available, custom.repl_argv) == (
        "repl",
        True,
        ["python", "fake.py", "--x"],
    )

    lean = tmp_path / "lean"
    lean.write_text("#!/bin/sh\n")
    lean.chmod(0o755)
    oneshot = probe_lean(_settings(tmp_path, lean_bin=str(lean)))
    assert (oneshot.backend, oneshot.lean_bin) == ("oneshot", str(lean))

    settings = _settings(tmp_path)
    _installer(settings, FakeRunner())[0].install()
    repl = probe_lean(settings)
    assert repl.backend == "repl"
    assert repl.lock is not None and repl.lock.mathlib_commit == MATHLIB_SHA
    assert repl.repl_argv is not None and repl.repl_argv[-1] == str(repl.lock.repl_bin)
    assert repl.repl_cwd == settings.lean_project_dir


@pytest.mark.lean
@pytest.mark.slow
def test_real_setup_lean_is_idempotent_and_locks_the_pins(tmp_path: Path) -> None:
    """With SORRYLESS_LEAN_PROJECT set (a machine with Lean), the real installer's lock is sound."""
    settings = Settings()
    lock = LeanInstaller(settings).install()
    assert lock.toolchain == settings.lean_toolchain
    assert len(lock.mathlib_commit) == 40
    assert len(lock.repl_commit) == 40
    assert lock.repl_bin.is_file()
    status = probe_lean(settings)
    assert status.backend == "repl"
    out = subprocess.run(
        [*(status.repl_argv or [])],
        input='{"cmd": "theorem t : 1 + 1 = 2 := rfl"}\n\n',
        capture_output=True,
        text=True,
        cwd=status.repl_cwd,
        timeout=300,
    )
    assert json.loads(out.stdout.split("\n\n")[0]) == {"env": 0}
    recorder = FakeRunner()
    again = LeanInstaller(settings, run=recorder)
    assert again.install() == lock
    assert recorder.calls == []


def test_a_foreign_project_is_never_replaced(tmp_path: Path) -> None:
    mine = tmp_path / "my-project"
    mine.mkdir()
    (mine / "lakefile.toml").write_text('name = "Mine"\n')
    settings = _settings(tmp_path, lean_project=mine)
    runner = FakeRunner()
    installer, _ = _installer(settings, runner)
    with pytest.raises(SetupError, match="not created by setup-lean"):
        installer.install()
    assert (mine / "lakefile.toml").read_text() == 'name = "Mine"\n'
    assert runner.calls == []


@pytest.fixture
def answering_url() -> Iterator[str]:
    """A local HTTP server answering 200 (the network probe succeeds)."""

    class _Ok(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_file_system_error_is_a_clean_message_and_exit_1(tmp_path: Path, answering_url: str) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the data directory should go\n")
    code = "from sorryless.setup_lean import register; import typer; app = typer.Typer(); register(app)\n"
    code += "@app.callback()\ndef _r() -> None: pass\napp()"
    env = {
        **os.environ,
        "SORRYLESS_DATA_DIR": str(blocker / "data"),
        "SORRYLESS_ELAN_HOME": str(tmp_path / "elan"),
    }
    proc = subprocess.run(
        [sys.executable, "-c", code, "setup-lean", "--probe-url", answering_url],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        cwd=REPO,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    assert "setup-lean failed" in output and "file system error" in output
    assert "Traceback" not in output
    assert blocker.read_text().startswith("a file")


def test_an_os_error_from_the_installer_is_a_setup_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    settings = _settings(tmp_path).model_copy(update={"data_dir": blocker / "data"})
    installer, _ = _installer(settings, FakeRunner())
    with pytest.raises(SetupError, match="file system error"):
        installer.install()


@pytest.mark.parametrize("failing", ["second_move", "lock_write"])
def test_a_failed_swap_puts_the_previous_install_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    settings = _settings(tmp_path)
    good = _installer(settings, FakeRunner())[0].install()
    old_lakefile = (settings.lean_project_dir / "lakefile.toml").read_text()
    (good.repl_bin.parent / "marker").write_text("the previous REPL build")
    bumped = settings.model_copy(update={"mathlib_rev": "v9.9.9"})
    installer, _ = _installer(bumped, FakeRunner())
    if failing == "second_move":
        real_move = shutil.move
        moves: list[str] = []

        def move(src: str, dst: str) -> Any:
            moves.append(dst)
            if len(moves) == 2:
                raise OSError(28, "No space left on device", dst)
            return real_move(src, dst)

        monkeypatch.setattr("sorryless.setup_lean.shutil.move", move)
    else:

        def no_lock(settings: Settings, lock: LeanLock) -> Path:
            raise OSError(28, "No space left on device", str(settings.lean_lock_file))

        monkeypatch.setattr("sorryless.setup_lean.write_lock", no_lock)
    with pytest.raises(SetupError, match="No space left on device"):
        installer.install()
    assert read_lock(settings) == good
    assert (settings.lean_project_dir / "lakefile.toml").read_text() == old_lakefile
    assert (good.repl_bin.parent / "marker").read_text() == "the previous REPL build"
    assert sorted(p.name for p in settings.lean_dir.iterdir()) == [
        "project",
        "repl",
        "sorryless-lean.lock.json",
    ]


def test_the_lean_marker_runs_only_when_the_project_holds_a_built_repl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import _lean_project_reason

    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.setenv("SORRYLESS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SORRYLESS_ELAN_HOME", str(tmp_path / "elan"))
    bare = tmp_path / "bare-project"
    bare.mkdir()
    monkeypatch.setenv("SORRYLESS_LEAN_PROJECT", str(bare))
    reason = _lean_project_reason()
    assert reason is not None and "holds no built REPL" in reason and NO_TOOLCHAIN_REASON in reason

    settings = _settings(tmp_path)
    _installer(settings, FakeRunner())[0].install()  # a lock whose REPL and project files exist
    monkeypatch.setenv("SORRYLESS_LEAN_PROJECT", str(settings.lean_project_dir))
    assert _lean_project_reason() is None
