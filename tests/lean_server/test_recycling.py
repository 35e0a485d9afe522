"""Recycling swaps processes without an import on the critical path; RSS sampling reads /proc."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from lean_server import repl
from lean_server.limits import MemoryLimiter
from lean_server.repl import tree_rss_from_proc
from lean_server.service import LeanService
from lean_server.verdict import Verdict
from sorryless.config import Settings
from tests.lean_server.core_support import body_requests, check_code, read_log, tuned


@pytest.mark.slow
async def test_a_recycle_never_puts_an_import_on_the_critical_path(
    settings: Settings, repl_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_REPL_IMPORT_MS", "1500")
    service = LeanService(tuned(settings, lean_max_processes=1, lean_max_uses=3), trust_hooks=False)
    try:
        warm = await check_code(service, "import Mathlib\ntheorem w : True := trivial\n")
        assert warm.timings["import"] > 1.0  # the first check waited for the only import
        certs = [
            await check_code(
                service, f"import Mathlib\ntheorem s{i} : True := by\n  FAKE:slow=120\n  trivial\n"
            )
            for i in range(18)
        ]
        kills = service.stats().kills
    finally:
        await service.aclose()
    assert all(c.verdict is Verdict.PASS for c in certs), [c.reasons for c in certs]
    assert [c.timings["import"] for c in certs] == [0.0] * len(certs)
    assert max(c.timings["wait"] for c in certs) < 1.0, [c.timings for c in certs]
    assert kills.get("max_uses", 0) >= 1
    pids = {e["pid"] for e in body_requests(read_log(repl_log))}
    assert len(pids) >= 2  # the swap happened: a second process served


async def test_recycled_process_serves_on_while_its_replacement_imports(
    settings: Settings, repl_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_REPL_IMPORT_MS", "600")
    service = LeanService(tuned(settings, lean_max_processes=1, lean_max_uses=1), trust_hooks=False)
    try:
        first = await check_code(service, "import Mathlib\ntheorem a : True := trivial\n")
        second = await check_code(service, "import Mathlib\ntheorem b : True := trivial\n")
        processes = service.stats().processes
        await asyncio.sleep(1.0)
        third = await check_code(service, "import Mathlib\ntheorem c : True := trivial\n")
        after = service.stats()
    finally:
        await service.aclose()
    assert first.verdict is second.verdict is third.verdict is Verdict.PASS
    assert second.timings["import"] == 0.0 and third.timings["import"] == 0.0
    assert len(processes) == 2  # the old one plus its replacement: one over the cap during the swap
    assert len(after.processes) <= 2 and after.kills.get("max_uses", 0) >= 1
    pids = [e["pid"] for e in body_requests(read_log(repl_log))]
    assert pids[0] == pids[1] != pids[2]


def test_tree_rss_from_proc_counts_children() -> None:
    code = "import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); time.sleep(30)"
    parent = subprocess.Popen([sys.executable, "-c", code])
    try:
        ps = psutil.Process(parent.pid)
        for _ in range(100):
            if ps.children():
                break
            psutil.wait_procs([], timeout=0.05)
        children = ps.children(recursive=True)
        assert children
        expected = ps.memory_info().rss + sum(c.memory_info().rss for c in children)
        measured = tree_rss_from_proc(parent.pid)
        assert measured is not None
        assert abs(measured - expected) < 0.2 * expected
        assert measured > ps.memory_info().rss  # the child is included
    finally:
        parent.kill()
        for child in psutil.Process(os.getpid()).children(recursive=True):
            if child.pid != parent.pid:
                child.kill()
        parent.wait()


def test_tree_rss_of_a_gone_process_is_zero() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert tree_rss_from_proc(proc.pid) == 0


def test_rss_falls_back_to_psutil_where_proc_cannot_tell(monkeypatch: pytest.MonkeyPatch) -> None:
    proc = repl.ReplProcess(["true"], None, MemoryLimiter(0), "")
    proc.pid = os.getpid()
    from_proc = proc.rss_bytes()
    monkeypatch.setattr(repl, "tree_rss_from_proc", lambda pid: None)
    from_psutil = proc.rss_bytes()
    assert from_proc > 0 and from_psutil > 0
    assert proc.last_rss == from_psutil
    assert abs(from_proc - from_psutil) < 0.2 * from_psutil
