"""One leanprover-community REPL process: spawn, import a header once, run requests.

One request is in flight per process. Every request has a deadline; passing it kills the whole
process group (the REPL cannot cancel a running command). Death, babble and memory exhaustion
come back as a :class:`ReplReply` status, never as an exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import tempfile
import time
from pathlib import Path
from typing import IO, Any

import psutil

from lean_server.limits import LimitHandle, MemoryLimiter, looks_like_oom
from lean_server.protocol import (
    GarbageOutput,
    ReplReply,
    ReplStatus,
    encode_request,
    read_response,
    timeout_detail,
)
from sorryless.logging import get_logger

log = get_logger(__name__)

READ_LIMIT = 256 * 1024 * 1024
"""Largest single response line accepted (infotrees can be big)."""
_STDERR_TAIL = 4000
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _statm_rss(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE_SIZE
    except (OSError, IndexError, ValueError):
        return None


def _children(pid: int) -> list[int] | None:
    """Child pids of every thread of ``pid`` (None when the kernel does not expose them)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    children: list[int] = []
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                children.extend(int(c) for c in fh.read().split())
        except FileNotFoundError:
            if tid == str(pid):
                return None  # no CONFIG_PROC_CHILDREN: let the caller fall back
        except (OSError, ValueError):
            continue
    return children


def tree_rss_from_proc(pid: int) -> int | None:
    """Resident bytes of ``pid`` and its descendants from ``/proc`` (statm field 2 x page size).

    0 when the process is gone; None when ``/proc`` cannot tell (not Linux, no children files).
    """
    root = _statm_rss(pid)
    if root is None:
        return 0 if os.path.isdir("/proc/self/task") else None
    stack = _children(pid)
    if stack is None:
        return None
    total, seen = root, {pid}
    while stack:
        child = stack.pop()
        if child in seen:
            continue
        seen.add(child)
        rss = _statm_rss(child)
        if rss is None:
            continue  # exited meanwhile
        total += rss
        stack.extend(_children(child) or ())
    return total


