"""The shared Redis fixtures talk to the real server and clean up after themselves."""

from __future__ import annotations

import redis
import redis.asyncio as aioredis

from sorryless.config import Settings

_SEEN: dict[str, str] = {}


def test_redis_prefix_is_unique_and_writable(redis_url: str, redis_prefix: str) -> None:
    client = redis.Redis.from_url(redis_url)
    try:
        client.set(f"{redis_prefix}:a", "1")
        client.hset(f"x:{redis_prefix}:h", "k", "v")
        assert client.get(f"{redis_prefix}:a") == b"1"
    finally:
        client.close()
    _SEEN["prefix"] = redis_prefix


def test_previous_tests_keys_were_deleted(redis_url: str, redis_prefix: str) -> None:
    previous = _SEEN["prefix"]  # set by the test above (same module, file order)
    assert previous != redis_prefix
    client = redis.Redis.from_url(redis_url)
    try:
        assert list(client.scan_iter(match=f"*{previous}*")) == []
    finally:
        client.close()


async def test_async_client_and_isolated_settings(redis_client: aioredis.Redis, settings: Settings) -> None:
    assert await redis_client.ping() is True
    assert settings.redis_key_prefix.startswith("sltest-")
    assert settings.lean_repl_cmd is not None and "fake_repl.py" in settings.lean_repl_cmd
    assert settings.data_dir.name == "data"
