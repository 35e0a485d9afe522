"""Prometheus metrics of the gateway, in a registry of its own (one per app).

Cross-process numbers live in Redis and are read when ``/metrics`` is scraped: queue depth and
oldest-job age per queue (saq lists), live workers (saq worker heartbeats), jobs finished by
status and end-to-end latency histograms per kind (written by workers in the result script).
In-process: submit latency and submitted-job counter of this gateway process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass, field
from typing import cast

import redis.asyncio as aioredis
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from api.keyspace import QUEUE_NAMES, Keyspace
from api.queue import JobQueue, QueueDepth
from api.store import LATENCY_BUCKETS_S, STALE_WRITES_FIELD

SUBMIT_BUCKETS_S = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0)


@dataclass
class _Snapshot:
    depths: dict[str, QueueDepth] = field(default_factory=dict)
    workers: dict[str, dict[str, dict[str, object]]] = field(default_factory=dict)
    stats: dict[str, str] = field(default_factory=dict)
    latency: dict[str, dict[str, str]] = field(default_factory=dict)


class _SnapshotCollector(Collector):
    def __init__(self) -> None:
        self.snapshot = _Snapshot()

    def collect(self) -> Iterator[Metric]:
        snap = self.snapshot
        depth = GaugeMetricFamily("sorryless_queue_depth", "Jobs waiting in the queue.", labels=["queue"])
        active = GaugeMetricFamily("sorryless_queue_active", "Jobs being run.", labels=["queue"])
        scheduled = GaugeMetricFamily(
            "sorryless_queue_scheduled", "Jobs waiting for a retry.", labels=["queue"]
        )
        oldest = GaugeMetricFamily(
            "sorryless_queue_oldest_age_seconds", "Age of the oldest waiting job.", labels=["queue"]
        )
        workers = GaugeMetricFamily("sorryless_workers", "Workers with a live heartbeat.", labels=["queue"])
        uptime = GaugeMetricFamily(
            "sorryless_worker_uptime_seconds",
            "Uptime reported by each worker heartbeat.",
            labels=["queue", "worker"],
        )
        for name, d in snap.depths.items():
            depth.add_metric([name], d.queued)
            active.add_metric([name], d.active)
            scheduled.add_metric([name], d.scheduled)
            oldest.add_metric([name], d.oldest_age_s or 0.0)
        for name, by_id in snap.workers.items():
            workers.add_metric([name], len(by_id))
            for wid, info in by_id.items():
                stats = info.get("stats")
                up = stats.get("uptime", 0) if isinstance(stats, dict) else 0
                uptime.add_metric([name, wid], float(up) / 1000)
        yield from (depth, active, scheduled, oldest, workers, uptime)
        jobs = CounterMetricFamily(
            "sorryless_jobs",
            "Jobs by outcome (submitted, succeeded, failed, cancelled, dead_lettered).",
            labels=["status"],
        )
        refused = CounterMetricFamily(
            "sorryless_stale_writes_refused",
            "Writes of a stale delivery refused by the job record (a result after the job ended, "
            "a requeue of a job another worker runs).",
        )
        for status, count in sorted(snap.stats.items()):
            if status == STALE_WRITES_FIELD:
                refused.add_metric([], float(count))
            else:
                jobs.add_metric([status], float(count))
        yield jobs
        yield refused
        latency = HistogramMetricFamily(
            "sorryless_job_latency_seconds", "Submit-to-result seconds of succeeded jobs.", labels=["kind"]
        )
        for kind, raw in sorted(snap.latency.items()):
            cumulative = 0.0
            buckets: list[tuple[str, float]] = []
            for bound in LATENCY_BUCKETS_S:
                cumulative += float(raw.get(repr(float(bound)), 0))
                buckets.append((repr(float(bound)), cumulative))
            cumulative += float(raw.get("+Inf", 0))
            buckets.append(("+Inf", cumulative))
            latency.add_metric([kind], buckets, float(raw.get("sum", 0)))
        yield latency


class ApiMetrics:
    """The app's registry and the metrics the gateway records itself."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.submit_seconds = Histogram(
            "sorryless_submit_seconds",
            "Time to accept a submission.",
            buckets=SUBMIT_BUCKETS_S,
            registry=self.registry,
        )
        self.requests_rejected = Counter(
            "sorryless_submit_rejected", "Submissions refused, by reason.", ["reason"], registry=self.registry
        )
        self._collector = _SnapshotCollector()
        self.registry.register(self._collector)

    async def refresh(self, redis: aioredis.Redis, keys: Keyspace, queue: JobQueue) -> None:
        snap = _Snapshot()
        depths = await asyncio.gather(*(queue.depth(name) for name in QUEUE_NAMES))
        snap.depths = dict(zip(QUEUE_NAMES, depths, strict=True))
        workers = await asyncio.gather(*(queue.workers(name) for name in QUEUE_NAMES))
        snap.workers = dict(zip(QUEUE_NAMES, workers, strict=True))
        snap.stats = await cast(Awaitable[dict[str, str]], redis.hgetall(keys.stats))
        kinds = await cast(Awaitable[set[str]], redis.smembers(keys.latency_kinds))
        for kind in kinds:
            snap.latency[kind] = await cast(Awaitable[dict[str, str]], redis.hgetall(keys.latency(kind)))
        self._collector.snapshot = snap

    def render(self) -> bytes:
        return generate_latest(self.registry)
