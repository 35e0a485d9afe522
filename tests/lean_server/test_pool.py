"""The REPL pool on the fake REPL: header reuse, isolation, spares, kills, recycling, queueing."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import psutil
import pytest

from lean_server.checker import BacklogFull, Priority, Snippet
from lean_server.service import LeanService
from lean_server.verdict import Verdict
from sorryless.config import Settings
from tests.lean_server.core_support import body_requests, check_all, check_code, read_log, tuned, until


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


async def test_header_imported_once_and_every_body_runs_on_the_pristine_header_env(
    settings: Settings, repl_log: Path
) -> None:
    service = LeanService(tuned(settings, lean_max_processes=1), trust_hooks=False)
    try:
        for i in range(3):
            cert = await check_code(service, f"import Mathlib.Tactic\n\ntheorem t{i} : True := trivial\n")
            assert cert.verdict is Verdict.PASS, cert.reasons
    finally:
        await service.aclose()
    log = read_log(repl_log)
    imports = [e for e in log if "env" not in e["request"]]
    assert [e["request"]["cmd"] for e in imports] == ["import Mathlib.Tactic"]
    header_env = imports[0]["response"]["env"]
    bodies = body_requests(log)
    assert len(bodies) == 3
    assert {e["request"]["env"] for e in bodies} == {header_env}
    assert {e["pid"] for e in bodies} == {imports[0]["pid"]}
    assert all("import" not in e["request"]["cmd"] for e in bodies)


@pytest.mark.parametrize("header", ["", "import Mathlib\n"])
async def test_requests_never_see_each_others_declarations(
    settings: Settings, repl_log: Path, header: str
) -> None:
    service = LeanService(tuned(settings, lean_max_processes=1), trust_hooks=False)
    try:
        first = await check_code(service, header + "axiom cheat : False\ntheorem t : 1 = 1 := cheat.elim\n")
        second = await check_code(service, header + "theorem t : 1 = 1 := rfl\naxiom cheat : False\n")
        third = await check_code(service, header + "theorem t : 1 = 1 := rfl\n")
    finally:
        await service.aclose()
    assert first.verdict is Verdict.CHEAT
    # same names again: no "already declared" (each body runs on the pristine env)
    assert not any("already been declared" in m.data for m in second.messages + third.messages)
    assert third.verdict is Verdict.PASS, third.reasons
    assert third.axioms == {"t": ["Classical.choice", "Quot.sound", "propext"]}
    log = read_log(repl_log)
    bodies = body_requests(log)
    assert len({e["pid"] for e in bodies}) == 1
    assert len({e["request"]["env"] for e in bodies}) == 1


async def test_warm_spare_means_no_import_on_the_critical_path_after_a_kill(
    settings: Settings, repl_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_REPL_IMPORT_MS", "1500")
    service = LeanService(tuned(settings, lean_max_processes=3, lean_warm_spares=1), trust_hooks=False)
    header = "import Mathlib\n"
    try:
        warm = await check_code(service, header + "theorem a : True := trivial")
        assert warm.verdict is Verdict.PASS
        assert warm.timings["import"] > 1.0  # the very first check had to wait for an import
        killed = await check_code(service, header + "theorem b : True := by\n  FAKE:hang\n", timeout_s=0.3)
        assert killed.verdict is Verdict.TIMEOUT
        t0 = time.monotonic()
        after = await check_code(service, header + "theorem c : True := trivial")
        elapsed = time.monotonic() - t0
    finally:
        await service.aclose()
    assert after.verdict is Verdict.PASS
    assert after.timings["import"] == 0.0
    assert elapsed < 1.0, f"the check after a kill waited {elapsed:.2f}s (an import is 1.5s)"


async def test_timeout_kills_the_process_group_and_is_not_cached(settings: Settings, repl_log: Path) -> None:
    service = LeanService(tuned(settings), trust_hooks=False)
    code = "theorem slow : True := by\n  FAKE:hang\n"
    try:
        t0 = time.monotonic()
        cert = await check_code(service, code, timeout_s=0.3)
        assert time.monotonic() - t0 < 2.0
        again = await check_code(service, code, timeout_s=0.3)
        stats = service.stats()
    finally:
        await service.aclose()
    assert cert.verdict is Verdict.TIMEOUT and again.verdict is Verdict.TIMEOUT
    assert not again.cached
    assert stats.kills.get("timeout") == 2
    hung = [e["pid"] for e in body_requests(read_log(repl_log)) if "FAKE:hang" in e["request"]["cmd"]]
    await asyncio.sleep(0.2)
    assert hung and not any(_alive(pid) for pid in hung)


@pytest.mark.parametrize(
    ("trigger", "expected", "reason_part"),
    [
        ("FAKE:crash", Verdict.INFRA_ERROR, "died"),
        ("FAKE:garbage", Verdict.INFRA_ERROR, "non-JSON"),
    ],
)
async def test_crash_and_garbage_are_typed_outcomes_and_the_pool_recovers(
    settings: Settings, repl_log: Path, trigger: str, expected: Verdict, reason_part: str
) -> None:
    service = LeanService(tuned(settings), trust_hooks=False)
    try:
        bad = await check_code(service, f"theorem x : True := by\n  -- {trigger}\n  trivial\n")
        good = await check_code(service, "theorem y : True := trivial\n")
    finally:
        await service.aclose()
    assert bad.verdict is expected
    assert any(reason_part in r for r in bad.reasons), bad.reasons
    assert good.verdict is Verdict.PASS


async def test_memory_growth_gives_the_oom_verdict(settings: Settings) -> None:
    service = LeanService(tuned(settings, lean_memory_limit_mb=300), trust_hooks=False)
    try:
        cert = await check_code(service, "theorem big : True := by\n  FAKE:oom\n", timeout_s=30)
        after = await check_code(service, "theorem small : True := trivial\n")
    finally:
        await service.aclose()
    assert cert.verdict is Verdict.OOM, cert.reasons
    assert "memory" in cert.reasons[0]
    assert after.verdict is Verdict.PASS


@pytest.mark.parametrize("knob", [{"lean_max_uses": 2}, {"lean_max_age_s": 0.25}, {"lean_recycle_rss_mb": 1}])
async def test_recycling_by_uses_age_and_rss(
    settings: Settings, repl_log: Path, knob: dict[str, float]
) -> None:
    service = LeanService(tuned(settings, lean_max_processes=1, **knob), trust_hooks=False)
    try:
        for i in range(4):
            cert = await check_code(service, f"theorem r{i} : True := trivial\n")
            assert cert.verdict is Verdict.PASS
            await asyncio.sleep(0.4)  # time for the replacement to import (then the old one retires)
        kills = service.stats().kills
    finally:
        await service.aclose()
    per_pid: dict[int, int] = {}
    for entry in body_requests(read_log(repl_log)):
        per_pid[entry["pid"]] = per_pid.get(entry["pid"], 0) + 1
    assert len(per_pid) >= 2
    assert max(per_pid.values()) <= 2
    expected_reason = {"lean_max_uses": "max_uses", "lean_max_age_s": "max_age", "lean_recycle_rss_mb": "rss"}
    assert kills.get(expected_reason[next(iter(knob))], 0) >= 1


async def test_interactive_is_served_before_batch_when_both_wait(settings: Settings, repl_log: Path) -> None:
    service = LeanService(tuned(settings, lean_max_processes=1), trust_hooks=False)
    finished: list[str] = []

    async def run(snippets: list[Snippet], priority: Priority) -> None:
        async for cert in service.check(snippets, priority=priority):
            finished.append(cert.id)

    try:
        blocker = asyncio.create_task(
            run([Snippet(id="block", code="theorem b : True := by\n  FAKE:slow=1000\n")], Priority.BATCH)
        )
        await until(lambda: service.stats().per_header.get("", {}).get("busy") == 1)
        batch = asyncio.create_task(
            run(
                [Snippet(id=f"batch{i}", code=f"theorem q{i} : True := trivial") for i in range(3)],
                Priority.BATCH,
            )
        )
        await until(lambda: service.stats().waiting_by_priority["batch"] == 3)
        interactive = asyncio.create_task(
            run([Snippet(id="inter", code="theorem i : True := trivial")], Priority.INTERACTIVE)
        )
        await until(lambda: service.stats().waiting_by_priority["interactive"] == 1)
        assert not blocker.done()  # both kinds really waited behind the blocker
        await asyncio.gather(blocker, batch, interactive)
    finally:
        await service.aclose()
    assert sorted(finished) == ["batch0", "batch1", "batch2", "block", "inter"]
    # the order the REPL received the bodies (completion order also includes cache writes)
    served = [e["request"]["cmd"].split()[1] for e in body_requests(read_log(repl_log))]
    assert served[:2] == ["b", "i"] and sorted(served[2:]) == ["q0", "q1", "q2"], served


async def test_backlog_limit_raises_backlog_full_with_retry_after(settings: Settings) -> None:
    service = LeanService(tuned(settings, lean_max_processes=1, lean_backlog_limit=2), trust_hooks=False)
    try:
        slow = asyncio.create_task(check_code(service, "theorem s : True := by\n  FAKE:slow=300\n"))
        await asyncio.sleep(0.05)
        many = [Snippet(id=f"m{i}", code=f"theorem m{i} : True := trivial") for i in range(5)]
        with pytest.raises(BacklogFull) as info:
            await check_all(service, many)
        assert info.value.retry_after > 0
        # within the limit: oversubscription waits instead of failing
        ok = await check_all(service, many[:2])
        assert all(c.verdict is Verdict.PASS for c in ok.values())
        assert (await slow).verdict is Verdict.PASS
    finally:
        await service.aclose()


async def test_results_stream_in_completion_order(settings: Settings) -> None:
    service = LeanService(tuned(settings, lean_max_processes=2), trust_hooks=False)
    snippets = [
        Snippet(id="slow", code="theorem s : True := by\n  FAKE:slow=1500\n"),
        *[Snippet(id=f"fast{i}", code=f"theorem f{i} : True := trivial") for i in range(4)],
    ]
    arrivals: list[tuple[str, float]] = []
    try:
        await check_all(service, [Snippet(id="warm", code="theorem w : True := trivial")])
        t0 = time.monotonic()
        async for cert in service.check(snippets):
            arrivals.append((cert.id, time.monotonic() - t0))
    finally:
        await service.aclose()
    assert [a[0] for a in arrivals][-1] == "slow"
    assert all(t < 1.0 for name, t in arrivals if name != "slow"), arrivals
    assert arrivals[-1][1] >= 1.4


async def test_positions_map_back_to_the_original_text(settings: Settings) -> None:
    service = LeanService(tuned(settings), trust_hooks=False)
    code = (
        "import Mathlib.Data.Real.Basic\n"  # 1
        "-- comment between imports\n"  # 2
        "import Aesop\n"  # 3
        "\n"  # 4
        "theorem t : True := by\n"  # 5
        "  FAKE:error=type mismatch here\n"  # 6
        "theorem u : True := by sorry\n"  # 7
    )
    try:
        cert = await check_code(service, code)
        raw = await service.run_raw(code, timeout_s=5, priority=Priority.BATCH)
    finally:
        await service.aclose()
    assert cert.verdict is Verdict.LEAN_ERROR
    error = next(m for m in cert.messages if m.severity == "error")
    assert error.pos is not None and (error.pos.line, error.pos.column) == (6, 2)
    assert error.category == "type_mismatch"
    warning = next(m for m in cert.messages if m.severity == "warning")
    assert warning.pos is not None and warning.pos.line == 7
    assert cert.sorries and cert.sorries[0].pos is not None and cert.sorries[0].pos.line == 7
    assert cert.feedback is not None and "line 6, col 2: error [type_mismatch]" in cert.feedback
    # the Kimina-style raw response: mapped, and without our appended #print axioms
    assert raw.error is None and raw.response is not None
    lines = sorted(m["pos"]["line"] for m in raw.response["messages"])
    assert lines == [6, 7]
    assert not any("axioms" in m["data"] for m in raw.response["messages"])
    assert raw.response["sorries"][0]["pos"]["line"] == 7


async def test_run_raw_reports_a_timeout_as_an_error(settings: Settings) -> None:
    service = LeanService(tuned(settings), trust_hooks=False)
    try:
        raw = await service.run_raw(
            "theorem x : True := by\n  FAKE:hang", timeout_s=0.3, priority=Priority.BATCH
        )
    finally:
        await service.aclose()
    assert raw.response is None and raw.error == "Lean REPL command timed out in 0.3 seconds"


async def test_health_and_stats_describe_the_pool(settings: Settings) -> None:
    service = LeanService(tuned(settings), trust_hooks=False)
    try:
        await check_code(service, "import Mathlib\ntheorem h : True := trivial")
        health = service.health()
        stats = service.stats()
    finally:
        await service.aclose()
    assert health["primary"] == "repl"
    assert "import Mathlib" in health["backends"]["repl"]["per_header"]
    assert stats.imports >= 1 and len(stats.import_seconds) == stats.imports
    assert stats.verdicts == {"PASS": 1}
    assert stats.per_header["import Mathlib"]["idle"] + stats.per_header["import Mathlib"]["busy"] >= 1
    assert any(p.pid is not None and p.header == "import Mathlib" for p in stats.processes)
    assert os.getpid() not in [p.pid for p in stats.processes]


async def test_cancelled_check_kills_its_process_and_the_pool_goes_on(
    settings: Settings, repl_log: Path
) -> None:
    service = LeanService(tuned(settings, lean_max_processes=1), trust_hooks=False)
    try:
        task = asyncio.create_task(check_code(service, "theorem h : True := by\n  FAKE:hang\n", timeout_s=30))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        after = await check_code(service, "theorem ok : True := trivial\n")
        kills = service.stats().kills
    finally:
        await service.aclose()
    assert after.verdict is Verdict.PASS
    assert kills.get("cancelled") == 1
    hung = [e["pid"] for e in body_requests(read_log(repl_log)) if "FAKE:hang" in e["request"]["cmd"]]
    await asyncio.sleep(0.2)
    assert hung and not any(_alive(pid) for pid in hung)


async def test_headers_share_a_full_pool_by_evicting_idle_processes(
    settings: Settings, repl_log: Path
) -> None:
    service = LeanService(tuned(settings, lean_max_processes=1), trust_hooks=False)
    try:
        certs = [
            await check_code(service, f"{header}\ntheorem e{i} : True := trivial\n")
            for i, header in enumerate(["import Mathlib", "import Aesop", "import Mathlib"])
        ]
        stats = service.stats()
    finally:
        await service.aclose()
    assert all(c.verdict is Verdict.PASS for c in certs)
    assert stats.kills.get("evicted", 0) >= 2
    imports = [e["request"]["cmd"] for e in read_log(repl_log) if "env" not in e["request"]]
    assert imports == ["import Mathlib", "import Aesop", "import Mathlib"]


async def test_prewarmed_header_is_ready_before_the_first_check(
    settings: Settings, repl_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_REPL_IMPORT_MS", "800")
    service = LeanService(tuned(settings, lean_prewarm_headers=["import Mathlib"]), trust_hooks=False)
    try:
        await service.start()
        await asyncio.sleep(1.2)
        t0 = time.monotonic()
        cert = await check_code(service, "import Mathlib\ntheorem p : True := trivial\n")
        elapsed = time.monotonic() - t0
    finally:
        await service.aclose()
    assert cert.verdict is Verdict.PASS
    assert cert.timings["import"] == 0.0 and elapsed < 0.6


async def test_each_process_runs_under_the_memory_cap(settings: Settings, repl_log: Path) -> None:
    service = LeanService(tuned(settings, lean_memory_limit_mb=512), trust_hooks=False)
    try:
        await check_code(service, "theorem m : True := trivial\n")
        pool = service.pool
        assert pool is not None
        mode = pool.limiter.mode
        pids = [p.pid for p in service.stats().processes if p.pid is not None]
        assert pids
        limits = Path(f"/proc/{pids[0]}/limits").read_text()
        cgroup = Path(f"/proc/{pids[0]}/cgroup").read_text()
    finally:
        await service.aclose()
    if mode == "rlimit":
        line = next(x for x in limits.splitlines() if x.startswith("Max address space"))
        assert line.split()[3] == str(512 * 1024 * 1024)
    else:
        assert mode == "cgroup" and "sorryless-lean-" in cgroup


async def test_run_raw_passes_the_infotree_option_to_the_repl(settings: Settings, repl_log: Path) -> None:
    service = LeanService(tuned(settings), trust_hooks=False)
    try:
        raw = await service.run_raw("theorem i : True := trivial", timeout_s=5, infotree="original")
    finally:
        await service.aclose()
    assert (
        raw.error is None and raw.diagnostics is not None and raw.diagnostics["repl_uuid"].startswith("pid-")
    )
    bodies = body_requests(read_log(repl_log))
    assert bodies[-1]["request"]["infotree"] == "original"
