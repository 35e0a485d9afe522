"""`sorryless run`'s process management, with injected children (no real services)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sorryless.config import Settings
from sorryless.lean_env import NO_TOOLCHAIN_REASON, LeanStatus
from sorryless.stack import _port_open, plan_children

REPO = Path(__file__).resolve().parents[2]

CHILD = """
import os, signal, sys, time
from pathlib import Path
name, out, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if mode == "dies":
    time.sleep(0.5)
    sys.exit(3)
(out / f"{name}.pid").write_text(str(os.getpid()))
while True:
    time.sleep(0.1)
"""

DRIVER = """
import json, sys
from sorryless.stack import ChildSpec, run_stack
spec = json.loads(sys.argv[1])
children = [ChildSpec(c["name"], c["argv"]) for c in spec["children"]]
url = spec.get("url")
wait_for = tuple(spec["wait_for"]) if spec.get("wait_for") else None
sys.exit(run_stack(children, url=url, wait_for=wait_for, grace_s=spec["grace_s"]))
"""


def _child(name: str, out: Path, mode: str = "normal") -> dict[str, object]:
    return {"name": name, "argv": [sys.executable, "-c", CHILD, name, str(out), mode]}


def _start_driver(
    children: list[dict[str, object]], grace_s: float = 5.0, **extra: object
) -> subprocess.Popen[str]:
    spec = json.dumps({"children": children, "grace_s": grace_s, **extra})
    return subprocess.Popen(
        [sys.executable, "-c", DRIVER, spec],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait_pids(out: Path, names: list[str], timeout: float = 15.0) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        files = {n: out / f"{n}.pid" for n in names}
        if all(f.exists() and f.read_text() for f in files.values()):
            return {n: int(f.read_text()) for n, f in files.items()}
        time.sleep(0.05)
    raise AssertionError(f"children did not start: {list(out.iterdir())}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_every_child_and_exits_0(tmp_path: Path, sig: signal.Signals) -> None:
    names = ["gateway", "worker-1", "worker-2"]
    driver = _start_driver([_child(n, tmp_path) for n in names])
    pids = _wait_pids(tmp_path, names)
    assert all(_alive(p) for p in pids.values())
    driver.send_signal(sig)
    out, _ = driver.communicate(timeout=20)
    assert driver.returncode == 0, out
    assert not any(_alive(p) for p in pids.values())
    for n in names:
        assert f"started {n}" in out


def test_a_child_ignoring_sigterm_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    driver = _start_driver([_child("stubborn", tmp_path, "stubborn"), _child("ok", tmp_path)], grace_s=1.0)
    pids = _wait_pids(tmp_path, ["stubborn", "ok"])
    time.sleep(0.3)  # let the child install its SIGTERM handler
    t0 = time.monotonic()
    driver.send_signal(signal.SIGTERM)
    out, _ = driver.communicate(timeout=20)
    assert driver.returncode == 0
    assert 0.9 <= time.monotonic() - t0 < 10
    assert "did not stop in 1 s; killing it" in out
    assert not _alive(pids["stubborn"])


def test_a_dying_child_stops_the_stack_with_exit_1(tmp_path: Path) -> None:
    driver = _start_driver([_child("ok", tmp_path), _child("dies", tmp_path, "dies")])
    pids = _wait_pids(tmp_path, ["ok"])
    out, _ = driver.communicate(timeout=20)
    assert driver.returncode == 1
    assert "dies exited with code 3" in out
    assert not _alive(pids["ok"])


def test_url_is_printed_once_the_gateway_port_answers(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = (
        f"import socket,time; s=socket.socket(); s.bind(('127.0.0.1',{port})); s.listen(); time.sleep(60)"
    )
    gateway: dict[str, object] = {"name": "gateway", "argv": [sys.executable, "-c", server]}
    url = f"http://127.0.0.1:{port}"
    driver = _start_driver([gateway], url=url, wait_for=["127.0.0.1", port])
    assert driver.stdout is not None
    deadline = time.monotonic() + 15
    seen = ""
    while time.monotonic() < deadline and "running at" not in seen:
        seen += driver.stdout.readline()
    driver.send_signal(signal.SIGINT)
    driver.communicate(timeout=20)
    assert f"sorryless is running at {url}" in seen
    assert driver.returncode == 0


def test_a_stop_request_does_not_hide_a_gateway_that_is_up() -> None:
    """Ctrl-C right after start-up: one more try still finds the open port; a closed one is given up at once."""
    stop = threading.Event()
    stop.set()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert _port_open("127.0.0.1", port, 30.0, stop) is True
    started = time.monotonic()
    assert _port_open("127.0.0.1", port, 30.0, stop) is False
    assert time.monotonic() - started < 5


def _settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, lean_server_url=None, _env_file=None)


def test_plan_without_lean_has_gateway_and_workers_only(tmp_path: Path) -> None:
    lean = LeanStatus(available=False, backend="none", reason=NO_TOOLCHAIN_REASON)
    plan = plan_children(_settings(tmp_path), host="0.0.0.0", port=8123, workers=3, lean=lean)
    assert [c.name for c in plan] == ["gateway", "worker-1", "worker-2", "worker-3"]
    assert plan[0].argv[-5:] == ["serve", "--host", "0.0.0.0", "--port", "8123"]
    assert all(c.argv[-1] == "worker" for c in plan[1:])
    assert all("SORRYLESS_LEAN_SERVER_URL" not in c.env for c in plan)


def test_plan_with_lean_starts_the_lean_server_first_and_points_others_at_it(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    lean = LeanStatus(available=True, backend="oneshot", lean_bin="/usr/bin/lean")
    plan = plan_children(settings, host="127.0.0.1", port=8000, workers=1, lean=lean)
    assert [c.name for c in plan] == ["lean-server", "gateway", "worker-1"]
    assert plan[0].argv[-5:] == [
        "lean-server",
        "--host",
        "127.0.0.1",
        "--port",
        str(settings.lean_server_port),
    ]
    expected = f"http://{settings.lean_server_host}:{settings.lean_server_port}"
    assert all(c.env["SORRYLESS_LEAN_SERVER_URL"] == expected for c in plan[1:])


@pytest.mark.slow
def test_sorryless_run_starts_the_real_stack_and_health_tells_the_truth(
    tmp_path: Path, redis_url: str, redis_prefix: str
) -> None:
    """`sorryless run` with the real gateway and a worker: /health answers, Ctrl-C stops all."""
    import httpx

    from sorryless.lean_env import probe_lean

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        **os.environ,
        "SORRYLESS_DATA_DIR": str(tmp_path / "data"),
        "SORRYLESS_REDIS_URL": redis_url,
        "SORRYLESS_REDIS_KEY_PREFIX": redis_prefix,
        "SORRYLESS_LEAN_SERVER_PORT": str(port + 1 if port < 65000 else port - 1),
    }
    code = "import sys; from sorryless.cli import main; sys.argv[0] = 'sorryless'; main()"
    driver = subprocess.Popen(
        [sys.executable, "-c", code, "run", "--port", str(port), "--workers", "1"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        health: httpx.Response | None = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and driver.poll() is None:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=5)
                break
            except httpx.TransportError:
                time.sleep(0.3)
        assert health is not None, "gateway never answered"
        checks = health.json()["checks"]
        lean = probe_lean(Settings(data_dir=tmp_path / "data", _env_file=None))
        assert checks["redis"]["status"] == "ok", checks["redis"]
        if lean.available:  # a provisioned machine: the lean-server runs and answers
            assert checks["lean"]["status"] == "ok", checks["lean"]
        else:  # here and in CI: no toolchain, and /health says so with the documented reason
            assert checks["lean"]["status"] == "unavailable", checks["lean"]
            assert checks["lean"]["detail"] == NO_TOOLCHAIN_REASON
    finally:
        driver.send_signal(signal.SIGINT)
        out, _ = driver.communicate(timeout=60)
    assert driver.returncode == 0, out
    assert f"sorryless is running at http://127.0.0.1:{port}" in out
    assert "started worker-1" in out
