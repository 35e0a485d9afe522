"""Result cache: LRU and Redis hits, in-batch dedup, only definitive verdicts, Redis down."""

from __future__ import annotations

from pathlib import Path

import redis.asyncio as aioredis

from lean_server.checker import Snippet
from lean_server.service import LeanService
from lean_server.verdict import Verdict
from sorryless.config import Settings
from tests.lean_server.core_support import body_requests, check_all, check_code, read_log, tuned

CODE = "import Mathlib\ntheorem c : 2 + 2 = 4 := by norm_num\n"


async def test_lru_hit_says_cached_and_does_not_touch_lean(settings: Settings, repl_log: Path) -> None:
    service = LeanService(tuned(settings), trust_hooks=False)
    try:
        first = await check_code(service, CODE)
        second = await check_code(service, CODE)
        stats = service.stats()
    finally:
        await service.aclose()
    assert first.verdict is Verdict.PASS and not first.cached
    assert second.cached and second.verdict is Verdict.PASS
    assert second.proof_hash == first.proof_hash and second.axioms == first.axioms
    assert len(body_requests(read_log(repl_log))) == 1
    assert stats.cache_hits == 1 and stats.cache_misses == 1


async def test_redis_hit_across_service_instances(
    settings: Settings, repl_log: Path, redis_client: aioredis.Redis, redis_prefix: str
) -> None:
    first_service = LeanService(tuned(settings), trust_hooks=False)
    try:
        first = await check_code(first_service, CODE)
    finally:
        await first_service.aclose()
    keys = [k async for k in redis_client.scan_iter(match=f"{redis_prefix}:lean:cert:*")]
    assert len(keys) == 1
    ttl = await redis_client.ttl(keys[0])
    assert 0 < ttl <= settings.lean_cache_ttl_s
    second_service = LeanService(tuned(settings), trust_hooks=False)
    try:
        second = await check_code(second_service, CODE)
        assert second_service.cache.redis_hits == 1
    finally:
        await second_service.aclose()
    assert second.cached and second.verdict is first.verdict
    assert len(body_requests(read_log(repl_log))) == 1


async def test_identical_snippets_in_one_batch_are_checked_once(settings: Settings, repl_log: Path) -> None:
    service = LeanService(tuned(settings), trust_hooks=False)
    try:
        certs = await check_all(service, [Snippet(id=f"d{i}", code=CODE) for i in range(3)])
    finally:
        await service.aclose()
    assert sorted(certs) == ["d0", "d1", "d2"]
    assert sum(c.cached for c in certs.values()) == 2
    assert all(c.verdict is Verdict.PASS for c in certs.values())
    assert len(body_requests(read_log(repl_log))) == 1


async def test_policy_and_use_cache_are_respected(settings: Settings, repl_log: Path) -> None:
    code = "theorem s : True := by sorry\n"
    service = LeanService(tuned(settings), trust_hooks=False)
    try:
        strict = await check_code(service, code)
        sketch = await check_code(service, code, policy="sketch")
        again = await check_code(service, code, use_cache=False)
    finally:
        await service.aclose()
    assert strict.verdict is Verdict.SORRY and sketch.verdict is Verdict.PASS  # different keys
    assert not sketch.cached and not again.cached
    assert len(body_requests(read_log(repl_log))) == 3


async def test_timeouts_are_never_cached(settings: Settings, repl_log: Path) -> None:
    service = LeanService(tuned(settings), trust_hooks=False)
    code = "theorem h : True := by\n  FAKE:hang\n"
    try:
        first = await check_code(service, code, timeout_s=0.2)
        second = await check_code(service, code, timeout_s=0.2)
    finally:
        await service.aclose()
    assert first.verdict is Verdict.TIMEOUT and second.verdict is Verdict.TIMEOUT
    assert not second.cached
    assert len(body_requests(read_log(repl_log))) == 2


async def test_redis_down_degrades_to_lru_only(settings: Settings, repl_log: Path) -> None:
    broken = tuned(settings, redis_url="redis://127.0.0.1:1/0")
    service = LeanService(broken, trust_hooks=False)
    try:
        first = await check_code(service, CODE)
        second = await check_code(service, CODE)
        errors = service.cache.redis_errors
    finally:
        await service.aclose()
    assert first.verdict is Verdict.PASS and not first.cached
    assert second.cached
    assert errors >= 1


async def test_in_batch_copies_of_a_timeout_are_not_marked_cached(settings: Settings, repl_log: Path) -> None:
    service = LeanService(tuned(settings), trust_hooks=False)
    code = "theorem h : True := by\n  FAKE:hang\n"
    try:
        certs = await check_all(service, [Snippet(id=f"t{i}", code=code, timeout_s=0.2) for i in range(2)])
    finally:
        await service.aclose()
    assert {c.verdict for c in certs.values()} == {Verdict.TIMEOUT}
    assert not any(c.cached for c in certs.values())  # the cache never stores a TIMEOUT
    assert len(body_requests(read_log(repl_log))) == 1  # still checked once


async def test_in_batch_dedup_keeps_different_deadlines_apart(settings: Settings, repl_log: Path) -> None:
    service = LeanService(tuned(settings), trust_hooks=False)
    code = "theorem w : True := by\n  FAKE:slow=400\n  trivial\n"
    try:
        certs = await check_all(
            service,
            [
                Snippet(id="short", code=code, timeout_s=0.1),
                Snippet(id="long", code=code, timeout_s=5.0),
                Snippet(id="long-again", code=code, timeout_s=5.0),
            ],
        )
        kills = service.stats().kills
    finally:
        await service.aclose()
    assert certs["short"].verdict is Verdict.TIMEOUT
    assert certs["long"].verdict is Verdict.PASS and certs["long-again"].verdict is Verdict.PASS
    assert certs["long-again"].cached != certs["long"].cached  # one checked, one copy
    assert len(body_requests(read_log(repl_log))) == 1  # the long pair ran once (the short one was killed)
    assert kills.get("timeout") == 1


async def test_use_cache_false_gets_a_check_of_its_own_in_a_batch(settings: Settings, repl_log: Path) -> None:
    service = LeanService(tuned(settings), trust_hooks=False)
    try:
        certs = await check_all(service, [Snippet(id=f"n{i}", code=CODE, use_cache=False) for i in range(2)])
    finally:
        await service.aclose()
    assert all(c.verdict is Verdict.PASS and not c.cached for c in certs.values())
    assert len(body_requests(read_log(repl_log))) == 2
