#!/usr/bin/env python3
"""What ``sorryless lean-server`` adds on top of the REPL, measured with a fixed-service-time double.

Uses the yardstick's REPL double (``--double``: ``repl_double.py`` of the external Kimina
yardstick folder, see benchmarks/yardstick.py; ``REPL_DOUBLE_MS`` per command,
``REPL_DOUBLE_IMPORT_MS`` per header) for both the direct floor and the server's pool, and prints:

- added overhead per check, p50/p99: one snippet per request through ``/api/check`` (and the
  certificate route ``/v1/check``) minus a command sent straight to one double;
- throughput, REPL-process utilisation (ideal wall / wall) and failed items at 1x
  (``--repls`` requests of 8 in flight) and 10x oversubscription;
- the server process's CPU per snippet.

    .venv/bin/python benchmarks/bench_lean_server.py --double DIR/repl_double.py [--service-ms 5] [--repls 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
HEADER = "import Mathlib\n"


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[max(0, min(len(s) - 1, math.ceil(q / 100.0 * len(s)) - 1))] if s else float("nan")


def _cpu_s(pid: int) -> float:
    data = Path(f"/proc/{pid}/stat").read_text()
    fields = data[data.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _theorem(tag: str, i: int) -> str:
    return f"theorem b_{tag}_{i} : ({i} : Nat) + 0 = {i} := by rfl"


async def direct_latencies(double: Path, n: int, env: dict[str, str]) -> list[float]:
    """Round trips of ``{"cmd", "env": 0}`` sent straight to one double (after its header)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(double), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env
    )
    assert proc.stdin is not None and proc.stdout is not None

    async def ask(req: dict[str, Any]) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(req).encode() + b"\n\n")
        await proc.stdin.drain()
        return dict(json.loads(await proc.stdout.readuntil(b"\n\n")))

    await ask({"cmd": HEADER.strip()})
    tag = secrets.token_hex(4)
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        await ask({"cmd": _theorem(tag, i), "env": 0})
        out.append(time.perf_counter() - t0)
    proc.stdin.close()
    await proc.wait()
    return out


