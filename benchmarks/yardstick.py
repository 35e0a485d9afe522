#!/usr/bin/env python3
"""The Kimina yardstick against ``sorryless lean-server``.

The yardstick is an external folder of three programs (``--tools DIR``), the ones Kimina Lean
Server was measured with: ``repl_double.py`` (a REPL stand-in that sleeps ``REPL_DOUBLE_MS`` per
command and ``REPL_DOUBLE_IMPORT_MS`` per import header), ``load_kimina_api.py`` (closed-loop load
on ``/api/check``) and ``direct_repl_baseline.py`` (the same commands sent straight to the doubles:
the floor). For every run it starts a fresh ``sorryless lean-server`` whose 4 REPL processes are
the yardstick's double (2000 ms import), waits for ``/health``, drives it with
``load_kimina_api.py`` (``--server-pid`` for the server's CPU) and stops it. Shapes:

  1x        -S 400 -B 8 -C 4                      (100 ms service)
  10x       -S 400 -B 8 -C 40                     (100 ms service)
  latency   -S 60 -B 1 -C 1 --service-ms 5        (5 ms service)
  dispatch  -S 2000 -B 8 -C 16 --service-ms 5     (5 ms service)
  noheader  -S 400 -B 8 -C 4 --no-header          (100 ms service)
  leak      two header-less requests: A declares `axiom cheat_X : False` on every process,
            B declares the same name; any "already declared" in B is a leak

plus the floor from ``direct_repl_baseline.py`` (100 ms and 5 ms). Medians of ``--repeat`` runs.
Prints one JSON summary and a table next to Kimina's figures (docs/lean-repl.md).

    .venv/bin/python benchmarks/yardstick.py --tools DIR [--repeat 3] [--only 1x,latency] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
REPLS = 4


@dataclass(frozen=True)
class Tools:
    """The yardstick's programs, in the folder given as ``--tools``."""

    double: Path
    load: Path
    direct: Path

    @classmethod
    def in_folder(cls, folder: Path) -> Tools:
        tools = cls(
            folder / "repl_double.py", folder / "load_kimina_api.py", folder / "direct_repl_baseline.py"
        )
        missing = [str(p) for p in (tools.double, tools.load, tools.direct) if not p.is_file()]
        if missing:
            raise SystemExit(
                f"yardstick: not found: {', '.join(missing)} (--tools names the yardstick folder)"
            )
        return tools


SHAPES: dict[str, dict[str, Any]] = {
    "1x": {"service_ms": 100, "args": ["-S", "400", "-B", "8", "-C", "4"]},
    "10x": {"service_ms": 100, "args": ["-S", "400", "-B", "8", "-C", "40"]},
    "latency": {"service_ms": 5, "args": ["-S", "60", "-B", "1", "-C", "1"]},
    "dispatch": {"service_ms": 5, "args": ["-S", "2000", "-B", "8", "-C", "16"]},
    "noheader": {"service_ms": 100, "args": ["-S", "400", "-B", "8", "-C", "4", "--no-header"]},
}

KIMINA = {
    "1x": "35.8/s, 11.7 ms overhead, p50/p99 0.857/1.01 s, ~11 ms CPU/snippet",
    "10x": "400/400 ok at MAX_WAIT=60 (p50 6.4 s, p99 9.7 s); 232/400 failed at MAX_WAIT=5",
    "latency": "114 ms p50",
    "dispatch": "139/s (259/s with WARNING logging)",
    "noheader": "-",
    "leak": "leaked 3/3 runs",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_LAUNCHER = """
import sys
import typer
try:
    from sorryless.cli import build_app
    app = build_app()
except ImportError:  # other parts' commands not installed yet: only lean_server's
    from lean_server.cli import register
    app = typer.Typer()
    app.callback()(lambda: None)
    register(app)
app(sys.argv[1:], prog_name="sorryless")
"""


def _server_argv(port: int) -> list[str]:
    """``sorryless lean-server`` through the package's CLI entry point."""
    return [sys.executable, "-c", _LAUNCHER, "lean-server", "--host", "127.0.0.1", "--port", str(port)]


class Server:
    """A fresh ``sorryless lean-server`` with REPLS doubles of ``service_ms``."""

    def __init__(
        self,
        double: Path,
        service_ms: float,
        log_dir: Path,
        extra_env: dict[str, str] | None = None,
        max_uses: int = 1_000_000,
    ) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ)
        env.update(
            {
                "PYTHONPATH": str(REPO),
                "SORRYLESS_LEAN_REPL_CMD": shlex.join([sys.executable, str(double)]),
                "SORRYLESS_LEAN_MAX_PROCESSES": str(REPLS),
                "SORRYLESS_LEAN_RECHECK_PASSING": "false",
                # Kimina never recycles a REPL; --max-uses 200 (our default) shows that recycling
                # swaps in a warm replacement instead of stalling on a re-import.
                "SORRYLESS_LEAN_MAX_USES": str(max_uses),
                "SORRYLESS_LOG_LEVEL": "WARNING",
                "SORRYLESS_DATA_DIR": str(log_dir / "data"),
                "REPL_DOUBLE_MS": str(service_ms),
                "REPL_DOUBLE_IMPORT_MS": "2000",
            }
        )
        env.update(extra_env or {})
        self._stderr = open(log_dir / f"server-{self.port}.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            _server_argv(self.port), cwd=REPO, env=env, stdout=self._stderr, stderr=self._stderr
        )

    def wait_ready(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"lean-server exited with {self.proc.returncode}; see {self._stderr.name}")
            try:
                if httpx.get(self.url + "/health", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"lean-server not healthy after {timeout_s} s; see {self._stderr.name}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._stderr.close()


def _run_load(load: Path, server: Server, shape: dict[str, Any], label: str) -> dict[str, Any]:
    argv = [
        sys.executable, str(load), "--url", server.url, *shape["args"],
        "--service-ms", str(shape["service_ms"]), "--max-repls", str(REPLS),
        "--server-pid", str(server.proc.pid), "--label", label,
    ]  # fmt: skip
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=900)
    return dict(json.loads(out.stdout))