class ReplProcess:
    """A REPL process bound to one import header."""

    __slots__ = (
        "_limit",
        "_proc",
        "_ps",
        "_stderr",
        "argv",
        "cwd",
        "handed_fresh",
        "header",
        "header_env",
        "import_seconds",
        "kill_reason",
        "last_rss",
        "limiter",
        "pid",
        "ready_at",
        "replacement",
        "retiring",
        "started_at",
        "uses",
    )

    def __init__(self, argv: list[str], cwd: Path | None, limiter: MemoryLimiter, header: str) -> None:
        self.argv = argv
        self.cwd = cwd
        self.limiter = limiter
        self.header = header
        self.header_env: int | None = None
        self.uses = 0
        self.pid: int | None = None
        self.started_at = time.monotonic()
        self.ready_at = 0.0
        self.import_seconds = 0.0
        self.kill_reason: str | None = None
        self.last_rss = 0
        """Resident bytes of the process tree at the last sample (watchdog, or right after the import)."""
        self.retiring: str | None = None
        """Why the pool recycles this process (it serves on until its replacement is ready)."""
        self.replacement: ReplProcess | None = None
        self.handed_fresh = False
        """Handed to a waiter the moment its import finished (the import was on that check's path)."""
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr: IO[bytes] | None = None
        self._limit = LimitHandle()
        self._ps: psutil.Process | None = None

    # ---- lifecycle ------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None and self.kill_reason is None

    async def spawn(self) -> None:
        """Start the process (raises OSError when the command cannot be started)."""
        self._limit, preexec = self.limiter.prepare()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process
        cwd = str(self.cwd) if self.cwd is not None and self.cwd.is_dir() else None
        self._proc = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=self._stderr,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=preexec,
            limit=READ_LIMIT,
        )
        self.pid = self._proc.pid
        self.started_at = time.monotonic()

    async def load_header(self, timeout_s: float) -> ReplReply:
        """Import the header (or build the pristine base env for header-less code)."""
        t0 = time.monotonic()
        reply = await self.request({"cmd": self.header}, timeout_s)
        self.import_seconds = time.monotonic() - t0
        if reply.ok:
            assert reply.response is not None
            env = reply.response.get("env")
            errors = [
                m
                for m in reply.response.get("messages", ())
                if isinstance(m, dict) and m.get("severity") == "error"
            ]
            if not isinstance(env, int) or errors:
                reply.status = ReplStatus.REPL_ERROR
                reply.detail = (
                    "; ".join(str(m.get("data", "")) for m in errors) or "header import gave no env"
                )
            else:
                self.header_env = env
                self.ready_at = time.monotonic()
        return reply

    def kill(self, reason: str) -> None:
        """Kill the whole process group (idempotent); the first reason sticks."""
        if self.kill_reason is None:
            self.kill_reason = reason
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        # Only the group kill: Popen.kill() would poll() and reap the child behind the back of
        # asyncio's child watcher (which then reports exit status 255).
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError):
                proc.kill()

    async def aclose(self, reason: str = "shutdown") -> None:
        self.kill(reason)
        if self._proc is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._proc.wait(), 5)
            if self._proc.stdin is not None:
                self._proc.stdin.close()
        self._cleanup()

    def _cleanup(self) -> None:
        if self._stderr is not None:
            with contextlib.suppress(OSError):
                self._stderr.close()
            self._stderr = None
        self._limit.release()

    def reap_later(self) -> None:
        """Kill (if needed) and reap in the background."""
        self.kill(self.kill_reason or "retired")
        asyncio.get_running_loop().create_task(self.aclose(self.kill_reason or "retired"))

    def rss_bytes(self) -> int:
        """Resident memory of the process tree, sampled now (0 when unknown); also kept in ``last_rss``.

        Reads ``/proc/<pid>/task/<tid>/children`` and ``/proc/<pid>/statm`` of the tree only (no
        scan of all of ``/proc``); psutil is the fallback where those files cannot be read.
        """
        if self.pid is None:
            return 0
        rss = tree_rss_from_proc(self.pid)
        if rss is None:
            rss = self._tree_rss_psutil()
        self.last_rss = rss
        return rss

    def _tree_rss_psutil(self) -> int:
        try:
            if self._ps is None:
                self._ps = psutil.Process(self.pid)
            rss = int(self._ps.memory_info().rss)
            for child in self._ps.children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    rss += int(child.memory_info().rss)
        except psutil.Error:
            return 0
        return rss

    def stderr_tail(self) -> str:
        fh = self._stderr
        if fh is None:
            return ""
        try:
            size = os.fstat(fh.fileno()).st_size
            data = os.pread(fh.fileno(), _STDERR_TAIL, max(0, size - _STDERR_TAIL))
        except OSError:
            return ""
        return data.decode("utf-8", "replace")

    # ---- requests -------------------------------------------------------------------------
    async def request(self, request: dict[str, Any], timeout_s: float | None) -> ReplReply:
        """Send one request and wait for its response, at most ``timeout_s`` seconds."""
        proc = self._proc
        t0 = time.monotonic()
        if proc is None or proc.stdin is None or proc.stdout is None or not self.alive:
            return await self._death_reply(t0, "process is not running")
        try:
            proc.stdin.write(encode_request(request))
            async with asyncio.timeout(timeout_s):
                await proc.stdin.drain()
                response = await read_response(proc.stdout)
        except TimeoutError:
            self.kill("timeout")
            return ReplReply(
                ReplStatus.TIMEOUT, detail=timeout_detail(timeout_s), seconds=time.monotonic() - t0
            )
        except GarbageOutput as exc:
            self.kill("garbage")
            return ReplReply(
                ReplStatus.GARBAGE,
                detail=f"REPL wrote non-JSON output: {exc.text[:500]!r}",
                seconds=time.monotonic() - t0,
            )
        except asyncio.LimitOverrunError:
            self.kill("garbage")
            return ReplReply(
                ReplStatus.GARBAGE, detail="REPL response too large", seconds=time.monotonic() - t0
            )
        except (asyncio.IncompleteReadError, ConnectionError, BrokenPipeError, OSError) as exc:
            return await self._death_reply(t0, type(exc).__name__)
        seconds = time.monotonic() - t0
        if "message" in response and "env" not in response and "proofState" not in response:
            return ReplReply(
                ReplStatus.REPL_ERROR, response=response, detail=str(response["message"]), seconds=seconds
            )
        return ReplReply(ReplStatus.OK, response=response, seconds=seconds)

    async def _death_reply(self, t0: float, what: str) -> ReplReply:
        proc = self._proc
        rc: int | None = None
        if proc is not None:
            with contextlib.suppress(TimeoutError):
                rc = await asyncio.wait_for(proc.wait(), 2)
        killed_by_us = self.kill_reason is not None and self.kill_reason != "oom"
        tail = self.stderr_tail()
        if self.kill_reason == "oom" or looks_like_oom(
            rc, tail, self._limit, killed_by_us, last_rss=self.last_rss, cap_bytes=self.limiter.limit_bytes
        ):
            self.kill("oom")
            cap_mb = self.limiter.limit_bytes // (1024 * 1024)
            return ReplReply(
                ReplStatus.OOM,
                detail=f"Lean process ran out of memory (cap {cap_mb} MB, exit {rc})",
                seconds=time.monotonic() - t0,
            )
        self.kill(self.kill_reason or "crash")
        detail = f"Lean process died ({what}, exit {rc})"
        if rc in (-9, 137) and not killed_by_us:
            detail += " - killed by SIGKILL that sorryless did not send (the kernel OOM killer?)"
        if tail.strip():
            detail += f": {tail.strip()[-800:]}"
        return ReplReply(ReplStatus.CRASH, detail=detail, seconds=time.monotonic() - t0)
