"""Prometheus metrics of one lean-server app, in a registry of its own (never the global one).

Two kinds of metric:

- observed by the HTTP layer as answers go out: check latency, verdicts, cache hits, requests
  by route and status;
- read from the pool at scrape time (:class:`_PoolCollector` calls ``service.stats()``): wait-queue
  depth, processes busy/idle per header, import seconds, RSS per process, kills by reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric, SummaryMetricFamily
from prometheus_client.registry import Collector

from lean_server.verdict import Certificate

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
_IMPORT_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

StatsSource = Callable[[], Any]
_PROCESS_STATES = frozenset({"busy", "idle", "starting"})


def as_mapping(value: Any) -> dict[str, Any]:
    """A plain dict from a dict, a pydantic model or a dataclass (the pool's stats/health)."""
    if isinstance(value, Mapping):
        return dict(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        result = dump()
        return dict(result) if isinstance(result, Mapping) else {}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return {}


class LeanMetrics:
    """The metrics of one app; ``render()`` gives the exposition text."""

    def __init__(self, stats_source: StatsSource | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.check_seconds = Histogram(
            "sorryless_lean_check_seconds",
            "Server-side seconds per checked snippet (wait + import + check), by route.",
            ["route"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.verdicts = Counter(
            "sorryless_lean_verdicts", "Certificates sent, by verdict.", ["verdict"], registry=self.registry
        )
        self.cache_hits = Counter(
            "sorryless_lean_cache_hits",
            "Certificates answered from the result cache.",
            registry=self.registry,
        )
        self.requests = Counter(
            "sorryless_lean_http_requests",
            "HTTP requests answered, by route and status.",
            ["route", "status"],
            registry=self.registry,
        )
        self.compat_errors = Counter(
            "sorryless_lean_compat_errors",
            "Kimina-route snippets answered with an `error` because the service raised.",
            registry=self.registry,
        )
        self._raw_seconds = self.check_seconds.labels("kimina")
        self._v1_seconds = self.check_seconds.labels("v1")
        if stats_source is not None:
            self.registry.register(_PoolCollector(stats_source))

    def observe_raw(self, seconds: float) -> None:
        self._raw_seconds.observe(seconds)

    def observe_certificate(self, cert: Certificate) -> None:
        self.verdicts.labels(cert.verdict.value).inc()
        if cert.cached:
            self.cache_hits.inc()
        total = cert.timings.get("total")
        if total is None:
            total = sum(cert.timings.values())
        self._v1_seconds.observe(total)

    def request_done(self, route: str, status: int) -> None:
        self.requests.labels(route, str(status)).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _PoolCollector(Collector):
    """Reads the pool's stats at scrape time and exposes them as gauges and counters."""

    def __init__(self, stats_source: StatsSource) -> None:
        self._stats_source = stats_source

    def describe(self) -> Iterable[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        try:
            stats = as_mapping(self._stats_source())
        except Exception:  # a scrape must never fail because the pool is shutting down
            stats = {}
        yield from _pool_metrics(stats)


def _number(value: Any, default: float = 0.0) -> float:
    if isinstance(value, bool):
        return float(value)
    return float(value) if isinstance(value, int | float) else default


def _pool_metrics(stats: Mapping[str, Any]) -> Iterator[Metric]:
    depth = GaugeMetricFamily("sorryless_lean_wait_queue_depth", "Checks waiting for a REPL process.")
    depth.add_metric([], _number(stats.get("waiting")))
    yield depth
    by_priority = stats.get("waiting_by_priority")
    if isinstance(by_priority, Mapping):
        per_priority = GaugeMetricFamily(
            "sorryless_lean_wait_queue_depth_by_priority", "Checks waiting, by priority.", labels=["priority"]
        )
        for priority, count in by_priority.items():
            per_priority.add_metric([str(priority)], _number(count))
        yield per_priority

    processes = GaugeMetricFamily(
        "sorryless_lean_processes", "REPL processes by import header and state.", labels=["header", "state"]
    )
    for header, states in _per_header(stats).items():
        for state, count in states.items():
            processes.add_metric([header, state], count)
    yield processes

    imports = SummaryMetricFamily(
        "sorryless_lean_import_seconds",
        "Seconds spent importing a header into a REPL process.",
        count_value=int(_number(stats.get("imports"))),
        sum_value=_number(stats.get("import_seconds_total")),
    )
    yield imports
    recent = [x for x in stats.get("import_seconds") or [] if isinstance(x, int | float)]
    if recent:
        last = GaugeMetricFamily("sorryless_lean_import_seconds_last", "Seconds of the latest header import.")
        last.add_metric([], float(recent[-1]))
        yield last

    rss = GaugeMetricFamily(
        "sorryless_lean_process_rss_bytes", "Resident memory of each REPL process.", labels=["pid", "header"]
    )
    for proc in _processes(stats):
        rss_bytes = proc.get("rss_bytes")
        if rss_bytes is None and proc.get("rss_mb") is not None:
            rss_bytes = _number(proc.get("rss_mb")) * 1024 * 1024
        rss.add_metric([str(proc.get("pid", "")), str(proc.get("header", ""))], _number(rss_bytes))
    yield rss

    kills = CounterMetricFamily(
        "sorryless_lean_process_kills", "REPL processes ended, by reason.", labels=["reason"]
    )
    kill_counts = stats.get("kills") or {}
    if isinstance(kill_counts, Mapping):
        for reason, count in kill_counts.items():
            kills.add_metric([str(reason)], _number(count))
    yield kills

    for key, help_text in (
        ("cache_hits", "Pool result-cache hits."),
        ("cache_misses", "Pool result-cache misses."),
        ("checks", "Compilations the pool finished."),
    ):
        if key in stats:
            counter = CounterMetricFamily(f"sorryless_lean_pool_{key}", help_text)
            counter.add_metric([], _number(stats[key]))
            yield counter


def _processes(stats: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    procs = stats.get("processes") or stats.get("procs") or []
    if isinstance(procs, Mapping):
        procs = list(procs.values())
    return [as_mapping(p) for p in procs if as_mapping(p)] if isinstance(procs, list) else []


def _per_header(stats: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """``{header: {state: count}}`` from per-process entries or a ready-made per-header table."""
    table = stats.get("per_header") or stats.get("headers")
    result: dict[str, dict[str, float]] = {}
    if isinstance(table, Mapping):
        for header, states in table.items():
            states_map = as_mapping(states)
            result[str(header)] = {str(k): _number(v) for k, v in states_map.items() if k in _PROCESS_STATES}
        return result
    for proc in _processes(stats):
        header = str(proc.get("header", ""))
        state = str(proc.get("state", "busy" if proc.get("busy") else "idle"))
        per = result.setdefault(header, {"busy": 0.0, "idle": 0.0})
        per[state] = per.get(state, 0.0) + 1.0
    return result
