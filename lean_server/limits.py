"""Resource limits of Lean processes: a memory cap per process and the pool size.

The cap uses a child cgroup v2 with ``memory.max`` when the cgroup tree is writable, else
``RLIMIT_AS`` set in the child before exec. Either way an out-of-memory death is recognised
afterwards (cgroup ``oom_kill`` events, SIGKILL we did not send, or the allocator's last words
on stderr) and reported as the OOM verdict.
"""

from __future__ import annotations

import contextlib
import os
import resource
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from sorryless.config import Settings

_CGROUP_ROOT = Path("/sys/fs/cgroup")
_OOM_MARKERS = (
    "MemoryError",
    "out of memory",
    "Out of memory",
    "std::bad_alloc",
    "Cannot allocate memory",
    "failed to allocate",
)


def _own_cgroup_v2() -> Path | None:
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    if len(lines) != 1 or not lines[0].startswith("0::"):
        return None  # v1 or hybrid hierarchy
    base = _CGROUP_ROOT / lines[0][3:].lstrip("/")
    if not (base / "cgroup.controllers").exists() or not os.access(base, os.W_OK):
        return None
    return base


def _probe_cgroup(base: Path) -> bool:
    probe = base / f"sorryless-probe-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        return (probe / "memory.max").exists() and os.access(probe / "cgroup.procs", os.W_OK)
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()


@dataclass(slots=True)
class LimitHandle:
    """The cap of one process: its cgroup directory when cgroups are used."""

    cgroup: Path | None = None

    def oom_killed(self) -> bool:
        if self.cgroup is None:
            return False
        try:
            for line in (self.cgroup / "memory.events").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        except (OSError, ValueError):
            return False
        return False

    def release(self) -> None:
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                self.cgroup.rmdir()


class MemoryLimiter:
    """Applies ``limit_mb`` to each Lean process it prepares (0 = no cap)."""

    def __init__(self, limit_mb: int) -> None:
        self.limit_bytes = max(0, limit_mb) * 1024 * 1024
        self._cgroup_base: Path | None = None
        if self.limit_bytes:
            base = _own_cgroup_v2()
            if base is not None and _probe_cgroup(base):
                self._cgroup_base = base
        self.mode = "none" if not self.limit_bytes else ("cgroup" if self._cgroup_base else "rlimit")

    def prepare(self) -> tuple[LimitHandle, Callable[[], None] | None]:
        """A handle for a new process and the ``preexec_fn`` that puts the child under the cap."""
        if not self.limit_bytes:
            return LimitHandle(), None
        if self._cgroup_base is not None:
            group = self._cgroup_base / f"sorryless-lean-{uuid.uuid4().hex[:12]}"
            try:
                group.mkdir()
                (group / "memory.max").write_text(str(self.limit_bytes))
                with contextlib.suppress(OSError):
                    (group / "memory.swap.max").write_text("0")
            except OSError:
                return LimitHandle(), self._rlimit_preexec()
            procs = str(group / "cgroup.procs")

            def _enter_cgroup() -> None:
                with open(procs, "w") as fh:
                    fh.write(str(os.getpid()))

            return LimitHandle(cgroup=group), _enter_cgroup
        return LimitHandle(), self._rlimit_preexec()

    def _rlimit_preexec(self) -> Callable[[], None]:
        limit = self.limit_bytes

        def _set_rlimit() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        return _set_rlimit


def looks_like_oom(
    returncode: int | None,
    stderr_tail: str,
    handle: LimitHandle,
    killed_by_us: bool,
    *,
    last_rss: int = 0,
    cap_bytes: int = 0,
) -> bool:
    """Whether a dead process most likely died of memory exhaustion: the cgroup counted an OOM
    kill, the allocator said so on stderr, or a SIGKILL we did not send hit a process whose last
    sampled RSS was at least half the cap (the kernel OOM killer)."""
    if handle.oom_killed():
        return True
    if any(marker in stderr_tail for marker in _OOM_MARKERS):
        return True
    return bool(not killed_by_us and returncode in (-9, 137) and cap_bytes and last_rss * 2 >= cap_bytes)


def _processes_by_memory(settings: Settings) -> int:
    """How many Lean processes the machine's memory holds (at least 1)."""
    total_mb = psutil.virtual_memory().total // (1024 * 1024)
    # A Mathlib process peaks around 6.5 GB; never plan for more than the cap per process.
    per_process_mb = max(512, min(settings.lean_memory_limit_mb, 7_000))
    return max(1, total_mb // per_process_mb)


def auto_max_processes(settings: Settings) -> int:
    """Processes that may run checks at once: ``settings.lean_max_processes``, or (0) bounded by
    the cores and by memory, keeping room for one header's ``lean_warm_spares`` (the pool keeps
    them on top of the running ones). At least 1, never more than memory allows."""
    if settings.lean_max_processes > 0:
        return settings.lean_max_processes
    cores = os.cpu_count() or 1
    spares = max(0, settings.lean_warm_spares)
    return max(1, min(cores, _processes_by_memory(settings) - spares))


def max_total_processes(settings: Settings) -> int | None:
    """Ceiling on all processes, running ones and warm spares together: what memory holds when
    the pool is sized automatically; None when ``lean_max_processes`` is set (the operator sized it)."""
    if settings.lean_max_processes > 0:
        return None
    return _processes_by_memory(settings)
