"""Per-job event log: one Redis Stream per job (XADD with MAXLEN, expiring with the job's record).

Entries carry ``type`` (queued, started, progress, retrying, succeeded, failed, cancelled)
and ``data`` (JSON). The SSE endpoint replays a stream from a client's ``Last-Event-ID``; the
stream entry id is the SSE id. Terminal entries are written by :class:`api.store.JobStore`
in the same script as the result, and :meth:`JobEvents.emit` refuses to append once the job's
record is terminal (a kind still running for a moment after a cancel), so the terminal event is
always the last one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis

from api.keyspace import Keyspace

TERMINAL_EVENTS: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})

# KEYS: record, events. ARGV: type, data json, maxlen. Returns the entry id, or false.
# No TTL here: the stream gets it with the job's result (api.store), so it never expires first.
_EMIT = """
local st = redis.call('HGET', KEYS[1], 'status')
if not st or st == 'succeeded' or st == 'failed' or st == 'cancelled' then return false end
return redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 'type', ARGV[1], 'data', ARGV[2])
"""
_STREAM_ID = re.compile(r"^\d{1,20}-\d{1,20}$")


def is_stream_id(value: str) -> bool:
    return bool(_STREAM_ID.match(value))


@dataclass(frozen=True)
class JobEvent:
    id: str
    type: str
    data: dict[str, Any]

    @property
    def terminal(self) -> bool:
        return self.type in TERMINAL_EVENTS


class JobEvents:
    """Append to and read from job event streams."""

    def __init__(self, redis: aioredis.Redis, keys: Keyspace, *, maxlen: int) -> None:
        self._redis = redis
        self._keys = keys
        self._maxlen = maxlen
        self._emit = redis.register_script(_EMIT)

    async def emit(self, job_id: str, event_type: str, data: dict[str, Any] | None = None) -> str | None:
        """Append one event while the job is unfinished; returns its stream id (None: not written)."""
        payload = json.dumps(data or {}, separators=(",", ":"), default=str)
        entry_id = await self._emit(
            keys=[self._keys.job(job_id), self._keys.events(job_id)],
            args=[event_type, payload, self._maxlen],
        )
        return str(entry_id) if entry_id else None

    async def read(
        self, job_id: str, *, after: str, block_ms: int | None = None, count: int = 100
    ) -> list[JobEvent]:
        """Events with ids greater than ``after`` (blocking up to ``block_ms`` when none yet)."""
        answer = await self._redis.xread({self._keys.events(job_id): after}, count=count, block=block_ms)
        return [_event(entry_id, fields) for _, entries in answer or [] for entry_id, fields in entries]

    async def history(self, job_id: str, count: int = 10_000) -> list[JobEvent]:
        entries = await self._redis.xrange(self._keys.events(job_id), count=count)
        return [_event(entry_id, fields) for entry_id, fields in entries]


def _event(entry_id: Any, fields: dict[str, str]) -> JobEvent:
    return JobEvent(
        id=str(entry_id), type=fields.get("type", ""), data=json.loads(fields.get("data") or "{}")
    )