class ServerProcess:
    def __init__(self, double: Path, repls: int, env: dict[str, str]) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        server_env = dict(env)
        server_env.update(
            {
                "PYTHONPATH": str(REPO),
                "SORRYLESS_LEAN_REPL_CMD": shlex.join([sys.executable, str(double)]),
                "SORRYLESS_LEAN_MAX_PROCESSES": str(repls),
                "SORRYLESS_LEAN_MAX_USES": "1000000",  # no re-import mid-run (the double never grows)
                "SORRYLESS_LEAN_RECHECK_PASSING": "false",
                "SORRYLESS_LOG_LEVEL": "WARNING",
            }
        )
        launcher = "import sys; from lean_server.cli import lean_server_command as c; c(host='127.0.0.1', port=int(sys.argv[1]))"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", launcher, str(self.port)], cwd=REPO, env=server_env
        )

    async def ready(self, client: httpx.AsyncClient) -> None:
        for _ in range(600):
            try:
                if (await client.get(self.url + "/health")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
        raise RuntimeError("lean-server did not become healthy")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


async def sequential(client: httpx.AsyncClient, url: str, route: str, n: int, tag: str) -> list[float]:
    out = []
    for i in range(n):
        code = HEADER + _theorem(tag, i)
        if route == "/api/check":
            body: dict[str, Any] = {"snippets": [{"id": str(i), "code": code}], "timeout": 60}
        else:
            body = {"snippets": [{"id": str(i), "code": code, "recheck": False, "use_cache": False}]}
        t0 = time.perf_counter()
        r = await client.post(url + route, json=body)
        out.append(time.perf_counter() - t0)
        r.raise_for_status()
    return out


async def closed_loop(
    client: httpx.AsyncClient, url: str, snippets: int, batch: int, concurrency: int, tag: str
) -> dict[str, Any]:
    queue: asyncio.Queue[list[dict[str, str]]] = asyncio.Queue()
    for start in range(0, snippets, batch):
        queue.put_nowait(
            [
                {"id": str(i), "code": HEADER + _theorem(tag, i)}
                for i in range(start, min(snippets, start + batch))
            ]
        )
    failed = 0

    async def worker() -> None:
        nonlocal failed
        while not queue.empty():
            items = queue.get_nowait()
            try:
                r = await client.post(url + "/api/check", json={"snippets": items, "timeout": 60})
            except httpx.HTTPError:
                failed += len(items)
                continue
            if r.status_code != 200:
                failed += len(items)
                continue
            for res in r.json()["results"]:
                resp = res.get("response") or {}
                if res.get("error") or any(m.get("severity") == "error" for m in resp.get("messages", [])):
                    failed += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return {"wall_s": time.perf_counter() - t0, "failed": failed}


async def main_async(a: argparse.Namespace) -> None:
    env = dict(os.environ, REPL_DOUBLE_MS=str(a.service_ms), REPL_DOUBLE_IMPORT_MS=str(a.import_ms))
    direct = await direct_latencies(a.double, a.latency_n, env)
    server = ServerProcess(a.double, a.repls, env)
    tag = secrets.token_hex(4)
    limits = httpx.Limits(max_connections=20 * a.repls, max_keepalive_connections=20 * a.repls)
    report: dict[str, Any] = {"service_ms": a.service_ms, "repls": a.repls}
    try:
        async with httpx.AsyncClient(timeout=httpx.Timeout(600.0, connect=10.0), limits=limits) as client:
            await server.ready(client)
            warm = [{"id": f"w{i}", "code": HEADER + _theorem(tag + "w", i)} for i in range(2 * a.repls)]
            (await client.post(server.url + "/api/check", json={"snippets": warm})).raise_for_status()
            d50, d99 = _pct(direct, 50), _pct(direct, 99)
            report["direct_ms"] = {"p50": round(d50 * 1000, 3), "p99": round(d99 * 1000, 3)}
            for route in ("/api/check", "/v1/check"):
                lat = await sequential(client, server.url, route, a.latency_n, f"{tag}{route[1:3]}")
                p50, p99 = _pct(lat, 50), _pct(lat, 99)
                report[f"added_ms {route}"] = {
                    "p50": round((p50 - d50) * 1000, 3),
                    "p99": round((p99 - d99) * 1000, 3),
                    "request_p50_ms": round(p50 * 1000, 3),
                }
            for factor in (1, 10):
                cpu0 = _cpu_s(server.proc.pid)
                res = await closed_loop(
                    client, server.url, a.snippets, 8, factor * a.repls, f"{tag}x{factor}"
                )
                cpu = _cpu_s(server.proc.pid) - cpu0
                ideal = a.snippets * a.service_ms / 1000.0 / a.repls
                report[f"{factor}x"] = {
                    "throughput_per_s": round(a.snippets / res["wall_s"], 1),
                    "utilisation": round(ideal / res["wall_s"], 3),
                    "slot_overhead_ms_per_snippet": round(
                        (res["wall_s"] - ideal) / a.snippets * a.repls * 1000, 3
                    ),
                    "server_cpu_ms_per_snippet": round(cpu / a.snippets * 1000, 3),
                    "failed_items": res["failed"],
                }
    finally:
        server.stop()
    print(json.dumps(report, indent=2))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--double", type=Path, required=True, help="repl_double.py of the external yardstick folder"
    )
    p.add_argument("--service-ms", type=float, default=5.0)
    p.add_argument("--import-ms", type=float, default=200.0)
    p.add_argument("--repls", type=int, default=4)
    p.add_argument("--snippets", type=int, default=800)
    p.add_argument("--latency-n", type=int, default=100)
    args = p.parse_args()
    if not args.double.is_file():
        raise SystemExit(
            f"bench_lean_server: {args.double} not found (--double names the yardstick's repl_double.py)"
        )
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
