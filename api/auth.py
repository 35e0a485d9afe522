"""API keys, the admin key, and per-key limits.

Keys are ``sl_<id>_<secret>`` with a random 32-byte secret; Redis stores only the sha256 of the
whole key (lookup ``apikey-hash:<sha256>`` -> key id) and the key's record (name, limits,
revoked). The admin key is ``settings.admin_key`` (compared in constant time); it manages keys
and sees every job. Anonymous callers are allowed only while ``settings.auth_required`` is false.

Limits per key: a token bucket (rate, burst) checked on every /v1 request by one Lua script;
unfinished jobs, jobs per UTC day and prover attempts per UTC day (each prove job is charged its
``budget.max_attempts`` when accepted; nothing is refunded) are checked by the submit script
(:mod:`api.queue`).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import cast

import redis.asyncio as aioredis

from api.errors import ApiError, too_many
from api.keyspace import Keyspace
from api.queue import SubmitLimits
from api.schemas import KeyLimits, KeyView
from sorryless.config import Settings

ANONYMOUS = "anonymous"
ADMIN = "admin"

# KEYS: bucket. ARGV: rate per s, burst, now (s), cost. Returns {allowed, retry_after_ms}.
_TOKEN_BUCKET = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local allowed = 0
local wait_ms = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
else
  wait_ms = math.ceil((cost - tokens) / rate * 1000)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return {allowed, wait_ms}
"""


@dataclass(frozen=True)
class Principal:
    """Who is calling: an owner name for scoping jobs, admin or not, and limits."""

    owner: str
    key_id: str | None
    is_admin: bool
    rate_per_s: float
    burst: int
    limits: SubmitLimits


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class ApiKeys:
    """Create, revoke, list and look up API keys."""

    def __init__(self, redis: aioredis.Redis, keys: Keyspace, settings: Settings) -> None:
        self._redis = redis
        self._keys = keys
        self._settings = settings
        self._bucket = redis.register_script(_TOKEN_BUCKET)

    def _view(self, raw: dict[str, str]) -> KeyView:
        return KeyView(
            id=raw["id"],
            name=raw["name"],
            created_at=float(raw["created_at"]),
            revoked=raw.get("revoked") == "1",
            rate_per_s=float(raw["rate_per_s"]),
            burst=int(raw["burst"]),
            max_active_jobs=int(raw["max_active_jobs"]),
            daily_jobs=int(raw["daily_jobs"]),
            daily_attempts=int(raw.get("daily_attempts") or self._settings.api_key_daily_attempts),
        )

    async def create(self, name: str, limits: KeyLimits) -> tuple[KeyView, str]:
        s = self._settings
        key_id = secrets.token_hex(8)
        token = f"sl_{key_id}_{secrets.token_urlsafe(32)}"
        record = {
            "id": key_id,
            "name": name,
            "created_at": repr(time.time()),
            "revoked": "0",
            "hash": hash_token(token),
            "rate_per_s": repr(limits.rate_per_s if limits.rate_per_s is not None else s.api_key_rate_per_s),
            "burst": str(limits.burst if limits.burst is not None else s.api_key_burst),
            "max_active_jobs": str(
                limits.max_active_jobs if limits.max_active_jobs is not None else s.api_key_max_active_jobs
            ),
            "daily_jobs": str(limits.daily_jobs if limits.daily_jobs is not None else s.api_key_daily_jobs),
            "daily_attempts": str(
                limits.daily_attempts if limits.daily_attempts is not None else s.api_key_daily_attempts
            ),
        }
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(self._keys.api_key(key_id), mapping=record)
            pipe.set(self._keys.api_key_by_hash(record["hash"]), key_id)
            pipe.zadd(self._keys.api_keys, {key_id: time.time()})
            await pipe.execute()
        return self._view(record), token

    async def get(self, key_id: str) -> KeyView | None:
        raw = await cast(Awaitable[dict[str, str]], self._redis.hgetall(self._keys.api_key(key_id)))
        return self._view(raw) if raw else None

    async def list(self) -> list[KeyView]:
        ids = await self._redis.zrange(self._keys.api_keys, 0, -1)
        views = [await self.get(key_id) for key_id in ids]
        return [v for v in views if v is not None]

    async def revoke(self, key_id: str) -> KeyView | None:
        """Mark revoked and drop the hash lookup, so the key stops working at once."""
        raw = await cast(Awaitable[dict[str, str]], self._redis.hgetall(self._keys.api_key(key_id)))
        if not raw:
            return None
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(self._keys.api_key(key_id), "revoked", "1")
            pipe.delete(self._keys.api_key_by_hash(raw["hash"]))
            await pipe.execute()
        raw["revoked"] = "1"
        return self._view(raw)

    async def authenticate(self, token: str | None) -> Principal:
        """The caller for a presented key (or none); raises 401 on a bad or missing key."""
        s = self._settings
        if token is None:
            if s.auth_required:
                raise ApiError(
                    401,
                    "unauthenticated",
                    "an API key is required (Authorization: Bearer <key>)",
                    headers={"WWW-Authenticate": "Bearer"},
                )
            return Principal(ANONYMOUS, None, False, 0.0, 1, SubmitLimits())
        if s.admin_key and hmac.compare_digest(token.encode("utf-8"), s.admin_key.encode("utf-8")):
            return Principal(ADMIN, None, True, 0.0, 1, SubmitLimits())
        key_id = await self._redis.get(self._keys.api_key_by_hash(hash_token(token)))
        view = await self.get(key_id) if key_id else None
        if view is None or view.revoked:
            raise ApiError(
                401, "invalid_key", "unknown or revoked API key", headers={"WWW-Authenticate": "Bearer"}
            )
        return Principal(
            owner=f"key-{view.id}",
            key_id=view.id,
            is_admin=False,
            rate_per_s=view.rate_per_s,
            burst=view.burst,
            limits=SubmitLimits(
                max_active_jobs=view.max_active_jobs,
                daily_jobs=view.daily_jobs,
                daily_attempts=view.daily_attempts,
            ),
        )

    async def take_token(self, principal: Principal) -> None:
        """Spend one request from the principal's bucket; 429 with Retry-After when empty."""
        if principal.rate_per_s <= 0:
            return
        allowed, wait_ms = await self._bucket(
            keys=[self._keys.bucket(principal.owner)],
            args=[principal.rate_per_s, principal.burst, repr(time.time()), 1],
        )
        if not int(allowed):
            raise too_many(
                "rate_limited",
                "request rate limit exceeded",
                int(wait_ms) / 1000,
                detail={"rate_per_s": principal.rate_per_s, "burst": principal.burst},
            )
