"""The REPL process pool: processes keyed by their exact import header, a two-priority wait
queue in front, warm spares, recycling, and a memory watchdog.

Each process imports its header once (env ``H``) and every body runs as
``{"cmd": body, "env": H}``, always on that pristine env. Header-less code gets a pristine base
env per process the same way (``{"cmd": ""}``), so no request ever sees another's declarations.

A free process is handed straight to the first waiter of its header (interactive before batch,
FIFO within one), with no polling. Replacements and spares start in the background, so a kill
never puts an import on the critical path while a spare is warm.

Sizing: ``max_processes`` bounds the processes *running checks* at once (cores and memory,
see :func:`~lean_server.limits.auto_max_processes`). Warm spares come on top of it: every header
with a running check keeps ``lean_warm_spares`` ready, idle processes that no waiter may take
while all ``max_processes`` slots are busy; the moment a slot frees (a check ends, a timeout
kills its process) its first waiter takes a spare, with no import on its path, and a new spare
starts in the background. So at most ``max_processes * (1 + lean_warm_spares)`` processes exist
(plus one recycling replacement at a time), and never more than memory holds when the pool is
sized automatically (:func:`~lean_server.limits.max_total_processes`; the automatic cap leaves
room for one header's spares). Idle processes of headers with nothing running are the first
evicted when another header needs room. A saturated pool therefore still has its spares, which
spares counted inside the cap could not give.

A process that fails to start for a transient reason (crash, OOM, import timeout) is started
again for its waiters until ``UNAVAILABLE_AFTER_FAILURES`` starts in a row failed; only a
deterministic header error (the REPL rejected the import line) fails the waiters at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lean_server.backend import CompileOutcome, CompileUnit
from lean_server.checker import Priority
from lean_server.header import shift_response
from lean_server.limits import MemoryLimiter, auto_max_processes, max_total_processes
from lean_server.protocol import ReplReply, ReplStatus
from lean_server.repl import ReplProcess
from sorryless.config import Settings
from sorryless.logging import get_logger

log = get_logger(__name__)

_WATCHDOG_INTERVAL_S = 1.0
UNAVAILABLE_AFTER_FAILURES = 2
"""Consecutive failed process starts (with no success since) after which the REPL counts as down."""
_MAX_IMPORT_SAMPLES = 1000


class HeaderUnavailable(Exception):
    """No process could be made ready for a header (import failed, crashed, or timed out)."""

    def __init__(self, reply: ReplReply, header_error: bool) -> None:
        super().__init__(reply.detail)
        self.reply = reply
        self.header_error = header_error


@dataclass(slots=True)
class _Waiter:
    future: asyncio.Future[ReplProcess]
    enqueued_at: float


@dataclass(slots=True)
class _Group:
    header: str
    idle: list[ReplProcess] = field(default_factory=list)
    waiters: tuple[deque[_Waiter], deque[_Waiter]] = field(default_factory=lambda: (deque(), deque()))
    procs: set[ReplProcess] = field(default_factory=set)
    starting: int = 0
    busy: int = 0
    last_used: float = 0.0

    def waiting(self) -> int:
        return len(self.waiters[0]) + len(self.waiters[1])

    def pop_waiter(self) -> _Waiter | None:
        for queue in self.waiters:
            while queue:
                waiter = queue.popleft()
                if not waiter.future.done():
                    return waiter
        return None


@dataclass(slots=True)
class ProcessInfo:
    pid: int | None
    header: str
    state: str
    uses: int
    age_s: float
    rss_bytes: int
    import_seconds: float


@dataclass(slots=True)
class PoolStats:
    """Counters of the pool (plain values: the HTTP layer turns them into Prometheus metrics)."""

    waiting: int = 0
    waiting_by_priority: dict[str, int] = field(default_factory=dict)
    per_header: dict[str, dict[str, int]] = field(default_factory=dict)
    processes: list[ProcessInfo] = field(default_factory=list)
    max_processes: int = 0
    imports: int = 0
    import_seconds_total: float = 0.0
    import_seconds: list[float] = field(default_factory=list)
    kills: dict[str, int] = field(default_factory=dict)
    checks: int = 0
    check_seconds_total: float = 0.0
    memory_cap: str = "none"
    backend: str = "repl"
    cache_hits: int = 0
    cache_misses: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    check_latencies: list[float] = field(default_factory=list)
    """Recent end-to-end seconds per computed (not cached) certificate."""
    active: int = 0
    """Checks admitted and not finished (waiting or running)."""


class ReplPool:
    """REPL backend: a bounded pool of header-keyed REPL processes."""

    name = "repl"

    def __init__(self, settings: Settings, argv: list[str], *, cwd: Path | None = None) -> None:
        self.settings = settings
        self.argv = argv
        self.cwd: Path | None = cwd if cwd is not None else settings.lean_project_dir
        self.max_processes = auto_max_processes(settings)
        self.max_total = max_total_processes(settings)
        """Memory ceiling on running + spare processes (None: only the per-header spare rule)."""
        self.limiter = MemoryLimiter(settings.lean_memory_limit_mb)
        self._groups: dict[str, _Group] = {}
        self._total = 0
        self._busy = 0
        """Processes handed out and not released (at most ``max_processes``)."""
        self._waiting = 0
        self._closed = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._start_tasks: set[asyncio.Task[None]] = set()
        self._watchdog: asyncio.Task[None] | None = None
        self._kills: Counter[str] = Counter()
        self._import_seconds: deque[float] = deque(maxlen=_MAX_IMPORT_SAMPLES)
        self._imports = 0
        self._import_total = 0.0
        self._checks = 0
        self._check_total = 0.0
        self._start_failures = 0
        """Process starts that failed (spawn, crash, timeout) since the last one that worked."""
        self._last_failure: str | None = None

    # ---- lifecycle --------------------------------------------------------------------------
    async def start(self) -> None:
        s = self.settings
        if self._watchdog is None and (self.limiter.limit_bytes or s.lean_recycle_rss_mb or s.lean_max_age_s):
            self._watchdog = asyncio.get_running_loop().create_task(self._watch_memory())

    def prewarm(self, header: str) -> None:
        """Start processes for ``header`` (canonical form) now: ``lean_warm_spares`` of them, at least one."""
        group = self._group(header)
        group.last_used = time.monotonic()
        want = max(1, self.settings.lean_warm_spares)
        while len(group.idle) + group.starting < want and self._total < self.max_processes:
            self._spawn(group)

    async def aclose(self) -> None:
        self._closed = True
        if self._watchdog is not None:
            self._watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watchdog
            self._watchdog = None
        for task in list(self._start_tasks):
            task.cancel()  # reaping tasks (aclose of retired processes) are left to finish
        procs = [p for g in self._groups.values() for p in g.procs]
        for group in self._groups.values():
            for waiter in [*group.waiters[0], *group.waiters[1]]:
                if not waiter.future.done():
                    waiter.future.set_exception(
                        HeaderUnavailable(ReplReply(ReplStatus.CRASH, detail="pool closed"), False)
                    )
            group.waiters[0].clear()
            group.waiters[1].clear()
        await asyncio.gather(*(p.aclose("shutdown") for p in procs), return_exceptions=True)
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._groups.clear()
        self._total = 0
        self._busy = 0

    # ---- public backend API -------------------------------------------------------------------
    async def compile(self, unit: CompileUnit) -> CompileOutcome:
        t0 = time.monotonic()
        header = unit.split.header
        try:
            proc = await self.acquire(header, unit.priority)
        except HeaderUnavailable as exc:
            if exc.header_error:
                status = ReplStatus.OK
            else:
                status = ReplStatus.OOM if exc.reply.status is ReplStatus.OOM else ReplStatus.CRASH
            return CompileOutcome(
                status,
                self.name,
                response=_header_failure_response(exc.reply) if exc.header_error else None,
                detail=f"importing the header failed: {exc.reply.detail}",
                timings={"wait": time.monotonic() - t0},
                header_failed=exc.header_error,
            )
        t_got = time.monotonic()
        waited = t_got - t0
        imported = min(proc.import_seconds, waited) if proc.handed_fresh else 0.0
        proc.handed_fresh = False
        reusable = False
        try:
            request: dict[str, Any] = {"cmd": unit.text_for_body(), "env": proc.header_env}
            if unit.repl_options:
                request.update({k: v for k, v in unit.repl_options.items() if k not in ("cmd", "env")})
            reply = await proc.request(request, unit.timeout_s)
            reusable = reply.status is ReplStatus.OK
        finally:
            # Cancelled mid-request: the process is in an unknown state; it cannot be reused.
            if not reusable:
                proc.kill(proc.kill_reason or "cancelled")
            self.release(proc, reusable=reusable)
        self._checks += 1
        self._check_total += reply.seconds
        response = reply.response
        if response is not None and unit.split.line_offset:
            response = shift_response(response, unit.split.line_offset)
        return CompileOutcome(
            reply.status,
            self.name,
            response=response,
            detail=reply.detail,
            timings={"wait": waited - imported, "import": imported, "compile": reply.seconds},
            pid=proc.pid,
            rss_bytes=proc.last_rss,
        )

    @property
    def available(self) -> bool:
        """False after repeated failed process starts with no success since."""
        return self._start_failures < UNAVAILABLE_AFTER_FAILURES

    @property
    def unavailable_reason(self) -> str | None:
        if self.available:
            return None
        return (
            f"the REPL could not be started ({self._start_failures} failures in a row): {self._last_failure}"
        )

    def health(self) -> dict[str, Any]:
        stats = self.stats()
        return {
            "backend": self.name,
            "available": self.available,
            "reason": self.unavailable_reason,
            "consecutive_start_failures": self._start_failures,
            "argv": self.argv,
            "max_processes": self.max_processes,
            "memory_cap": self.limiter.mode,
            "per_header": stats.per_header,
            "waiting": stats.waiting,
        }

    def stats(self) -> PoolStats:
        now = time.monotonic()
        per_header: dict[str, dict[str, int]] = {}
        processes: list[ProcessInfo] = []
        waiting_by_priority = {p.name.lower(): 0 for p in Priority}
        for group in self._groups.values():
            idle = set(group.idle)
            per_header[group.header] = {
                "busy": group.busy,
                "idle": len(group.idle),
                "starting": group.starting,
                "waiting": group.waiting(),
            }
            for prio in Priority:
                waiting_by_priority[prio.name.lower()] += len(group.waiters[prio])
            for proc in group.procs:
                processes.append(
                    ProcessInfo(
                        pid=proc.pid,
                        header=group.header,
                        state="idle"
                        if proc in idle
                        else ("busy" if proc.header_env is not None else "starting"),
                        uses=proc.uses,
                        age_s=now - proc.started_at,
                        rss_bytes=proc.last_rss,
                        import_seconds=proc.import_seconds,
                    )
                )
        return PoolStats(
            waiting=self._waiting_count(),
            waiting_by_priority=waiting_by_priority,
            per_header=per_header,
            processes=processes,
            max_processes=self.max_processes,
            imports=self._imports,
            import_seconds_total=self._import_total,
            import_seconds=list(self._import_seconds),
            kills=dict(self._kills),
            checks=self._checks,
            check_seconds_total=self._check_total,
            memory_cap=self.limiter.mode,
        )

    def waiting(self) -> int:
        return self._waiting_count()

    # ---- acquire / release ----------------------------------------------------------------------
    def _waiting_count(self) -> int:
        return sum(g.waiting() for g in self._groups.values())

    def _group(self, header: str) -> _Group:
        group = self._groups.get(header)
        if group is None:
            group = self._groups[header] = _Group(header)
        return group

    async def acquire(self, header: str, priority: Priority) -> ReplProcess:
        """A ready process for ``header`` (its header env loaded), waiting for one if needed."""
        group = self._group(header)
        group.last_used = time.monotonic()
        while group.idle and not group.waiting() and self._busy < self.max_processes:
            proc = group.idle.pop()
            group.busy += 1
            self._busy += 1
            stale = self._stale_reason(proc)
            if stale is not None:
                self.release(proc, reusable=False, reason=stale)
                continue
            self._fill(group)
            return proc
        future: asyncio.Future[ReplProcess] = asyncio.get_running_loop().create_future()
        waiter = _Waiter(future, time.monotonic())
        group.waiters[priority].append(waiter)
        self._fill(group)
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled() and future.exception() is None:
                self.release(future.result(), reusable=True, reason="handed back")
            else:
                with contextlib.suppress(ValueError):
                    group.waiters[priority].remove(waiter)
            raise

    def release(self, proc: ReplProcess, *, reusable: bool, reason: str | None = None) -> None:
        """Give a process back after a request (``reusable`` False: it was killed or is suspect)."""
        group = self._group(proc.header)
        group.busy -= 1
        self._busy -= 1
        if reason is None:
            proc.uses += 1
        if not reusable or not proc.alive:
            self._retire(group, proc, reason or proc.kill_reason or "crash")
            return
        recycle = proc.retiring or self._recycle_reason(proc)
        if recycle is not None and self._recycle(group, proc, recycle):
            return
        self._deliver(group, proc)

    def _stale_reason(self, proc: ReplProcess) -> str | None:
        """Why an idle process must not be handed out (it died while parked). An aged one still
        serves until its replacement is ready (see ``_recycle``)."""
        if not proc.alive:
            return proc.kill_reason or "crash"
        return None

    def _recycle_reason(self, proc: ReplProcess) -> str | None:
        """Why ``proc`` is due for recycling; RSS is the watchdog's last sample (no measuring here)."""
        s = self.settings
        if s.lean_max_uses > 0 and proc.uses >= s.lean_max_uses:
            return "max_uses"
        if s.lean_max_age_s > 0 and time.monotonic() - proc.started_at >= s.lean_max_age_s:
            return "max_age"
        if s.lean_recycle_rss_mb > 0 and proc.last_rss > s.lean_recycle_rss_mb * 1024 * 1024:
            return "rss"
        return None

    def _recycle(self, group: _Group, proc: ReplProcess, reason: str) -> bool:
        """Recycle a ready (not busy) process without putting an import on anyone's critical path.

        Retired now (True) when its replacement is ready (or failed to start). Otherwise a
        replacement starts, one over the process cap at most (one swap at a time; a process due
        meanwhile serves on until its turn), and ``proc`` keeps serving (False) until that
        replacement is ready: retiring first would leave a slot empty for a whole import.
        """
        proc.retiring = reason
        replacement = proc.replacement
        if replacement is not None:
            if replacement.header_env is None and replacement in group.procs:
                return False  # still importing
            self._retire(group, proc, reason)
            return True
        if self._closed or self._total > self._process_limit():
            return False  # a swap is already using the one extra slot: serve on, try again later
        proc.replacement = self._spawn(group)
        return False

    def _retire_replaced(self, group: _Group, ready: ReplProcess) -> None:
        """``ready`` just became usable: retire the idle processes it replaces (busy ones go on release)."""
        for old in [p for p in group.idle if p.replacement is ready]:
            group.idle.remove(old)
            self._retire(group, old, old.retiring or "recycled")

    def _discard(self, group: _Group, proc: ReplProcess, reason: str) -> None:
        """Kill ``proc`` and forget it (reaped in the background); no refill."""
        if proc in group.procs:
            group.procs.discard(proc)
            self._total -= 1
            self._kills[reason] += 1
        proc.kill(reason)
        self._track(proc.aclose(reason))

    def _retire(self, group: _Group, proc: ReplProcess, reason: str) -> None:
        self._discard(group, proc, reason)
        if not self._closed:
            self._dispatch()
            self._fill(group)
            self._fill_others(group)

    def _process_limit(self) -> int:
        """Most processes that may exist now: the busy cap plus the spares of every header with a
        running check (so at most ``max_processes * (1 + lean_warm_spares)``)."""
        spares = self.settings.lean_warm_spares
        if spares <= 0:
            return self.max_processes
        limit = self.max_processes + spares * sum(1 for g in self._groups.values() if g.busy)
        return limit if self.max_total is None else max(self.max_processes, min(limit, self.max_total))

    def _hand(self, group: _Group, proc: ReplProcess, waiter: _Waiter, *, fresh: bool = False) -> None:
        group.busy += 1
        self._busy += 1
        proc.handed_fresh = fresh
        waiter.future.set_result(proc)

    def _deliver(self, group: _Group, proc: ReplProcess, *, fresh: bool = False) -> None:
        """Hand a ready process to the first waiter of its header while a busy slot is free, else
        park it as a spare (or give its slot to a header that is starved)."""
        if self._busy < self.max_processes:
            waiter = group.pop_waiter()
            if waiter is not None:
                self._hand(group, proc, waiter, fresh=fresh)
                return
        group.idle.append(proc)
        if len(self._groups) == 1:
            return
        self._dispatch()
        starved = self._starved_group(exclude=group)
        if starved is not None and proc in group.idle and self._total >= self._process_limit():
            group.idle.remove(proc)
            self._retire_for(group, proc, starved)

    def _dispatch(self) -> None:
        """Give free busy slots to waiters of any header that has an idle process."""
        if self._busy >= self.max_processes:
            return
        for group in list(self._groups.values()):
            while group.idle and self._busy < self.max_processes and group.waiting():
                proc = group.idle.pop()
                stale = self._stale_reason(proc)
                if stale is not None:
                    self._discard(group, proc, stale)
                    continue
                waiter = group.pop_waiter()
                if waiter is None:
                    group.idle.append(proc)
                    break
                self._hand(group, proc, waiter)

    def _retire_for(self, group: _Group, proc: ReplProcess, starved: _Group) -> None:
        group.procs.discard(proc)
        self._total -= 1
        self._kills["evicted"] += 1
        proc.kill("evicted")
        self._track(proc.aclose("evicted"))
        self._fill(starved)

    def _starved_group(self, exclude: _Group) -> _Group | None:
        for other in self._groups.values():
            if other is not exclude and other.waiting() > other.starting + len(other.idle):
                return other
        return None

    def _fill(self, group: _Group) -> None:
        """Start processes for ``group``: one per unserved waiter plus the warm spares (the
        spares may go past ``max_processes``, up to :meth:`_process_limit`)."""
        if self._closed:
            return
        want = group.waiting() + max(0, self.settings.lean_warm_spares)
        while len(group.idle) + group.starting < want:
            if self._total >= self._process_limit() and not self._evict_idle(exclude=group, need=group):
                break
            self._spawn(group)

    def _fill_others(self, group: _Group) -> None:
        for other in list(self._groups.values()):
            if other is not group and other.waiting() > other.starting + len(other.idle):
                self._fill(other)

    def _evict_idle(self, exclude: _Group, need: _Group) -> bool:
        """Free a slot for a header with waiters by killing an idle process of another header."""
        if need.waiting() <= need.starting + len(need.idle):
            return False
        victims = [g for g in self._groups.values() if g is not exclude and g.idle]
        if not victims:
            return False
        victim_group = min(victims, key=lambda g: (g.waiting(), g.last_used))
        proc = victim_group.idle.pop(0)
        victim_group.procs.discard(proc)
        self._total -= 1
        self._kills["evicted"] += 1
        proc.kill("evicted")
        self._track(proc.aclose("evicted"))
        return True

    def _spawn(self, group: _Group) -> ReplProcess:
        self._total += 1
        group.starting += 1
        proc = ReplProcess(self.argv, self.cwd, self.limiter, group.header)
        group.procs.add(proc)
        task = self._track(self._start_process(group, proc))
        self._start_tasks.add(task)
        task.add_done_callback(self._start_tasks.discard)
        return proc

    def _track(self, coro: Any) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _start_process(self, group: _Group, proc: ReplProcess) -> None:
        try:
            try:
                await proc.spawn()
            except OSError as exc:
                reply = ReplReply(ReplStatus.CRASH, detail=f"cannot start the REPL ({self.argv[0]}): {exc}")
            else:
                reply = await proc.load_header(self.settings.lean_import_timeout_s)
        except asyncio.CancelledError:
            group.starting -= 1
            proc.kill("shutdown")
            raise
        group.starting -= 1
        if self._closed:
            await proc.aclose("shutdown")
            return
        if reply.ok:
            self._start_failures = 0
            self._last_failure = None
            proc.rss_bytes()  # a first sample for RSS recycling (off the critical path)
            self._imports += 1
            self._import_total += proc.import_seconds
            self._import_seconds.append(proc.import_seconds)
            log.debug(
                "repl ready", pid=proc.pid, header=group.header[:80], import_s=round(proc.import_seconds, 3)
            )
            self._deliver(group, proc, fresh=True)
            self._retire_replaced(group, proc)
            return
        header_error = reply.status is ReplStatus.REPL_ERROR
        if not header_error:  # a bad import line is the snippet's fault, not the backend's
            self._start_failures += 1
            self._last_failure = reply.detail[:500]
        log.warning(
            "repl start failed",
            header=group.header[:80],
            status=reply.status.value,
            detail=reply.detail[:300],
        )
        if proc in group.procs:
            group.procs.discard(proc)
            self._total -= 1
            self._kills["import_failed"] += 1
        await proc.aclose("import_failed")
        replaced = [p for p in group.procs if p.replacement is proc]
        if replaced:
            # A failed recycling swap: the old processes still work; they retire on their next
            # release and ordinary starts serve the waiters from then on.
            for old in replaced:
                if old in group.idle:
                    group.idle.remove(old)
                    self._retire(group, old, old.retiring or "recycled")
            return
        if not header_error and self._start_failures < UNAVAILABLE_AFTER_FAILURES:
            # Maybe transient (a crash, OOM, an import past its deadline): start again for the
            # waiters that no other start covers; the spares come back with the next check.
            if group.waiting() > group.starting + len(group.idle):
                self._spawn_for_waiters(group)
            self._fill_others(group)
            return
        # A bad import line fails every try the same way; a REPL that keeps failing to start is
        # down: fail the waiters now.
        error = HeaderUnavailable(reply, header_error)
        while (waiter := group.pop_waiter()) is not None:
            waiter.future.set_exception(error)
        self._fill_others(group)

    def _spawn_for_waiters(self, group: _Group) -> None:
        while group.waiting() > group.starting + len(group.idle):
            if self._total >= self._process_limit() and not self._evict_idle(exclude=group, need=group):
                break
            self._spawn(group)

    async def _watch_memory(self) -> None:
        """Sample each process's RSS once a second: kill those past the memory cap (the request
        reports OOM) and start the recycling swap of idle ones that are due (age, RSS)."""
        cap = self.limiter.limit_bytes
        while True:
            await asyncio.sleep(_WATCHDOG_INTERVAL_S)
            for group in list(self._groups.values()):
                for proc in list(group.procs):
                    rss = proc.rss_bytes()
                    if cap and rss > cap and proc.alive:
                        log.warning("repl over memory cap", pid=proc.pid, rss_mb=rss // 2**20)
                        proc.kill("oom")
                for proc in list(group.idle):
                    reason = proc.retiring or self._recycle_reason(proc)
                    if reason is not None and proc in group.idle:
                        group.idle.remove(proc)
                        if not self._recycle(group, proc, reason):
                            group.idle.append(proc)


def _header_failure_response(reply: ReplReply) -> dict[str, Any]:
    """A REPL-shaped response carrying the header's error (no position: it is about the imports)."""
    messages: list[dict[str, Any]] = []
    if reply.response is not None:
        for m in reply.response.get("messages", ()):
            if isinstance(m, dict) and m.get("severity") == "error":
                messages.append(
                    {
                        "severity": "error",
                        "pos": m.get("pos"),
                        "endPos": m.get("endPos"),
                        "data": m.get("data", ""),
                    }
                )
    if not messages:
        messages.append(
            {"severity": "error", "pos": None, "endPos": None, "data": reply.detail or "import failed"}
        )
    return {"messages": messages}
