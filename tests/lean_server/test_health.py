"""Health tells the truth: repeated REPL start failures make the backend unavailable until one works."""

from __future__ import annotations

import shlex
import sys

import pytest

from lean_server.service import LeanService
from lean_server.verdict import Verdict
from sorryless.config import Settings
from tests.lean_server.core_support import check_code, tuned
from tests.lean_server.test_app_helpers import served, small_pool

_BROKEN_COMMANDS = {
    "missing-file": "/nonexistent/sorryless/repl",
    "exits-at-once": shlex.join([sys.executable, "-c", "pass"]),
}


@pytest.mark.parametrize("broken", sorted(_BROKEN_COMMANDS))
async def test_repeated_start_failures_make_health_unavailable_until_a_success(
    settings: Settings, fake_repl_argv: list[str], broken: str
) -> None:
    service = LeanService(
        tuned(settings, lean_repl_cmd=_BROKEN_COMMANDS[broken], lean_max_processes=1), trust_hooks=False
    )
    try:
        await service.start()
        assert service.health()["status"] == "ok"  # nothing has failed yet
        first = await check_code(service, "theorem a : True := trivial\n")
        down = service.health()
        starts_for_first = service.stats().kills.get("import_failed", 0)
        second = await check_code(service, "theorem b : True := trivial\n")
        assert service.pool is not None
        service.pool.argv = fake_repl_argv  # the REPL works again (e.g. it was installed)
        third = await check_code(service, "theorem c : True := trivial\n")
        recovered = service.health()
    finally:
        await service.aclose()
    assert first.verdict is Verdict.INFRA_ERROR and second.verdict is Verdict.INFRA_ERROR
    # The first check's start failed, it was tried once more (a failure may be a fluke), then
    # the REPL counts as down.
    assert starts_for_first == 2
    assert down["status"] == "unavailable"
    assert down["backends"]["repl"]["available"] is False
    expected = "cannot start the REPL" if broken == "missing-file" else "died"
    assert "could not be started" in down["reason"] and expected in down["reason"], down["reason"]
    assert third.verdict is Verdict.PASS
    assert recovered["status"] == "ok" and "reason" not in recovered


async def test_health_route_is_503_after_the_repl_keeps_dying(settings: Settings) -> None:
    broken = small_pool(settings, lean_repl_cmd=_BROKEN_COMMANDS["exits-at-once"], lean_max_processes=1)
    async with served(broken) as (_, client):
        assert (await client.get("/health")).status_code == 200
        for i in range(2):
            body = {"snippets": [{"id": f"s{i}", "code": f"theorem t{i} : True := trivial"}]}
            response = await client.post("/api/check", json=body)
            assert response.status_code == 200 and "error" in response.json()["results"][0]
        health = await client.get("/health")
    assert health.status_code == 503
    assert health.json()["status"] == "unavailable"
    assert "died" in health.json()["reason"]
