"""Per-job event log: one Redis Stream per job (XADD with MAXLEN, expiring with the job).

Entries carry ``type`` (queued, started, progress, retrying, succeeded, failed, cancelled)
and ``data`` (JSON). The SSE endpoint replays a stream from a client's ``Last-Event-ID``; the
stream entry id is the SSE id. Terminal entries are written by :class:`api.store.JobStore`
in the same script as the result, so "terminal event last" holds by construction.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis

from api.keyspace import Keyspace

TERMINAL_EVENTS: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
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

    def __init__(self, redis: aioredis.Redis, keys: Keyspace, *, maxlen: int, ttl_s: int) -> None:
        self._redis = redis
        self._keys = keys
        self._maxlen = maxlen
        self._ttl_s = ttl_s

    async def emit(self, job_id: str, event_type: str, data: dict[str, Any] | None = None) -> str:
        """Append one event; returns its stream id."""
        stream = self._keys.events(job_id)
        payload = json.dumps(data or {}, separators=(",", ":"), default=str)
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.xadd(stream, {"type": event_type, "data": payload}, maxlen=self._maxlen, approximate=True)
            pipe.expire(stream, self._ttl_s)
            entry_id, _ = await pipe.execute()
        return str(entry_id)

    async def read(
        self, job_id: str, *, after: str, block_ms: int | None = None, count: int = 100
    ) -> list[JobEvent]:
        """Events with ids greater than ``after`` (blocking up to ``block_ms`` when none yet)."""
        stream = self._keys.events(job_id)
        answer = await self._redis.xread({stream: after}, count=count, block=block_ms)
        events: list[JobEvent] = []
        for _, entries in answer or []:
            for entry_id, fields in entries:
                events.append(
                    JobEvent(
                        id=str(entry_id),
                        type=fields.get("type", ""),
                        data=json.loads(fields.get("data") or "{}"),
                    )
                )
        return events

    async def history(self, job_id: str, count: int = 10_000) -> list[JobEvent]:
        entries = await self._redis.xrange(self._keys.events(job_id), count=count)
        return [
            JobEvent(id=str(i), type=f.get("type", ""), data=json.loads(f.get("data") or "{}"))
            for i, f in entries
        ]
