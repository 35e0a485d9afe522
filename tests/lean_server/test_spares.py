"""Warm spares under load and restarts after a failed process start (fake REPL)."""

from __future__ import annotations

import asyncio
import shlex
import sys
import time
from pathlib import Path

import pytest

from lean_server.checker import Snippet
from lean_server.service import LeanService
from lean_server.verdict import Certificate, Verdict
from sorryless.config import Settings
from tests.lean_server.core_support import check_all, check_code, read_log, tuned, until, write_rules

_HEADER = "import Mathlib\n"


async def _one(service: LeanService, snippet: Snippet) -> tuple[Certificate, float]:
    cert = (await check_all(service, [snippet]))[snippet.id]
    return cert, time.monotonic()


async def test_a_saturated_pool_keeps_a_warm_spare_so_a_timeout_kill_costs_no_import(
    settings: Settings, repl_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_REPL_IMPORT_MS", "1200")
    service = LeanService(tuned(settings, lean_max_processes=2, lean_warm_spares=1), trust_hooks=False)
    try:
        warm = await check_code(service, _HEADER + "theorem a : True := trivial")
        assert warm.verdict is Verdict.PASS and warm.timings["import"] > 0.5
        assert service.pool is not None
        pool = service.pool
        # Saturate both slots: one check hangs until its deadline kills it, one is slow.
        hung = asyncio.ensure_future(
            _one(
                service,
                Snippet(id="hung", code=_HEADER + "theorem h : True := by\n  FAKE:hang\n", timeout_s=2.0),
            )
        )
        slow = asyncio.ensure_future(
            _one(
                service,
                Snippet(id="slow", code=_HEADER + "theorem s : True := by\n  FAKE:slow=6000\n  trivial\n"),
            )
        )
        await until(lambda: pool.stats().per_header["import Mathlib"]["busy"] == 2)
        # The spare beyond the two busy processes is imported in the background.
        await until(lambda: pool.stats().per_header["import Mathlib"]["idle"] == 1, timeout_s=3.0)
        assert len(pool.stats().processes) == 3
        waiter = asyncio.ensure_future(
            _one(service, Snippet(id="next", code=_HEADER + "theorem n : True := trivial"))
        )
        await asyncio.sleep(0.1)
        assert not waiter.done()  # both slots are busy: the spare is not a third slot
        hung_cert, hung_done = await hung
        next_cert, next_done = await waiter
        # A new spare replaces the one the waiter took.
        await until(lambda: pool.stats().per_header["import Mathlib"]["idle"] == 1, timeout_s=3.0)
        slow.cancel()
    finally:
        await service.aclose()
    assert hung_cert.verdict is Verdict.TIMEOUT
    assert next_cert.verdict is Verdict.PASS
    assert next_cert.timings["import"] == 0.0
    assert next_done - hung_done < 0.8, f"the waiter took {next_done - hung_done:.2f}s after the kill"


_FLAKY_START = """
import os, sys
counter, mode, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
n = int(open(counter).read()) if os.path.exists(counter) else 0
open(counter, "w").write(str(n + 1))
if n == 0:
    if mode == "crash":
        sys.exit(3)
    if mode == "oom":
        sys.stderr.write("std::bad_alloc\\n")
        sys.exit(1)
    if mode == "import_timeout":
        os.environ["FAKE_REPL_IMPORT_MS"] = "5000"
os.execv(argv[0], argv)
"""


@pytest.mark.parametrize("mode", ["crash", "oom", "import_timeout"])
async def test_a_transient_start_failure_is_retried_for_the_waiter(
    settings: Settings, fake_repl_argv: list[str], tmp_path: Path, mode: str
) -> None:
    script = tmp_path / "flaky_start.py"
    script.write_text(_FLAKY_START)
    counter = tmp_path / "starts"
    cmd = shlex.join([sys.executable, str(script), str(counter), mode, *fake_repl_argv])
    service = LeanService(
        tuned(settings, lean_repl_cmd=cmd, lean_max_processes=1, lean_import_timeout_s=1.0), trust_hooks=False
    )
    try:
        cert = await check_code(service, _HEADER + "theorem t : True := trivial\n")
        health = service.health()
        kills = service.stats().kills
    finally:
        await service.aclose()
    assert cert.verdict is Verdict.PASS, cert.reasons
    assert counter.read_text() == "2"
    assert kills.get("import_failed") == 1
    assert health["status"] == "ok"


async def test_a_header_error_fails_its_waiters_without_a_retry(
    settings: Settings, repl_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = [
        {
            "match": "import Nonexistent",
            "messages": [
                {
                    "severity": "error",
                    "pos": {"line": 1, "column": 0},
                    "endPos": None,
                    "data": "unknown module",
                }
            ],
        }
    ]
    monkeypatch.setenv("FAKE_REPL_RULES", str(write_rules(tmp_path / "rules.json", rules)))
    monkeypatch.setenv("FAKE_REPL_IMPORT_MS", "300")  # every waiter queues before the import fails
    service = LeanService(tuned(settings, lean_max_processes=1), trust_hooks=False)
    try:
        snippets = [
            Snippet(id=f"b{i}", code=f"import Nonexistent\ntheorem t{i} : True := trivial\n")
            for i in range(3)
        ]
        certs = await check_all(service, snippets)
        health = service.health()
    finally:
        await service.aclose()
    assert {c.verdict for c in certs.values()} == {Verdict.LEAN_ERROR}
    imports = [e for e in read_log(repl_log) if e["request"].get("cmd") == "import Nonexistent"]
    assert len(imports) == 1  # deterministic: not started again
    assert health["status"] == "ok"  # the snippet's fault, not the backend's
