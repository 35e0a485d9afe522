"""`eval --api`: the same evaluation through the real gateway and an in-process worker (real Redis,
REPL double behind lean_server), checked against the log and the report."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path

import httpx
import pytest

from api.app import create_app
from api.worker import run_worker
from prover.eval.gateway import GatewayProver
from prover.eval.report import build_report
from prover.eval.run import EvalRun
from prover.eval.runlog import LOG_NAME, SampleLine, read_log
from prover.memory import ProofMemory
from sorryless.config import Settings
from tests.eval.helpers import minif2f_portfolio_job

SOLVABLE = "mathd_algebra_182"
IDS = [SOLVABLE, "amc12a_2019_p21"]


@pytest.mark.slow
async def test_eval_through_the_gateway(
    settings: Settings, benchmarks_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(
        json.dumps(
            [
                {"match": rf"theorem {SOLVABLE}\b[\s\S]*:= by\s+norm_num\s*(\n|$)"},
                {"match": ":= by", "messages": [{"severity": "error", "pos": {"line": 1, "column": 0},
                                                 "endPos": {"line": 1, "column": 5}, "data": "failed"}]},
            ]
        )
    )  # fmt: skip
    monkeypatch.setenv("FAKE_REPL_RULES", str(rules))
    out = tmp_path / "run"
    job = minif2f_portfolio_job(settings, benchmarks_dir, out, IDS, n=2, concurrency=2, api="http://api")
    app = create_app(settings)
    stop = asyncio.Event()
    async with app.router.lifespan_context(app):
        worker = asyncio.create_task(run_worker(settings, stop=stop))
        prover = GatewayProver("http://api", poll_s=0.05, transport=httpx.ASGITransport(app=app))
        try:
            progress = await asyncio.wait_for(EvalRun(job, prover).run(), 60)
        finally:
            await prover.aclose()
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(worker, 15)
    assert progress.errors == 0 and progress.done == 4
    samples = [x for x in read_log(out / LOG_NAME) if isinstance(x, SampleLine)]
    assert {(s.problem_id, s.solved) for s in samples} == {(SOLVABLE, True), ("amc12a_2019_p21", False)}
    for s in samples:
        assert s.cost.compile_calls >= 1  # the worker's cost came back through the job record
        if s.solved:
            assert s.certificate is not None and s.certificate.passed
            assert s.certificate.environment.backend == "repl"
    report = build_report(out)
    metrics = report.metrics
    assert metrics.pass_at[1] == pytest.approx(0.5)
    assert metrics.environment_seen.backends.get("repl", 0) >= 1
    # independent samples: the jobs were sent memory=false, so the worker recorded no proof
    assert ProofMemory.from_settings(settings).records == []
    assert report.memory.startswith("off: gateway prove jobs sent with memory=false")
    assert metrics.complete and metrics.complete_problems == 2
