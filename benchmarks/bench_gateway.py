"""Gateway benchmark: accepted jobs/s, end-to-end jobs/s with 1, 2 and 4 workers, and submit
latency (p50/p99) at a fixed 200 requests/s.

It uses an instant ``echo`` job kind that exists only here (added to the registry at runtime in
the gateway and worker processes this script starts), the real Redis (SORRYLESS_REDIS_URL or
127.0.0.1:6379) under a throw-away key prefix, one uvicorn gateway process and N worker
processes. Targets: >= 500 accepted jobs/s and p99 submit <= 20 ms on a 2-core machine.

    .venv/bin/python benchmarks/bench_gateway.py [--jobs 3000] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, cast

import httpx
import redis
from pydantic import BaseModel, ConfigDict

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from api.kinds import JobKind, KindContext, KindOutcome, load_kinds  # noqa: E402
from sorryless.config import Settings  # noqa: E402


class EchoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = ""


async def _echo(params: EchoParams, ctx: KindContext) -> KindOutcome:
    return KindOutcome(result={"text": params.text})


def bench_kinds() -> dict[str, JobKind]:
    return {**load_kinds(), "echo": JobKind("echo", EchoParams, _echo, "benchmark only: returns its input")}


def _settings(prefix: str) -> Settings:
    return Settings(redis_key_prefix=prefix, job_result_ttl_s=900, log_level="WARNING", _env_file=None)


# ---- child processes -------------------------------------------------------------------------
def serve(prefix: str, port: int) -> None:
    import uvicorn

    from api.app import create_app

    app = create_app(_settings(prefix), kinds=bench_kinds())
    uvicorn.run(
        app, host="127.0.0.1", port=port, log_level="warning", access_log=False, timeout_keep_alive=120
    )


def work(prefix: str, concurrency: int) -> None:
    from api.worker import run_worker

    asyncio.run(
        run_worker(_settings(prefix), kinds=bench_kinds(), concurrency=concurrency, queues=("interactive",))
    )


# ---- driver -----------------------------------------------------------------------------------
def _spawn(*args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, __file__, *args], env=env, cwd=REPO)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


BODY = b'{"kind":"echo","params":{"text":"hello"}}'


class RawClient:
    """A minimal HTTP/1.1 keep-alive client (asyncio streams), so the load generator costs little
    CPU next to the gateway on a 2-core machine (httpx costs about 1 ms of CPU per request)."""

    def __init__(self, host: str, port: int) -> None:
        self._host = host
        self._port = port
        self._request = (
            f"POST /v1/jobs HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(BODY)}\r\n\r\n"
        ).encode() + BODY
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def submit(self) -> int:
        """POST one echo job; returns the HTTP status."""
        while self._idle:  # a kept-alive connection the server has closed is dropped
            reader, writer = self._idle.pop()
            writer.write(self._request)
            try:
                head = await reader.readuntil(b"\r\n\r\n")
                break
            except (asyncio.IncompleteReadError, ConnectionError):
                writer.close()
        else:
            reader, writer = await asyncio.open_connection(self._host, self._port)
            writer.write(self._request)
            head = await reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        for line in head.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        if length:
            await reader.readexactly(length)
        self._idle.append((reader, writer))
        return status

    async def aclose(self) -> None:
        for _, writer in self._idle:
            writer.close()
        self._idle.clear()


async def _submit_many(client: RawClient, total: int, concurrency: int) -> tuple[float, list[float]]:
    latencies: list[float] = []
    remaining = total

    async def one_client() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            started = time.perf_counter()
            status = await client.submit()
            latencies.append(time.perf_counter() - started)
            if status != 201:
                raise RuntimeError(f"submit answered {status}")

    started = time.perf_counter()
    await asyncio.gather(*(one_client() for _ in range(concurrency)))
    return time.perf_counter() - started, latencies


async def _fixed_rate(client: RawClient, rate: float, seconds: float) -> list[float]:
    latencies: list[float] = []

    async def one() -> None:
        started = time.perf_counter()
        status = await client.submit()
        latencies.append(time.perf_counter() - started)
        assert status == 201, status

    tasks = []
    start = time.perf_counter()
    for i in range(int(rate * seconds)):
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one()))
    await asyncio.gather(*tasks)
    return latencies


def _succeeded(r: redis.Redis, prefix: str) -> int:
    value = r.hget(f"{prefix}:stats", "succeeded")
    return int(cast(Any, value) or 0)


def _cleanup(r: redis.Redis, prefix: str) -> None:
    keys = list(r.scan_iter(match=f"*{prefix}*", count=5000))
    for i in range(0, len(keys), 1000):
        r.delete(*keys[i : i + 1000])


async def _wait_http(url: str) -> None:
    async with httpx.AsyncClient() as client:
        for _ in range(200):
            try:
                if (await client.get(f"{url}/openapi.json")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.05)
    raise RuntimeError("gateway did not start")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def drive(jobs: int, concurrency: int) -> dict[str, Any]:
    base_prefix = f"bench-{uuid.uuid4().hex[:8]}"
    r = redis.Redis.from_url(os.environ.get("SORRYLESS_REDIS_URL", "redis://127.0.0.1:6379/0"))
    results: dict[str, Any] = {}
    gc.collect()
    gc.freeze()  # the driver's own collector pauses must not show up as gateway latency
    procs: list[subprocess.Popen[bytes]] = []
    try:
        # 1. submit latency at a fixed 200 requests/s, one worker draining
        prefix = f"{base_prefix}-rate"
        port = _free_port()
        gateway = _spawn("--serve", prefix, str(port))
        procs += [gateway, _spawn("--work", prefix, "32")]
        await _wait_http(f"http://127.0.0.1:{port}")
        await asyncio.sleep(1.5)
        client = RawClient("127.0.0.1", port)
        await _submit_many(client, 100, 8)
        latencies = await _fixed_rate(client, 200.0, 10.0)
        await client.aclose()
        results["fixed_rate_requests"] = len(latencies)
        results["submit_p50_ms_at_200_rps"] = _pct(latencies, 0.5)
        results["submit_p99_ms_at_200_rps"] = _pct(latencies, 0.99)
        results["submit_mean_ms_at_200_rps"] = statistics.fmean(latencies) * 1000
        for proc in procs:
            proc.terminate()
            proc.wait(15)
        procs.clear()

        # 2. accepted jobs/s, no worker running
        prefix = f"{base_prefix}-accept"
        port = _free_port()
        procs.append(_spawn("--serve", prefix, str(port)))
        await _wait_http(f"http://127.0.0.1:{port}")
        client = RawClient("127.0.0.1", port)
        await _submit_many(client, 200, concurrency)  # warm-up
        elapsed, latencies = await _submit_many(client, jobs, concurrency)
        await client.aclose()
        results["accepted_jobs_per_s"] = jobs / elapsed
        results["accepted_p50_ms"] = _pct(latencies, 0.5)
        results["accepted_p99_ms"] = _pct(latencies, 0.99)
        procs.pop().terminate()

        # 3. end-to-end with 1, 2, 4 workers
        for n_workers in (1, 2, 4):
            prefix = f"{base_prefix}-e2e{n_workers}"
            port = _free_port()
            gateway = _spawn("--serve", prefix, str(port))
            workers = [_spawn("--work", prefix, "32") for _ in range(n_workers)]
            procs += [gateway, *workers]
            await _wait_http(f"http://127.0.0.1:{port}")
            await asyncio.sleep(1.5)  # workers connect
            client = RawClient("127.0.0.1", port)
            started = time.perf_counter()
            await _submit_many(client, jobs, concurrency)
            while _succeeded(r, prefix) < jobs:
                if time.perf_counter() - started > 300:
                    raise RuntimeError(f"only {_succeeded(r, prefix)} of {jobs} finished")
                await asyncio.sleep(0.02)
            results[f"end_to_end_jobs_per_s_{n_workers}_workers"] = jobs / (time.perf_counter() - started)
            await client.aclose()
            for proc in (gateway, *workers):
                proc.terminate()
                proc.wait(15)
                procs.remove(proc)

    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
        for suffix in ("accept", "e2e1", "e2e2", "e2e4", "rate"):
            _cleanup(r, f"{base_prefix}-{suffix}")
        r.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=3000, help="Jobs per throughput run.")
    parser.add_argument("--concurrency", type=int, default=32, help="Concurrent client connections.")
    parser.add_argument("--serve", nargs=2, metavar=("PREFIX", "PORT"), help=argparse.SUPPRESS)
    parser.add_argument("--work", nargs=2, metavar=("PREFIX", "CONCURRENCY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve[0], int(args.serve[1]))
        return
    if args.work:
        work(args.work[0], int(args.work[1]))
        return
    print(f"bench_gateway: {os.cpu_count()} cores, {args.jobs} jobs per run, {args.concurrency} connections")
    results = asyncio.run(drive(args.jobs, args.concurrency))
    width = max(len(k) for k in results)
    for name, value in results.items():
        print(f"  {name:<{width}}  {value:10.1f}")
    print("targets: accepted_jobs_per_s >= 500, submit_p99_ms_at_200_rps <= 20")


if __name__ == "__main__":
    main()
