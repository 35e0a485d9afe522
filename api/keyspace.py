"""Every Redis key the API writes, in one place, all under ``settings.redis_key_prefix``."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

QUEUE_NAMES: tuple[str, ...] = ("interactive", "batch")


@dataclass(frozen=True)
class Keyspace:
    """Names of the API's Redis keys for one prefix."""

    prefix: str

    def job(self, job_id: str) -> str:
        return f"{self.prefix}:job:{job_id}"

    def events(self, job_id: str) -> str:
        return f"{self.prefix}:events:{job_id}"

    @property
    def jobs_index(self) -> str:
        return f"{self.prefix}:jobs"

    def owner_index(self, owner: str) -> str:
        return f"{self.prefix}:jobs:owner:{owner}"

    def batch(self, batch_id: str) -> str:
        return f"{self.prefix}:batch:{batch_id}"

    def batch_jobs(self, batch_id: str) -> str:
        return f"{self.prefix}:batch:{batch_id}:jobs"

    def idempotency(self, owner: str, scope: str, key: str) -> str:
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
        return f"{self.prefix}:idem:{owner}:{scope}:{digest}"

    def active(self, owner: str) -> str:
        return f"{self.prefix}:active:{owner}"

    def quota(self, owner: str, day: str) -> str:
        return f"{self.prefix}:quota:{owner}:{day}"

    def attempts_quota(self, owner: str, day: str) -> str:
        return f"{self.prefix}:quota-attempts:{owner}:{day}"

    def bucket(self, owner: str) -> str:
        return f"{self.prefix}:bucket:{owner}"

    @property
    def stats(self) -> str:
        return f"{self.prefix}:stats"

    def latency(self, kind: str) -> str:
        return f"{self.prefix}:latency:{kind}"

    @property
    def latency_kinds(self) -> str:
        return f"{self.prefix}:latency-kinds"

    @property
    def deadletter(self) -> str:
        return f"{self.prefix}:deadletter"

    def api_key(self, key_id: str) -> str:
        return f"{self.prefix}:apikey:{key_id}"

    def api_key_by_hash(self, token_hash: str) -> str:
        return f"{self.prefix}:apikey-hash:{token_hash}"

    @property
    def api_keys(self) -> str:
        return f"{self.prefix}:apikeys"

    @property
    def unused(self) -> str:
        """A key never written: fills a Lua script's KEYS slot that a call does not use."""
        return f"{self.prefix}:unused"

    def queue_name(self, queue: str) -> str:
        """Name of the saq queue (saq namespaces its own keys with it)."""
        return f"{self.prefix}:{queue}"