def _leak_check(server: Server) -> dict[str, Any]:
    """Request A declares ``axiom cheat_TAG : False`` header-less on every process; B re-declares it."""
    tag = secrets.token_hex(4)
    code = f"axiom cheat_{tag} : False\ntheorem use_{{i}}_{tag} : False := cheat_{tag}"

    def request(phase: str) -> list[dict[str, Any]]:
        body = {
            "snippets": [
                {"id": f"{phase}{i}", "code": code.format(i=f"{phase}{i}")} for i in range(2 * REPLS)
            ]
        }
        r = httpx.post(server.url + "/api/check", json=body, timeout=120.0)
        r.raise_for_status()
        return list(r.json()["results"])

    a, b = request("a"), request("b")

    def leaked(results: list[dict[str, Any]]) -> int:
        return sum(
            1 for r in results
            if any("already been declared" in m.get("data", "") for m in (r.get("response") or {}).get("messages", []))
        )  # fmt: skip

    return {"label": "leak", "a_leaks": leaked(a), "b_leaks": leaked(b), "b_snippets": len(b)}


def _direct(direct: Path, service_ms: float, snippets: int) -> dict[str, Any]:
    env = dict(os.environ, REPL_DOUBLE_MS=str(service_ms), REPL_DOUBLE_IMPORT_MS="2000")
    argv = [
        sys.executable,
        str(direct),
        "-N",
        str(REPLS),
        "-S",
        str(snippets),
        "--service-ms",
        str(service_ms),
    ]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, env=env, timeout=600)
    return dict(json.loads(out.stdout))


def _median(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if isinstance(r.get(key), int | float)]
    return round(statistics.median(values), 4) if values else None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--tools",
        type=Path,
        required=True,
        help="the yardstick folder: repl_double.py, load_kimina_api.py, direct_repl_baseline.py",
    )
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument(
        "--only", default="", help="comma-separated shapes (1x,10x,latency,dispatch,noheader,leak,floor)"
    )
    p.add_argument("--out", default=None, help="write the full JSON summary here")
    p.add_argument("--log-dir", default="/tmp/sorryless-yardstick")
    p.add_argument(
        "--max-uses", type=int, default=1_000_000, help="SORRYLESS_LEAN_MAX_USES (200 = the default)"
    )
    a = p.parse_args()
    tools = Tools.in_folder(a.tools)
    wanted = [s for s in a.only.split(",") if s] or [*SHAPES, "leak", "floor"]
    log_dir = Path(a.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {"runs": {}, "median": {}, "max_uses": a.max_uses, "loadavg": os.getloadavg()}

    for name in wanted:
        if name == "floor":
            floor = {"100ms": _direct(tools.direct, 100, 400), "5ms": _direct(tools.direct, 5, 2000)}
            summary["floor"] = floor
            print(f"floor: {json.dumps(floor)}", file=sys.stderr)
            continue
        runs: list[dict[str, Any]] = []
        for i in range(a.repeat):
            shape = SHAPES.get(name, {"service_ms": 100})
            server = Server(tools.double, shape["service_ms"], log_dir, max_uses=a.max_uses)
            try:
                server.wait_ready()
                result = (
                    _leak_check(server)
                    if name == "leak"
                    else _run_load(tools.load, server, shape, f"{name}#{i}")
                )
            finally:
                server.stop()
            runs.append(result)
            print(
                f"{name}#{i}: {json.dumps({k: v for k, v in result.items() if k != 'error_samples'})}",
                file=sys.stderr,
            )
        summary["runs"][name] = runs
        keys = (
            ["a_leaks", "b_leaks"] if name == "leak" else
            ["throughput_ok_per_s", "overhead_ms_per_snippet", "latency_p50_s", "latency_p99_s", "server_cpu_s",
             "errors", "http_429", "wall_s"]
        )  # fmt: skip
        med = {k: _median(runs, k) for k in keys}
        if name != "leak" and med.get("server_cpu_s") is not None:
            snippets = int(SHAPES[name]["args"][1])
            med["server_cpu_ms_per_snippet"] = round(float(med["server_cpu_s"] or 0) / snippets * 1000, 3)
        summary["median"][name] = med

    summary["loadavg_end"] = os.getloadavg()
    text = json.dumps(summary, indent=2)
    if a.out:
        Path(a.out).write_text(text)
    print(text)
    print("\nshape      sorryless (median)                                                  Kimina")
    for name, med in summary["median"].items():
        print(f"{name:<10} {json.dumps(med):<80} {KIMINA.get(name, '')}")
    if "floor" in summary:
        f100, f5 = summary["floor"]["100ms"], summary["floor"]["5ms"]
        print(
            f"floor      100ms: {f100['throughput_per_s']}/s, {f100['overhead_ms_per_snippet']} ms/snippet; "
            f"5ms: {f5['throughput_per_s']}/s, p50 {f5['latency_p50_s'] * 1000:.2f} ms"
        )


if __name__ == "__main__":
    main()
