"""A batch is admitted whole or rejected with BacklogFull before any of it runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lean_server.checker import BacklogFull, Priority
from lean_server.service import LeanService
from lean_server.verdict import Verdict
from sorryless.config import Settings
from tests.lean_server.core_support import body_requests, check_code, read_log, tuned
from tests.lean_server.test_app_helpers import served, small_pool


async def _until_busy(service: LeanService) -> None:
    for _ in range(500):
        if service.stats().active >= 1 and any(p.state == "busy" for p in service.stats().processes):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the blocker never started")


async def test_reserve_admits_all_or_nothing_and_gives_back_unused_slots(settings: Settings) -> None:
    service = LeanService(tuned(settings, lean_max_processes=1, lean_backlog_limit=2), trust_hooks=False)
    try:
        blocker = asyncio.create_task(check_code(service, "theorem s : True := by\n  FAKE:slow=400\n"))
        await _until_busy(service)
        with pytest.raises(BacklogFull) as info:
            service.reserve(3)  # 1 active + 3 > 1 process + 2 backlog
        assert info.value.retry_after > 0
        assert service.stats().active == 1  # nothing was half-admitted
        with service.reserve(2) as reservation:
            assert service.stats().active == 3
            with pytest.raises(BacklogFull):
                await service.run_raw("theorem x : True := trivial", timeout_s=5)  # full without it
            raw = await service.run_raw("theorem y : True := trivial", timeout_s=5, reservation=reservation)
            assert raw.error is None and reservation.remaining == 1
            assert (await blocker).verdict is Verdict.PASS
            assert service.stats().active == 1  # only the unused slot is still held
        assert service.stats().active == 0  # ... and it came back on exit
    finally:
        await service.aclose()


async def test_kimina_batch_over_the_backlog_is_429_before_anything_runs(
    settings: Settings, repl_log: Path
) -> None:
    # a warm spare is idle, so an admitted half of the batch would start running at once
    tuned_settings = small_pool(settings, lean_max_processes=2, lean_backlog_limit=0, lean_warm_spares=1)
    service = LeanService(tuned_settings, trust_hooks=False)
    async with served(tuned_settings, service) as (_, client):
        blocker = asyncio.create_task(
            service.run_raw("theorem s : True := by\n  FAKE:slow=500\n", timeout_s=5, priority=Priority.BATCH)
        )
        await _until_busy(service)
        for _ in range(500):
            if service.stats().per_header.get("", {}).get("idle") == 1:
                break
            await asyncio.sleep(0.01)
        body = {
            "snippets": [
                {"id": "a", "code": "theorem half_a : True := by\n  FAKE:slow=300\n"},
                {"id": "b", "code": "theorem half_b : True := trivial"},
            ]
        }
        response = await client.post("/api/check", json=body)
        raw = await blocker
        kills = service.stats().kills
        active = service.stats().active
    assert response.status_code == 429 and "retry-after" in response.headers
    assert raw.error is None
    assert active == 0
    assert "cancelled" not in kills  # no admitted half of the batch was started and then killed
    cmds = [e["request"]["cmd"] for e in body_requests(read_log(repl_log))]
    assert not any("half_" in cmd for cmd in cmds)
