"""GatewayProver: the prove job request it sends and how the job's answer becomes a ProofOutcome."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from lean_server.verdict import Verdict
from prover.eval.gateway import GatewayJobFailed, GatewayProver, idempotency_key
from prover.eval.report import build_report
from prover.eval.run import EvalJob, EvalRun
from prover.eval.runlog import LOG_NAME, SampleLine, finished_pairs, read_log
from prover.types import Budget, ProofTask
from tests.eval.helpers import certificate, make_job, make_problem

STUB = "import Mathlib\n\ntheorem t : 1 + 1 = 2 := by sorry\n"
PROOF = STUB.replace("sorry", "norm_num")


class FakeGateway:
    """Accepts one prove job, reports it running once, then finished with `final`."""

    def __init__(self, final: dict[str, Any], *, throttle_first: bool = False) -> None:
        self.final = final
        self.posted: list[dict[str, Any]] = []
        self.polls = 0
        self.throttle = throttle_first
        self.auth: list[str | None] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.auth.append(request.headers.get("authorization"))
        if request.method == "POST" and request.url.path == "/v1/jobs":
            if self.throttle:
                self.throttle = False
                return httpx.Response(429, headers={"Retry-After": "0"})
            self.posted.append(json.loads(request.content))
            return httpx.Response(
                202,
                json={
                    "id": "job1",
                    "status": "queued",
                    "location": "/v1/jobs/job1",
                    "events": "/v1/jobs/job1/events",
                },
            )
        if request.method == "GET" and request.url.path == "/v1/jobs/job1":
            self.polls += 1
            if self.polls == 1:
                return httpx.Response(200, json={"id": "job1", "status": "running"})
            return httpx.Response(200, json={"id": "job1", **self.final})
        return httpx.Response(404)


def _succeeded() -> dict[str, Any]:
    cert = certificate(PROOF, Verdict.PASS).model_dump(mode="json")
    return {
        "status": "succeeded",
        "result": {"solved": True, "solved_count": 1, "proofs": [
            {"task_id": "job1", "solved": True, "proof": PROOF, "stopped": "solved", "strategy": "portfolio",
             "model": None, "attempts": 3, "error": None, "certificate": cert}]},
        "certificate": cert,
        "cost": {"samples": 1, "attempts": 3, "compile_calls": 3, "prompt_tokens": 0},
    }  # fmt: skip


async def test_prove_through_the_gateway() -> None:
    gateway = FakeGateway(_succeeded(), throttle_first=True)
    prover = GatewayProver("http://gw", api_key="k1", poll_s=0.0, transport=httpx.MockTransport(gateway))
    task = ProofTask(id="p1", statement=STUB, informal="one plus one", benchmark="minif2f", split="valid")
    try:
        outcome = await prover.prove(
            task, strategy="portfolio", budget=Budget(max_attempts=5), profile=None, on_event=None
        )
    finally:
        await prover.aclose()
    (body,) = gateway.posted
    assert body["kind"] == "prove" and body["queue"] == "batch"
    assert body["params"] == {
        "statement": STUB,
        "informal": "one plus one",
        "strategy": "portfolio",
        "budget": Budget(max_attempts=5).model_dump(mode="json"),
        "memory": False,  # independent samples unless --memory
    }
    assert gateway.auth[0] == "Bearer k1"
    assert outcome.solved and outcome.proof == PROOF
    assert outcome.certificate is not None and outcome.certificate.passed
    assert outcome.cost.compile_calls == 3 and outcome.task_id == "p1"


async def test_a_failed_job_raises_so_the_sample_is_retried() -> None:
    gateway = FakeGateway({"status": "failed", "error": {"code": "infra"}})
    prover = GatewayProver("http://gw", poll_s=0.0, transport=httpx.MockTransport(gateway))
    try:
        with pytest.raises(GatewayJobFailed, match="failed"):
            await prover.prove(
                ProofTask(id="p", statement=STUB), strategy=None, budget=Budget(), profile=None, on_event=None
            )
    finally:
        await prover.aclose()


@pytest.mark.parametrize("verdict", [Verdict.SORRY, None])
async def test_a_solved_claim_without_a_pass_certificate_is_not_a_success(verdict: Verdict | None) -> None:
    final = _succeeded()
    cert = certificate(PROOF, verdict).model_dump(mode="json") if verdict is not None else None
    final["result"]["proofs"][0]["certificate"] = cert
    final["certificate"] = cert
    gateway = FakeGateway(final)
    prover = GatewayProver("http://gw", poll_s=0.0, transport=httpx.MockTransport(gateway))
    try:
        outcome = await prover.prove(
            ProofTask(id="p", statement=STUB), strategy=None, budget=Budget(), profile=None, on_event=None
        )
    finally:
        await prover.aclose()
    assert not outcome.solved and outcome.proof is None and outcome.certificate is None
    assert outcome.stopped == "error" and "PASS certificate" in (outcome.error or "")


class KeyedGateway:
    """Honours Idempotency-Key like the real gateway (201 new job, 200 the key's job); each new job
    ends with the next of `finals`; `lose_first_answer`: the first POST is accepted, its answer lost."""

    def __init__(self, finals: list[dict[str, Any]], *, lose_first_answer: bool = False) -> None:
        self.finals = finals
        self.jobs: dict[str, dict[str, Any]] = {}
        self.by_key: dict[str, str] = {}
        self.keys: list[str | None] = []
        self.bodies: list[dict[str, Any]] = []
        self.lose = lose_first_answer

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.url.path == "/v1/jobs":
            key = request.headers.get("idempotency-key")
            self.keys.append(key)
            self.bodies.append(json.loads(request.content))
            if key is not None and key in self.by_key:
                return httpx.Response(200, json={"id": self.by_key[key], "status": "queued"})
            job_id = f"job{len(self.jobs)}"
            self.jobs[job_id] = {"id": job_id, **self.finals[len(self.jobs)]}
            if key is not None:
                self.by_key[key] = job_id
            if self.lose:
                self.lose = False
                raise httpx.ReadTimeout("answer lost", request=request)
            return httpx.Response(201, json={"id": job_id, "status": "queued"})
        if request.method == "GET" and request.url.path.startswith("/v1/jobs/"):
            return httpx.Response(200, json=self.jobs[request.url.path.rsplit("/", 1)[1]])
        return httpx.Response(404)


def _failed(code: str) -> dict[str, Any]:
    return {
        "status": "failed",
        "error": {"code": code, "message": f"{code} happened"},
        "cost": {"attempts": 4},
    }


def _gateway_job(tmp_path: Path, n: int = 1) -> EvalJob:
    job = make_job(tmp_path, [make_problem("p0", ["x"])], n=n, ks=[1], concurrency=1)
    job.config.api = "http://gw"
    return job


async def _run(job: EvalJob, gateway: KeyedGateway, *, memory: bool = False) -> EvalRun:
    prover = GatewayProver("http://gw", poll_s=0.0, memory=memory, transport=httpx.MockTransport(gateway))
    run = EvalRun(job, prover)
    try:
        await run.run()
    finally:
        await prover.aclose()
    return run


async def test_a_resumed_sample_reattaches_to_the_job_its_lost_post_created(tmp_path: Path) -> None:
    gateway = KeyedGateway([_succeeded()], lose_first_answer=True)
    job = _gateway_job(tmp_path)
    first = await _run(job, gateway)
    (failed,) = [x for x in read_log(tmp_path / LOG_NAME) if isinstance(x, SampleLine)]
    assert failed.infra_error and "ReadTimeout" in (failed.error or "")
    second = await _run(job, gateway)
    assert second.run_id == first.run_id
    # one job only: the resume sent the same key and got the job the lost POST had created
    assert len(gateway.jobs) == 1
    assert gateway.keys == [f"{first.run_id}:p0:0:0"] * 2
    assert gateway.bodies[0] == gateway.bodies[1]
    assert finished_pairs(tmp_path / LOG_NAME) == {("p0", 0)}
    assert build_report(tmp_path).metrics.solved == 1


async def test_a_job_that_failed_on_infrastructure_is_submitted_anew_on_resume(tmp_path: Path) -> None:
    gateway = KeyedGateway([_failed("infra_error"), _succeeded()])
    job = _gateway_job(tmp_path)
    run = await _run(job, gateway)
    assert finished_pairs(tmp_path / LOG_NAME) == set()  # infrastructure: run again on resume
    await _run(job, gateway)
    key = f"{run.run_id}:p0:0"
    # the resume re-attaches to submission 0, finds it spent, and submits number 1
    assert gateway.keys == [f"{key}:0", f"{key}:0", f"{key}:1"]
    assert len(gateway.jobs) == 2 and finished_pairs(tmp_path / LOG_NAME) == {("p0", 0)}
    third = KeyedGateway([])
    third.jobs, third.by_key = gateway.jobs, gateway.by_key
    await _run(job, third)
    assert third.keys == []  # nothing left to do


@pytest.mark.parametrize(("code", "stopped"), [("timeout", "deadline"), ("no_targets", "error")])
async def test_jobs_that_fail_on_their_own_terms_are_unsolved_samples(
    tmp_path: Path, code: str, stopped: str
) -> None:
    gateway = KeyedGateway([_failed(code)])
    job = _gateway_job(tmp_path)
    await _run(job, gateway)
    (line,) = [x for x in read_log(tmp_path / LOG_NAME) if isinstance(x, SampleLine)]
    assert not line.solved and not line.infra_error and line.stopped == stopped
    assert (line.error or "").startswith(code) and line.cost.attempts == 4
    await _run(job, gateway)
    assert len(gateway.keys) == 1  # not re-run on resume
    assert build_report(tmp_path).metrics.pass_at[1] == 0.0


@pytest.mark.parametrize("memory", [False, True])
async def test_the_memory_param_is_sent_as_asked(tmp_path: Path, memory: bool) -> None:
    gateway = KeyedGateway([_succeeded()])
    job = _gateway_job(tmp_path)
    job.config.memory = memory
    await _run(job, gateway, memory=memory)
    assert gateway.bodies[0]["params"]["memory"] is memory
    expected = f"gateway prove jobs sent with memory={'true' if memory else 'false'}"
    assert expected in build_report(tmp_path).memory


def test_long_idempotency_keys_are_hashed_within_the_gateway_limit() -> None:
    short = idempotency_key("run:p:0", 3)
    assert short == "run:p:0:3"
    long = idempotency_key("run:" + "x" * 300 + ":0", 1)
    assert len(long) <= 200 and long.endswith(":1") and long != idempotency_key("run:" + "y" * 300 + ":0", 1)
