"""One-shot backend: ``lean --json FILE`` in a fresh process per check (perfect isolation).

Used for the final clean re-check of a passing proof and as the fallback when no REPL is
configured. ``lean --json`` prints one JSON message per line (``severity`` is
``information``/``warning``/``error``); they are normalised to the REPL's response shape.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

from lean_server.backend import CompileOutcome, CompileUnit
from lean_server.limits import MemoryLimiter, auto_max_processes, looks_like_oom
from lean_server.protocol import ReplStatus, normalise_severity, timeout_detail
from sorryless.config import Settings
from sorryless.lean_env import find_lean_bin, read_lock

_STDERR_TAIL = 4000


def find_lean(settings: Settings) -> list[str] | None:
    """argv prefix that runs ``lean`` for this installation, or None when there is none.

    ``settings.lean_bin`` wins; otherwise ``lean`` from PATH or elan. Inside a Lake project (one
    with a lakefile) it runs under ``lake env`` so Mathlib is on the search path.
    """
    lean = find_lean_bin(settings)
    if lean is None:
        return None
    project = settings.lean_project_dir
    if not ((project / "lakefile.lean").exists() or (project / "lakefile.toml").exists()):
        return [lean]
    lock = read_lock(settings)
    lake = str(lock.lake_bin) if lock is not None and lock.lake_bin is not None else shutil.which("lake")
    if lake is None:
        sibling = Path(lean).with_name("lake")
        lake = str(sibling) if sibling.exists() else None
    return [lake, "env", lean] if lake is not None else [lean]


def parse_json_lines(stdout: str) -> list[dict[str, Any]]:
    """Messages from ``lean --json`` output, in the REPL's message shape (plus Lean's ``kind``
    tag when present; ``fileName``, ``caption``, ``isSilent``, ``keepFullRange`` are dropped)."""
    messages: list[dict[str, Any]] = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            raw = json.loads(line)
        except ValueError:
            continue
        if not isinstance(raw, dict) or "severity" not in raw:
            continue
        message: dict[str, Any] = {
            "severity": normalise_severity(raw.get("severity")),
            "pos": raw.get("pos"),
            "endPos": raw.get("endPos"),
            "data": str(raw.get("data", "")),
        }
        kind = raw.get("kind")
        if isinstance(kind, str):
            message["kind"] = kind
        messages.append(message)
    return messages


class OneShotBackend:
    """Runs each unit as a file in a fresh ``lean`` process."""

    name = "oneshot"

    def __init__(self, settings: Settings, argv: list[str] | None = None) -> None:
        self.settings = settings
        self.argv = argv if argv is not None else find_lean(settings)
        self.limiter = MemoryLimiter(settings.lean_memory_limit_mb)
        self._slots = asyncio.Semaphore(auto_max_processes(settings))
        self.runs = 0

    @property
    def available(self) -> bool:
        return self.argv is not None

    async def start(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    def health(self) -> dict[str, Any]:
        return {"backend": self.name, "argv": self.argv, "memory_cap": self.limiter.mode, "runs": self.runs}

    async def compile(self, unit: CompileUnit) -> CompileOutcome:
        if self.argv is None:
            return CompileOutcome(ReplStatus.CRASH, self.name, detail="no `lean` executable found")
        t0 = time.monotonic()
        async with self._slots:
            t_wait = time.monotonic() - t0
            outcome = await self._run(unit)
        outcome.timings["wait"] = t_wait
        return outcome

    async def _run(self, unit: CompileUnit) -> CompileOutcome:
        assert self.argv is not None
        self.runs += 1
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="sorryless-lean-") as tmp:
            path = Path(tmp) / "Check.lean"
            path.write_text(unit.text_for_file(), encoding="utf-8")
            handle, preexec = self.limiter.prepare()
            cwd = self.settings.lean_project_dir if self.argv[0] != self.settings.lean_bin else None
            with tempfile.TemporaryFile() as err:
                try:
                    proc = await asyncio.create_subprocess_exec(
                        *self.argv,
                        "--json",
                        str(path),
                        stdin=asyncio.subprocess.DEVNULL,
                        stdout=asyncio.subprocess.PIPE,
                        stderr=err,
                        cwd=str(cwd) if cwd is not None and cwd.is_dir() else None,
                        start_new_session=True,
                        preexec_fn=preexec,
                    )
                except OSError as exc:
                    handle.release()
                    return CompileOutcome(ReplStatus.CRASH, self.name, detail=f"cannot start lean: {exc}")
                killed = False
                try:
                    stdout, _ = await asyncio.wait_for(proc.communicate(), unit.timeout_s)
                except TimeoutError:
                    killed = True
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    await proc.wait()
                    handle.release()
                    return CompileOutcome(
                        ReplStatus.TIMEOUT,
                        self.name,
                        detail=timeout_detail(unit.timeout_s),
                        timings={"compile": time.monotonic() - t0},
                    )
                except asyncio.CancelledError:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    handle.release()
                    raise
                seconds = time.monotonic() - t0
                rc = proc.returncode
                err.seek(0)
                tail = err.read()[-_STDERR_TAIL:].decode("utf-8", "replace")
        handle_oom = looks_like_oom(rc, tail, handle, killed)
        handle.release()
        text = stdout.decode("utf-8", "replace")
        timings = {"compile": seconds}
        if rc not in (0, 1):
            if handle_oom:
                return CompileOutcome(
                    ReplStatus.OOM, self.name, detail=f"lean ran out of memory (exit {rc})", timings=timings
                )
            return CompileOutcome(
                ReplStatus.CRASH,
                self.name,
                detail=f"lean died (exit {rc}): {tail.strip()[-800:]}",
                timings=timings,
            )
        messages = parse_json_lines(text)
        if rc == 1 and not any(m["severity"] == "error" for m in messages):
            if handle_oom:
                return CompileOutcome(
                    ReplStatus.OOM, self.name, detail="lean ran out of memory", timings=timings
                )
            return CompileOutcome(
                ReplStatus.CRASH,
                self.name,
                detail=f"lean failed without a message: {tail.strip()[-800:]}",
                timings=timings,
            )
        return CompileOutcome(
            ReplStatus.OK, self.name, response={"messages": messages, "env": 0}, timings=timings
        )
