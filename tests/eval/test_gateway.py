"""GatewayProver: the prove job request it sends and how the job's answer becomes a ProofOutcome."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from lean_server.verdict import Verdict
from prover.eval.gateway import GatewayJobFailed, GatewayProver
from prover.types import Budget, ProofTask
from tests.eval.helpers import certificate

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
