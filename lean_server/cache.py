"""Result cache: in-process LRU in front of Redis (TTL), keyed by a content hash of everything
that decides a verdict (environment stamp, code, policy, stub, tiers asked for).

Only definitive verdicts are stored (never INFRA_ERROR, TIMEOUT or OOM). Redis trouble never
fails a check: the cache drops to LRU-only and retries Redis a little later.

The Kimina-compatible ``/verify`` stores raw REPL responses (compile only, no tiers) in the
same LRU and Redis under their own keys (:func:`raw_cache_key`, ``...:lean:raw:``); only
responses are stored, never errors (timeouts, crashes).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from lean_server.policy import Policy
from lean_server.verdict import Certificate, EnvironmentStamp, Verdict
from sorryless.config import Settings
from sorryless.logging import get_logger

log = get_logger(__name__)

UNCACHEABLE = frozenset({Verdict.INFRA_ERROR, Verdict.TIMEOUT, Verdict.OOM})
_REDIS_RETRY_S = 5.0
_REDIS_TIMEOUT_S = 0.5


def cache_key(
    stamp: EnvironmentStamp, code: str, policy: Policy, stub: str | None, *, trust: bool, recheck: bool
) -> str:
    """Content hash of one check's inputs."""
    payload = json.dumps(
        [stamp.model_dump(mode="json"), code, policy.model_dump(mode="json"), stub, trust, recheck],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def raw_cache_key(stamp: EnvironmentStamp, code: str, infotree: str | None) -> str:
    """Content hash of one compile-only check (``/verify``)."""
    payload = json.dumps(
        ["raw", stamp.model_dump(mode="json"), code, infotree], ensure_ascii=False, separators=(",", ":")
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ResultCache:
    """LRU (``settings.lean_cache_size``) plus Redis (``settings.lean_cache_ttl_s``)."""

    def __init__(self, settings: Settings, *, use_redis: bool = True) -> None:
        self.size = max(0, settings.lean_cache_size)
        self.ttl_s = settings.lean_cache_ttl_s
        self.prefix = f"{settings.redis_key_prefix}:lean:cert:"
        self.raw_prefix = f"{settings.redis_key_prefix}:lean:raw:"
        self._lru: OrderedDict[str, str] = OrderedDict()
        self._redis: aioredis.Redis | None = (
            aioredis.Redis.from_url(
                settings.redis_url,
                socket_connect_timeout=_REDIS_TIMEOUT_S,
                socket_timeout=_REDIS_TIMEOUT_S,
            )
            if use_redis and settings.redis_url
            else None
        )
        self._redis_down_until = 0.0
        self.hits = 0
        self.redis_hits = 0
        self.misses = 0
        self.redis_errors = 0

    async def aclose(self) -> None:
        if self._redis is not None:
            await self._redis.aclose()

    def _redis_usable(self) -> aioredis.Redis | None:
        if self._redis is None or time.monotonic() < self._redis_down_until:
            return None
        return self._redis

    def _redis_failed(self, exc: Exception) -> None:
        self.redis_errors += 1
        self._redis_down_until = time.monotonic() + _REDIS_RETRY_S
        log.warning("result cache: redis unavailable, LRU only", error=str(exc)[:200])

    async def get(self, key: str) -> Certificate | None:
        text = await self._get_text(self.prefix, key)
        return Certificate.model_validate_json(text) if text is not None else None

    async def put(self, key: str, cert: Certificate) -> bool:
        """Store a definitive certificate; returns whether it was cacheable."""
        if cert.verdict in UNCACHEABLE:
            return False
        await self._put_text(self.prefix, key, cert.model_dump_json())
        return True

    async def get_raw(self, key: str) -> dict[str, Any] | None:
        """A stored REPL response (``/verify``), None on a miss."""
        text = await self._get_text(self.raw_prefix, key)
        if text is None:
            return None
        data = json.loads(text)
        return data if isinstance(data, dict) else None

    async def put_raw(self, key: str, response: dict[str, Any]) -> None:
        """Store a REPL response (``/verify``; only successful compiles are ever passed here)."""
        await self._put_text(self.raw_prefix, key, json.dumps(response, ensure_ascii=False))

    async def _get_text(self, prefix: str, key: str) -> str | None:
        local = prefix + key
        text = self._lru.get(local)
        if text is not None:
            self._lru.move_to_end(local)
            self.hits += 1
            return text
        client = self._redis_usable()
        if client is not None:
            try:
                raw = await client.get(local)
            except (RedisError, OSError) as exc:
                self._redis_failed(exc)
                raw = None
            if raw is not None:
                text = raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
                self._remember(local, text)
                self.hits += 1
                self.redis_hits += 1
                return text
        self.misses += 1
        return None

    async def _put_text(self, prefix: str, key: str, text: str) -> None:
        local = prefix + key
        self._remember(local, text)
        client = self._redis_usable()
        if client is not None:
            try:
                await client.set(local, text, ex=self.ttl_s)
            except (RedisError, OSError) as exc:
                self._redis_failed(exc)

    def _remember(self, key: str, text: str) -> None:
        if not self.size:
            return
        self._lru[key] = text
        self._lru.move_to_end(key)
        while len(self._lru) > self.size:
            self._lru.popitem(last=False)

    def clear_local(self) -> None:
        self._lru.clear()
