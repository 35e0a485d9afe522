"""`eval-export`: verified pairs and repair trajectories of a run, for expert iteration and memory.

Two kinds of JSONL records, both read from the attempt log only:

- ``{"kind": "verified", statement, proof, problem_id, benchmark, split, certificate_hash, ...}``:
  one per distinct (statement, proof) whose certificate is PASS;
- ``{"kind": "trajectory", problem_id, sample, solved, steps: [{round, candidate, verdict, feedback}]}``:
  every sample with more than one attempt (repair rounds), ending in PASS or not.

``--to-memory`` also adds the verified pairs to the retrieval memory (``prover.memory.ProofMemory``)
with source ``eval``; its own dedup and benchmark leakage guard apply.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from prover.eval.errors import EvalError
from prover.eval.runlog import LOG_NAME, AttemptLine, RunLine, SampleLine, latest_attempts, read_log
from prover.memory import ProofMemory
from prover.types import ProofTask


class ExportSummary(BaseModel):
    verified: int
    trajectories: int
    added_to_memory: int
    path: str


def export_records(run_dir: Path) -> list[dict[str, Any]]:
    log_path = run_dir / LOG_NAME
    if not log_path.exists():
        raise EvalError(f"{log_path} does not exist: not a run directory")
    lines = list(read_log(log_path))
    run = next((x for x in reversed(lines) if isinstance(x, RunLine)), None)
    samples = [x for x in lines if isinstance(x, SampleLine) and not x.infra_error]
    attempts: dict[str, list[AttemptLine]] = defaultdict(list)
    for line in latest_attempts(lines, {s.uid for s in samples}):
        attempts[line.uid].append(line)
    records: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for s in samples:
        if not (s.solved and s.proof and s.certificate is not None and s.certificate.passed):
            continue
        key = (s.statement_sha256, s.certificate.proof_hash)
        if key in seen:
            continue
        seen.add(key)
        records.append(
            {
                "kind": "verified",
                "problem_id": s.problem_id,
                "benchmark": s.benchmark,
                "split": s.split,
                "statement": s.statement,
                "statement_sha256": s.statement_sha256,
                "statement_source": s.statement_source,
                "proof": s.proof,
                "certificate_hash": s.certificate.proof_hash,
                "lean_backend": s.certificate.environment.backend,
                "lean_version": s.certificate.environment.lean_version,
                "strategy": s.strategy,
                "model": s.model,
                "dataset_sha256": run.dataset.sha256 if run else None,
            }
        )
    for s in samples:
        steps = sorted(attempts.get(s.uid, []), key=lambda a: a.attempt.index)
        if len(steps) < 2 or not any(a.attempt.round > 0 for a in steps):
            continue
        records.append(
            {
                "kind": "trajectory",
                "problem_id": s.problem_id,
                "benchmark": s.benchmark,
                "split": s.split,
                "sample": s.sample,
                "statement": s.statement,
                "solved": s.solved,
                "strategy": s.strategy,
                "model": s.model,
                "steps": [
                    {
                        "index": a.attempt.index,
                        "round": a.attempt.round,
                        "candidate": a.attempt.candidate,
                        "verdict": str(a.attempt.verdict) if a.attempt.verdict else None,
                        "feedback": a.attempt.certificate.feedback if a.attempt.certificate else None,
                        "error": a.attempt.error,
                    }
                    for a in steps
                ],
            }
        )
    return records


def export_run(run_dir: Path, out: Path, *, memory: ProofMemory | None = None) -> ExportSummary:
    """Write the export JSONL; add verified pairs to `memory` when given."""
    records = export_records(run_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    added = 0
    if memory is not None:
        samples = {
            (x.problem_id, x.sample): x
            for x in read_log(run_dir / LOG_NAME)
            if isinstance(x, SampleLine) and x.solved
        }
        for s in samples.values():
            if s.certificate is None or s.proof is None:
                continue
            task = ProofTask(id=s.problem_id, statement=s.statement, benchmark=s.benchmark, split=s.split)
            if memory.record_verified(task, s.proof, s.certificate, source="eval") is not None:
                added += 1
    return ExportSummary(
        verified=sum(1 for r in records if r["kind"] == "verified"),
        trajectories=sum(1 for r in records if r["kind"] == "trajectory"),
        added_to_memory=added,
        path=str(out),
    )
