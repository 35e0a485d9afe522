"""A :class:`~prover.eval.run.Prover` that proves through the sorryless gateway (`--api URL`).

Each sample is one ``prove`` job: ``POST /v1/jobs`` with
``{"kind": "prove", "params": {"statement", "informal", "strategy", "budget", "profile", "memory"},
"queue": "batch"}``, then ``GET /v1/jobs/{id}`` until it is final. The job's ``result.proofs[0]``
and ``cost`` become the :class:`ProofOutcome` (the gateway returns no per-attempt trace, so the
log holds costs and the verified proof with its certificate, not the candidates). 429 answers are
retried after ``Retry-After``.

``memory`` is sent explicitly (false unless ``--memory``): the worker's retrieval memory records
verified proofs and would otherwise feed one sample's proof to the next.

Re-attaching on resume: every submission carries ``Idempotency-Key: {run_id}:{problem}:{sample}:{g}``
where ``g`` (0, 1, ...) numbers the submissions of that sample. The gateway answers a key it has
seen with the job it created (200 instead of 201), so a resumed sample whose POST timed out after
being accepted, or whose run was killed while it polled, attaches to that job instead of starting
an orphan. A replayed job that ended on infrastructure (or was cancelled when an interrupted
run stopped) is skipped and the next ``g`` is tried, so nothing needs remembering between runs.

Failures: a job that fails on its own terms (``timeout``: the job's wall-clock limit; ``no_targets``)
is an unsolved sample, counted like any other. Every other failed or cancelled job is an
infrastructure failure: :class:`GatewayJobFailed` is raised and the sample is run again on resume.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from typing import Any

import httpx

from lean_server.verdict import Certificate
from prover.eval.errors import EvalError
from prover.types import Budget, Cost, EventSink, ProofOutcome, ProofTask, ProverEvent

FINAL = {"succeeded", "failed", "cancelled"}
TIMEOUT = httpx.Timeout(connect=10.0, read=60.0, write=30.0, pool=30.0)
# Failed-job error codes that are the sample's own result, not the infrastructure's fault.
OWN_TERMS_FAILURES = frozenset({"timeout", "no_targets"})
MAX_SUBMISSIONS = 50
_MAX_KEY_CHARS = 200


class GatewayJobFailed(EvalError):
    """The prove job ended failed or cancelled for infrastructure reasons."""


def idempotency_key(sample_key: str, submission: int) -> str:
    """``{run_id}:{problem}:{sample}:{submission}``, hashed when longer than the gateway accepts."""
    key = f"{sample_key}:{submission}"
    if len(key) <= _MAX_KEY_CHARS:
        return key
    return f"{hashlib.sha256(sample_key.encode()).hexdigest()}:{submission}"


def _error_code(job: dict[str, Any]) -> str | None:
    error = job.get("error")
    return str(error.get("code")) if isinstance(error, dict) and error.get("code") else None


def ended_on_infrastructure(job: dict[str, Any]) -> bool:
    """A final job that must be submitted again: cancelled, or failed for any reason but its own."""
    status = job.get("status")
    return status == "cancelled" or (status == "failed" and _error_code(job) not in OWN_TERMS_FAILURES)


class GatewayProver:
    """`prove` through the HTTP gateway, polling the job until it ends."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        memory: bool = False,
        poll_s: float = 1.0,
        job_deadline_s: float = 24 * 3600.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/"), headers=headers, timeout=TIMEOUT, transport=transport
        )
        self.memory = memory
        self._poll_s = poll_s
        self._deadline_s = job_deadline_s

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _request(self, method: str, url: str, **kwargs: Any) -> tuple[int, dict[str, Any]]:
        for _ in range(30):
            response = await self._client.request(method, url, **kwargs)
            if response.status_code == 429:
                await asyncio.sleep(float(response.headers.get("Retry-After", "2")))
                continue
            if response.status_code >= 400:
                raise EvalError(f"{method} {url} answered {response.status_code}: {response.text[:300]}")
            data: dict[str, Any] = response.json()
            return response.status_code, data
        raise EvalError(f"{method} {url}: still 429 after 30 tries")

    def _body(
        self, task: ProofTask, strategy: str | None, budget: Budget, profile: str | None
    ) -> dict[str, Any]:
        params: dict[str, Any] = {
            "statement": task.statement,
            "informal": task.informal,
            "strategy": strategy,
            "budget": budget.model_dump(mode="json"),
            "profile": profile,
            "memory": self.memory,
        }
        return {
            "kind": "prove",
            "params": {k: v for k, v in params.items() if v is not None},
            "queue": "batch",
            "metadata": {"eval_task": task.id, "benchmark": task.benchmark or "", "split": task.split or ""},
        }

    async def prove(
        self,
        task: ProofTask,
        *,
        strategy: str | None,
        budget: Budget,
        profile: str | None,
        on_event: EventSink | None,
    ) -> ProofOutcome:
        """One prove job, without an Idempotency-Key (nothing to re-attach to)."""
        _, accepted = await self._request(
            "POST", "/v1/jobs", json=self._body(task, strategy, budget, profile)
        )
        return await self._finish(task, str(accepted["id"]), strategy, on_event)

    async def prove_sample(
        self,
        task: ProofTask,
        *,
        key: str,
        strategy: str | None,
        budget: Budget,
        profile: str | None,
        on_event: EventSink | None,
    ) -> ProofOutcome:
        """The prove job of one (run, problem, sample): re-attached when it was submitted before."""
        body = self._body(task, strategy, budget, profile)
        for submission in range(MAX_SUBMISSIONS):
            headers = {"Idempotency-Key": idempotency_key(key, submission)}
            status, accepted = await self._request("POST", "/v1/jobs", json=body, headers=headers)
            job_id = str(accepted["id"])
            if status == 200:  # an earlier submission of this sample: re-attach unless it is spent
                _, job = await self._request("GET", f"/v1/jobs/{job_id}")
                if job.get("status") in FINAL and ended_on_infrastructure(job):
                    continue
            return await self._finish(task, job_id, strategy, on_event)
        raise GatewayJobFailed(f"{key}: {MAX_SUBMISSIONS} submissions all ended on infrastructure failures")

    async def _finish(
        self, task: ProofTask, job_id: str, strategy: str | None, on_event: EventSink | None
    ) -> ProofOutcome:
        job = await self._wait(job_id)
        if on_event is not None:
            await on_event(
                ProverEvent(
                    kind="finished", task_id=task.id, data={"job_id": job_id, "status": job["status"]}
                )
            )
        if job["status"] == "succeeded":
            return _outcome(task, job, strategy)
        if not ended_on_infrastructure(job):
            return _own_failure(task, job, strategy)
        raise GatewayJobFailed(f"job {job_id} {job['status']}: {job.get('error')}")

    async def _wait(self, job_id: str) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._deadline_s
        try:
            while True:
                _, job = await self._request("GET", f"/v1/jobs/{job_id}")
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


def _own_failure(task: ProofTask, job: dict[str, Any], strategy: str | None) -> ProofOutcome:
    """A job that failed on its own terms (its time limit, no target): an unsolved sample."""
    code = _error_code(job) or "failed"
    error = job.get("error") or {}
    message = error.get("message", "") if isinstance(error, dict) else str(error)
    return ProofOutcome(
        task_id=task.id,
        solved=False,
        cost=Cost.model_validate(job.get("cost") or {}),
        strategy=strategy or "unknown",
        stopped="deadline" if code == "timeout" else "error",
        error=f"{code}: {message}"[:2000],
    )


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
