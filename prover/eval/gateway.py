"""A :class:`~prover.eval.run.Prover` that proves through the sorryless gateway (`--api URL`).

Each sample is one ``prove`` job: ``POST /v1/jobs`` with
``{"kind": "prove", "params": {"statement", "informal", "strategy", "budget", "profile"}, "queue": "batch"}``,
then ``GET /v1/jobs/{id}`` until it is final. The job's ``result.proofs[0]`` and ``cost`` become
the :class:`ProofOutcome` (the gateway returns no per-attempt trace, so the log holds costs and
the verified proof with its certificate, not the candidates). 429 answers are retried after
``Retry-After``; a failed job raises, so the sample is retried on resume.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx

from lean_server.verdict import Certificate
from prover.eval.errors import EvalError
from prover.types import Budget, Cost, EventSink, ProofOutcome, ProofTask, ProverEvent

FINAL = {"succeeded", "failed", "cancelled"}
TIMEOUT = httpx.Timeout(connect=10.0, read=60.0, write=30.0, pool=30.0)


class GatewayJobFailed(EvalError):
    """The prove job ended failed or cancelled."""


class GatewayProver:
    """`prove` through the HTTP gateway, polling the job until it ends."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        poll_s: float = 1.0,
        job_deadline_s: float = 24 * 3600.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/"), headers=headers, timeout=TIMEOUT, transport=transport
        )
        self._poll_s = poll_s
        self._deadline_s = job_deadline_s

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _request(self, method: str, url: str, **kwargs: Any) -> dict[str, Any]:
        for _ in range(30):
            response = await self._client.request(method, url, **kwargs)
            if response.status_code == 429:
                await asyncio.sleep(float(response.headers.get("Retry-After", "2")))
                continue
            if response.status_code >= 400:
                raise EvalError(f"{method} {url} answered {response.status_code}: {response.text[:300]}")
            data: dict[str, Any] = response.json()
            return data
        raise EvalError(f"{method} {url}: still 429 after 30 tries")

    async def prove(
        self,
        task: ProofTask,
        *,
        strategy: str | None,
        budget: Budget,
        profile: str | None,
        on_event: EventSink | None,
    ) -> ProofOutcome:
        params: dict[str, Any] = {
            "statement": task.statement,
            "informal": task.informal,
            "strategy": strategy,
            "budget": budget.model_dump(mode="json"),
            "profile": profile,
        }
        body = {
            "kind": "prove",
            "params": {k: v for k, v in params.items() if v is not None},
            "queue": "batch",
            "metadata": {"eval_task": task.id, "benchmark": task.benchmark or "", "split": task.split or ""},
        }
        accepted = await self._request("POST", "/v1/jobs", json=body)
        job_id = str(accepted["id"])
        job = await self._wait(job_id)
        if on_event is not None:
            await on_event(
                ProverEvent(
                    kind="finished", task_id=task.id, data={"job_id": job_id, "status": job["status"]}
                )
            )
        if job["status"] != "succeeded":
            raise GatewayJobFailed(f"job {job_id} {job['status']}: {job.get('error')}")
        return _outcome(task, job, strategy)

    async def _wait(self, job_id: str) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._deadline_s
        try:
            while True:
                job = await self._request("GET", f"/v1/jobs/{job_id}")
                if job.get("status") in FINAL:
                    return job
                if loop.time() > deadline:
                    raise EvalError(f"job {job_id} not finished after {self._deadline_s} s")
                await asyncio.sleep(self._poll_s)
        except asyncio.CancelledError:
            await asyncio.shield(self._cancel(job_id))
            raise

    async def _cancel(self, job_id: str) -> None:
        """Best effort: the gateway cancels with DELETE /v1/jobs/{id} (409 once it has finished)."""
        with contextlib.suppress(httpx.HTTPError):
            await self._client.delete(f"/v1/jobs/{job_id}")


def _outcome(task: ProofTask, job: dict[str, Any], strategy: str | None) -> ProofOutcome:
    result = job.get("result") or {}
    proofs = result.get("proofs") or [{}]
    first: dict[str, Any] = proofs[0]
    raw_certificate = first.get("certificate") or job.get("certificate")
    certificate = Certificate.model_validate(raw_certificate) if raw_certificate else None
    cost = Cost.model_validate(job.get("cost") or {})
    claimed = bool(first.get("solved", result.get("solved", False)))
    # success is a PASS certificate for a proof, never the job's word alone
    solved = claimed and first.get("proof") is not None and certificate is not None and certificate.passed
    stopped = first.get("stopped") or ("solved" if solved else "budget")
    error = first.get("error")
    if claimed and not solved:
        stopped, error = "error", "the job reported a proof without a PASS certificate"
    return ProofOutcome(
        task_id=task.id,
        solved=solved,
        proof=first.get("proof") if solved else None,
        certificate=certificate if solved else None,
        cost=cost,
        strategy=str(first.get("strategy") or strategy or "unknown"),
        model=first.get("model"),
        stopped=stopped,
        error=error,
    )
