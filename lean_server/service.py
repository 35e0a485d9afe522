"""``LeanService``: the in-process :class:`~lean_server.checker.Checker`.

cache -> pool (REPL, or one-shot ``lean`` when no REPL is configured) -> compile + axioms tiers
-> trust tiers -> optional one-shot re-check of a PASS -> one :class:`Certificate` per snippet,
yielded in completion order. Identical snippets of one batch (same code, stub, policy and
deadline, cache allowed) are checked once; a copy is marked ``cached`` only when its verdict is
one the cache stores (never TIMEOUT, OOM or INFRA_ERROR).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from lean_server import trust
from lean_server.backend import Backend, CompileUnit
from lean_server.cache import UNCACHEABLE, ResultCache, cache_key, raw_cache_key
from lean_server.checker import BacklogFull, Priority, Snippet
from lean_server.feedback import goal_at_first_error, render_feedback
from lean_server.header import SplitCode, split_header
from lean_server.oneshot import OneShotBackend
from lean_server.policy import Policy, resolve_policy
from lean_server.pool import PoolStats, ReplPool
from lean_server.protocol import ReplStatus
from lean_server.tiers import AxiomAudit, axiom_commands, evaluate, prepare_axiom_audit
from lean_server.verdict import Certificate, EnvironmentStamp, TierResult, Verdict, combine, content_hash
from sorryless.config import Settings
from sorryless.lean_env import probe_lean, read_lock
from sorryless.logging import get_logger

log = get_logger(__name__)

_LATENCY_SAMPLES = 2000
_VERSION_RE = re.compile(r"version (\d+\.\d+\.\d+[^\s,]*)")


@dataclass(slots=True)
class RawResult:
    """Compile-only answer for the Kimina-compatible endpoints."""

    response: dict[str, Any] | None
    """The REPL response, positions in the original code, no appended commands."""
    error: str | None = None
    time: float = 0.0
    diagnostics: dict[str, Any] | None = None
    cached: bool = False
    """Answered from the result cache (``use_cache``)."""


@dataclass(slots=True)
class _Job:
    snippet: Snippet
    policy: Policy | None
    policy_error: str | None
    split: SplitCode | None
    key: str
    recheck: bool
    duplicates: list[Snippet] = field(default_factory=list)


class Reservation:
    """Backlog slots admitted together by :meth:`LeanService.reserve`: a batch is admitted whole or
    not at all. Each ``run_raw(..., reservation=r)`` uses one slot; leaving the ``with`` block (or
    :meth:`release`) gives back the slots left unused."""

    __slots__ = ("_service", "remaining")

    def __init__(self, service: LeanService, n: int) -> None:
        self._service = service
        self.remaining = n

    def take(self) -> None:
        if self.remaining <= 0:
            raise ValueError("every slot of this reservation is used")
        self.remaining -= 1

    def release(self) -> None:
        self._service._active -= self.remaining
        self.remaining = 0

    def __enter__(self) -> Reservation:
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


class LeanService:
    """Checks snippets with a header-keyed REPL pool (or one-shot ``lean``) and the verdict tiers."""

    def __init__(self, settings: Settings, *, trust_hooks: bool = True) -> None:
        self.settings = settings
        self.trust_hooks = trust_hooks
        status = probe_lean(settings)
        argv = status.repl_argv if status.backend == "repl" else None
        self.pool: ReplPool | None = ReplPool(settings, argv, cwd=status.repl_cwd) if argv else None
        self.oneshot = OneShotBackend(settings)
        self.primary: Backend = self.pool if self.pool is not None else self.oneshot
        self.cache = ResultCache(settings)
        self.stamp = EnvironmentStamp(backend=self.primary.name)
        self._started = False
        self._active = 0
        self._verdicts: Counter[str] = Counter()
        self._latencies: deque[float] = deque(maxlen=_LATENCY_SAMPLES)

    # ---- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        if self.pool is not None:
            await self.pool.start()
            for header in self.settings.lean_prewarm_headers:
                self.pool.prewarm(split_header(header.strip() + "\n").header)
        self.stamp = await self._environment_stamp()

    async def aclose(self) -> None:
        if self.pool is not None:
            await self.pool.aclose()
        await self.cache.aclose()
        self._started = False

    async def _environment_stamp(self) -> EnvironmentStamp:
        lock = None
        try:
            lock = read_lock(self.settings)
        except Exception as exc:  # a broken lock file must not stop the service
            log.warning("cannot read the lean lock file", error=str(exc)[:200])
        if lock is not None:
            return EnvironmentStamp(
                backend=self.primary.name,
                lean_version=lock.lean_version,
                toolchain=lock.toolchain,
                mathlib_commit=lock.mathlib_commit,
                repl_commit=lock.repl_commit,
            )
        version = await self._oneshot_version() if self.pool is None else None
        return EnvironmentStamp(backend=self.primary.name, lean_version=version)

    async def _oneshot_version(self) -> str | None:
        if self.oneshot.argv is None:
            return None
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.oneshot.argv,
                "--version",
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
            )
            out, _ = await asyncio.wait_for(proc.communicate(), 20)
        except (OSError, TimeoutError):
            return None
        match = _VERSION_RE.search(out.decode("utf-8", "replace"))
        return match.group(1) if match else None

    # ---- checking -----------------------------------------------------------------------
    async def check(
        self, snippets: Sequence[Snippet], *, priority: Priority = Priority.INTERACTIVE
    ) -> AsyncIterator[Certificate]:
        """One certificate per snippet, in completion order (raises BacklogFull before any)."""
        if not self._started:
            await self.start()
        jobs = self._plan(snippets)
        self._admit(len(jobs))
        self._active += len(jobs)
        done: asyncio.Queue[Certificate] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        tasks = [loop.create_task(self._run_job(job, priority, done)) for job in jobs]
        try:
            for _ in range(len(snippets)):
                yield await done.get()
        finally:
            for task in tasks:
                if not task.done():
                    task.cancel()
            with contextlib.suppress(Exception):
                await asyncio.gather(*tasks, return_exceptions=True)

    def _plan(self, snippets: Sequence[Snippet]) -> list[_Job]:
        jobs: dict[str, _Job] = {}
        unique: list[_Job] = []
        for snippet in snippets:
            policy: Policy | None
            try:
                policy = resolve_policy(snippet.policy, snippet.policy_overrides)
                error = None
            except ValueError as exc:
                policy, error = None, f"invalid policy: {exc}"
            recheck = self.settings.lean_recheck_passing if snippet.recheck is None else snippet.recheck
            if policy is not None:
                key = cache_key(
                    self.stamp, snippet.code, policy, snippet.stub, trust=self.trust_hooks, recheck=recheck
                )
            else:
                key = content_hash(f"invalid\0{snippet.code}\0{snippet.policy}\0{snippet.policy_overrides}")
            split = split_header(snippet.code) if policy is not None else None
            job = _Job(snippet, policy, error, split, key, recheck)
            if not snippet.use_cache:
                unique.append(job)  # asked for a check of its own
                continue
            timeout_s = snippet.timeout_s or self.settings.lean_check_timeout_s
            dedup_key = f"{key}\0{timeout_s!r}"
            existing = jobs.get(dedup_key)
            if existing is not None:
                existing.duplicates.append(snippet)
                continue
            jobs[dedup_key] = job
            unique.append(job)
        return unique

    def reserve(self, n: int) -> Reservation:
        """Admit ``n`` checks at once (raises BacklogFull before any work starts when they do not
        all fit); pass the reservation to ``run_raw`` for each of them."""
        self._admit(n)
        self._active += n
        return Reservation(self, n)

    def _admit(self, n: int) -> None:
        capacity = self.pool.max_processes if self.pool is not None else 1
        limit = self.settings.lean_backlog_limit + capacity
        if self._active + n > limit:
            raise BacklogFull(self._retry_after(capacity))

    def _retry_after(self, capacity: int) -> float:
        mean = sum(self._latencies) / len(self._latencies) if self._latencies else 1.0
        return float(min(60.0, max(1.0, mean * self._active / max(1, capacity))))

    async def _run_job(self, job: _Job, priority: Priority, done: asyncio.Queue[Certificate]) -> None:
        try:
            try:
                cert = await self._certify(job, priority)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # never lose a snippet: report it
                log.exception("check failed", snippet=job.snippet.id)
                cert = self._infra_certificate(job, f"internal error: {type(exc).__name__}: {exc}")
            self._verdicts[cert.verdict.value] += 1
            done.put_nowait(cert)
            # A copy "comes from the cache" only when the cache would have kept the answer.
            copy_cached = cert.cached or cert.verdict not in UNCACHEABLE
            for dup in job.duplicates:
                self._verdicts[cert.verdict.value] += 1
                done.put_nowait(cert.model_copy(update={"id": dup.id, "cached": copy_cached}))
        finally:
            self._active -= 1

    def _infra_certificate(self, job: _Job, reason: str) -> Certificate:
        return Certificate(
            id=job.snippet.id,
            verdict=Verdict.INFRA_ERROR,
            reasons=[reason],
            policy=job.policy or Policy(),
            statement_hash=content_hash(job.snippet.stub) if job.snippet.stub else None,
            proof_hash=content_hash(job.snippet.code),
            environment=self.stamp,
        )

    async def _certify(self, job: _Job, priority: Priority) -> Certificate:
        t_start = time.monotonic()
        snippet = job.snippet
        if job.policy is None or job.split is None:
            return self._infra_certificate(job, job.policy_error or "invalid request")
        policy = job.policy
        if snippet.use_cache:
            hit = await self.cache.get(job.key)
            if hit is not None:
                return hit.model_copy(
                    update={
                        "id": snippet.id,
                        "cached": True,
                        "timings": {"cache": time.monotonic() - t_start},
                    }
                )
        if len(snippet.code.encode("utf-8")) > self.settings.lean_max_code_bytes:
            return self._infra_certificate(job, f"code larger than {self.settings.lean_max_code_bytes} bytes")

        audit = prepare_axiom_audit(snippet.code)
        names = audit.names
        split = split_header(audit.code) if audit.rewritten else job.split
        timeout_s = snippet.timeout_s or self.settings.lean_check_timeout_s
        unit = CompileUnit(audit.code, split, axiom_commands(names), timeout_s, priority)
        outcome = audit.restore(await self.primary.compile(unit))
        report = evaluate(outcome, code=snippet.code, names=names, policy=policy, stub=snippet.stub)
        tiers = list(report.tiers)
        timings = {k: v for k, v in outcome.timings.items()}
        axiom_tier = next((t for t in tiers if t.tier == "axioms"), None)
        timings["axioms"] = axiom_tier.seconds if axiom_tier is not None else 0.0

        if self.trust_hooks and outcome.status is ReplStatus.OK:
            t0 = time.monotonic()
            tiers.extend(self._trust_tiers(snippet, policy))
            timings["trust"] = time.monotonic() - t0

        verdict, _ = combine(tiers)
        if verdict is Verdict.PASS and job.recheck and self.pool is not None and self.oneshot.available:
            t0 = time.monotonic()
            tiers.append(await self._recheck(unit, audit, policy, snippet.stub))
            timings["recheck"] = time.monotonic() - t0
        verdict, reasons = combine(tiers)

        goal = goal_at_first_error(report.messages, report.sorries) if verdict is not Verdict.PASS else None
        timings["total"] = time.monotonic() - t_start
        cert = Certificate(
            id=snippet.id,
            verdict=verdict,
            reasons=reasons,
            tiers=tiers,
            policy=policy,
            statement_hash=content_hash(snippet.stub) if snippet.stub else None,
            proof_hash=content_hash(snippet.code),
            environment=self.stamp,
            messages=report.messages,
            sorries=report.sorries,
            axioms=report.axioms,
            goal_at_first_error=goal,
            feedback=render_feedback(report.messages, reasons, goal, verdict=verdict.value),
            violations=[v for t in tiers for v in t.details.get("violations", ()) if isinstance(v, dict)],
            timings=timings,
        )
        self._latencies.append(timings["total"])
        if snippet.use_cache:
            await self.cache.put(job.key, cert)
        return cert

    def _trust_tiers(self, snippet: Snippet, policy: Policy) -> list[TierResult]:
        try:
            return trust.trust_tiers(snippet.code, snippet.stub, policy)
        except Exception as exc:
            log.exception("trust tiers failed", snippet=snippet.id)
            return [
                TierResult(
                    tier="legality",
                    ok=False,
                    verdict=Verdict.INFRA_ERROR,
                    reasons=[f"trust checker failed: {type(exc).__name__}: {exc}"],
                )
            ]

    async def _recheck(
        self, unit: CompileUnit, audit: AxiomAudit, policy: Policy, stub: str | None
    ) -> TierResult:
        outcome = audit.restore(await self.oneshot.compile(unit))
        report = evaluate(outcome, code=unit.code, names=audit.names, policy=policy, stub=stub)
        verdict, reasons = combine(report.tiers)
        if verdict is not Verdict.PASS:
            reasons = [f"one-shot re-check: {r}" for r in reasons] or ["one-shot re-check failed"]
        return TierResult(
            tier="recheck",
            ok=verdict is Verdict.PASS,
            verdict=verdict,
            reasons=reasons,
            seconds=outcome.timings.get("compile", 0.0),
            details={"backend": self.oneshot.name, "axioms": report.axioms},
        )

    # ---- Kimina-compatible low level ------------------------------------------------------------
    async def run_raw(
        self,
        code: str,
        *,
        timeout_s: float | None = None,
        priority: Priority = Priority.BATCH,
        infotree: str | None = None,
        reservation: Reservation | None = None,
        use_cache: bool = False,
    ) -> RawResult:
        """Compile only (no axioms, no trust): the REPL response with positions mapped back.

        ``infotree`` ("full", "tactics", "original", "substantive") asks the REPL for its infotree;
        its ranges are mapped back too. ``reservation`` (from :meth:`reserve`): this check uses
        one of its slots instead of being admitted on its own. ``use_cache``: answer from the
        result cache when it holds this code's response, and store a new response there (errors
        are never stored).
        """
        if not self._started:
            await self.start()
        t0 = time.monotonic()
        if reservation is not None:
            reservation.take()
        else:
            self._admit(1)
            self._active += 1
        key = raw_cache_key(self.stamp, code, infotree) if use_cache else None
        try:
            if key is not None:
                hit = await self.cache.get_raw(key)
                if hit is not None:
                    return RawResult(hit, None, time.monotonic() - t0, None, cached=True)
            unit = CompileUnit(
                code,
                split_header(code),
                "",
                timeout_s or self.settings.lean_check_timeout_s,
                priority,
                {"infotree": infotree} if infotree else None,
            )
            outcome = await self.primary.compile(unit)
        finally:
            self._active -= 1
        elapsed = time.monotonic() - t0
        diagnostics = (
            {"repl_uuid": f"pid-{outcome.pid}", "memory_max": outcome.rss_bytes}
            if outcome.pid is not None
            else None
        )
        if outcome.status is ReplStatus.OK and outcome.response is not None:
            if key is not None:
                await self.cache.put_raw(key, outcome.response)
            return RawResult(outcome.response, None, elapsed, diagnostics)
        return RawResult(None, outcome.detail or outcome.status.value, elapsed, diagnostics)

    # ---- introspection --------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        """``status`` "ok" only while the primary backend can run a check; else "unavailable" and
        ``reason`` (no backend, or the REPL failed to start repeatedly with no success since)."""
        backends: dict[str, Any] = {"oneshot": self.oneshot.health()}
        reason: str | None = None
        if self.pool is not None:
            backends["repl"] = self.pool.health()
            reason = self.pool.unavailable_reason
        elif not self.oneshot.available:
            reason = "no Lean backend is configured (no REPL command, no `lean` executable)"
        report: dict[str, Any] = {
            "status": "ok" if reason is None else "unavailable",
            "primary": self.primary.name,
            "backends": backends,
            "environment": self.stamp.model_dump(mode="json"),
            "active_checks": self._active,
            "trust_hooks": self.trust_hooks,
        }
        if reason is not None:
            report["reason"] = reason
        return report

    def stats(self) -> PoolStats:
        stats = self.pool.stats() if self.pool is not None else PoolStats(backend=self.primary.name)
        stats.cache_hits = self.cache.hits
        stats.cache_misses = self.cache.misses
        stats.verdicts = dict(self._verdicts)
        stats.check_latencies = list(self._latencies)
        stats.active = self._active
        return stats
