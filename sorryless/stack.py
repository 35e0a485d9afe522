"""`sorryless run`: the whole stack in the foreground, as child processes.

Children: the gateway (`sorryless serve`), N workers (`sorryless worker`) and, when a Lean
backend is available here, `sorryless lean-server` (gateway and workers then reach it over
HTTP through ``SORRYLESS_LEAN_SERVER_URL``). Ctrl-C / SIGTERM stops them all (terminate,
wait a grace period, kill) and exits 0; if a child dies on its own, the others are stopped
and the exit code is 1.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import FrameType

import typer

from sorryless.config import Settings
from sorryless.lean_env import LeanStatus, probe_lean

_SORRYLESS = [
    sys.executable,
    "-c",
    "import sys; from sorryless.cli import main; sys.argv[0] = 'sorryless'; main()",
]
_PR_SET_PDEATHSIG = 1


@dataclass
class ChildSpec:
    """One child process of the stack."""

    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)


def plan_children(
    settings: Settings, *, host: str, port: int, workers: int, lean: LeanStatus
) -> list[ChildSpec]:
    """The processes `sorryless run` starts, in start order."""
    env: dict[str, str] = {}
    children: list[ChildSpec] = []
    if lean.available and not settings.lean_server_url:
        lean_url = f"http://{settings.lean_server_host}:{settings.lean_server_port}"
        env["SORRYLESS_LEAN_SERVER_URL"] = lean_url
        children.append(
            ChildSpec(
                "lean-server",
                [
                    *_SORRYLESS,
                    "lean-server",
                    "--host",
                    settings.lean_server_host,
                    "--port",
                    str(settings.lean_server_port),
                ],
            )
        )
    children.append(
        ChildSpec("gateway", [*_SORRYLESS, "serve", "--host", host, "--port", str(port)], dict(env))
    )
    children.extend(ChildSpec(f"worker-{i + 1}", [*_SORRYLESS, "worker"], dict(env)) for i in range(workers))
    return children


def _die_with_parent() -> None:
    """Children get SIGTERM when `sorryless run` dies, even by SIGKILL (Linux)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


@dataclass
class ProcessGroup:
    """Starts, watches and stops the children."""

    specs: Sequence[ChildSpec]
    grace_s: float = 10.0
    say: Callable[[str], None] = print
    procs: list[tuple[ChildSpec, subprocess.Popen[bytes]]] = field(default_factory=list)
    stop_requested: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        for spec in self.specs:
            proc = subprocess.Popen(
                spec.argv,
                env={**os.environ, **spec.env},
                start_new_session=True,  # Ctrl-C reaches us only; we stop children in order
                preexec_fn=_die_with_parent,
            )
            self.procs.append((spec, proc))
            self.say(f"started {spec.name} (pid {proc.pid})")

    def watch(self, poll_s: float = 0.2) -> int:
        """Block until a stop is requested (-> 0) or a child exits on its own (-> 1)."""
        while not self.stop_requested.wait(poll_s):
            for spec, proc in self.procs:
                rc = proc.poll()
                if rc is not None:
                    self.say(f"{spec.name} exited with code {rc}; stopping the stack")
                    self.stop()
                    return 1
        self.stop()
        return 0

    def stop(self) -> None:
        """Terminate in reverse start order, wait up to grace_s, then kill what is left."""
        for _spec, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + self.grace_s
        for spec, proc in reversed(self.procs):
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.say(f"{spec.name} did not stop in {self.grace_s:g} s; killing it")
                proc.kill()
                proc.wait()

    def request_stop(self, signum: int, frame: FrameType | None) -> None:
        self.stop_requested.set()


def _port_open(host: str, port: int, timeout_s: float, stop: threading.Event) -> bool:
    """True once ``host:port`` accepts a connection; False after ``timeout_s``, or when a stop is
    requested and one more try finds the port still closed (a Ctrl-C right after start-up must not
    hide that the gateway did come up)."""
    deadline = time.monotonic() + timeout_s
    target = "127.0.0.1" if host in ("0.0.0.0", "") else host
    while True:
        try:
            with socket.create_connection((target, port), timeout=0.5):
                return True
        except OSError:
            if stop.is_set() or time.monotonic() >= deadline:
                return False
            stop.wait(0.2)


def run_stack(
    specs: Sequence[ChildSpec],
    *,
    url: str | None = None,
    wait_for: tuple[str, int] | None = None,
    grace_s: float = 10.0,
    say: Callable[[str], None] = print,
) -> int:
    """Run ``specs`` in the foreground until Ctrl-C/SIGTERM (-> 0) or a child's death (-> 1)."""
    group = ProcessGroup(specs, grace_s=grace_s, say=say)
    previous = {sig: signal.signal(sig, group.request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        group.start()
        if url is not None:
            if wait_for is not None and _port_open(wait_for[0], wait_for[1], 30.0, group.stop_requested):
                say(f"sorryless is running at {url}  (Ctrl-C to stop)")
            elif not group.stop_requested.is_set():
                say(f"sorryless is starting at {url}  (Ctrl-C to stop)")
        return group.watch()
    finally:
        group.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def register(app: typer.Typer) -> None:
    @app.command("run")
    def run(
        host: str | None = typer.Option(
            None, "--host", help="Gateway bind host (default: settings.api_host)."
        ),
        port: int | None = typer.Option(None, "--port", help="Gateway port (default: settings.api_port)."),
        workers: int = typer.Option(1, "--workers", min=0, help="Worker processes."),
    ) -> None:
        """Start the gateway, the workers and (when Lean is available) the lean-server; Ctrl-C stops all."""
        from sorryless.logging import configure_logging

        settings = Settings()
        configure_logging(settings)
        bind_host = host or settings.api_host
        bind_port = port or settings.api_port
        lean = probe_lean(settings)
        typer.echo(f"lean: {lean.describe()}")
        specs = plan_children(settings, host=bind_host, port=bind_port, workers=workers, lean=lean)
        shown = "127.0.0.1" if bind_host in ("0.0.0.0", "") else bind_host
        url = f"http://{shown}:{bind_port}"
        code = run_stack(specs, url=url, wait_for=(bind_host, bind_port), say=lambda line: typer.echo(line))
        typer.echo("sorryless stopped" if code == 0 else "sorryless stopped: a component exited on its own")
        raise typer.Exit(code)
