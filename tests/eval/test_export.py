"""eval-export: verified pairs and repair trajectories from the log; memory import."""

from __future__ import annotations

from pathlib import Path

from prover.eval.export import export_records, export_run
from prover.eval.run import EvalRun
from prover.memory import ProofMemory
from tests.eval.helpers import Script, ScriptedProver, make_job, make_problem


async def test_export_pairs_and_trajectories(tmp_path: Path) -> None:
    out = tmp_path / "run"
    problems = [make_problem("a", ["x"]), make_problem("b", ["x"])]
    # a: sample 0 solved at attempt 2 (after two repairs), sample 1 at attempt 0; b: never
    script = Script(solve_at={("a", 0): 2, ("a", 1): 0, ("b", 0): None, ("b", 1): None})
    await EvalRun(make_job(out, problems, n=2, ks=[1], concurrency=1), ScriptedProver(script, 3)).run()
    records = export_records(out)
    verified = [r for r in records if r["kind"] == "verified"]
    assert sorted(r["proof"].split("-- ")[-1].strip() for r in verified) == ["0", "2"]  # two distinct proofs
    assert all(r["problem_id"] == "a" and r["statement"].endswith(":= by sorry\n") for r in verified)
    trajectories = [r for r in records if r["kind"] == "trajectory"]
    assert sorted((t["problem_id"], t["sample"], t["solved"]) for t in trajectories) == [
        ("a", 0, True), ("b", 0, False), ("b", 1, False),
    ]  # fmt: skip
    solved = next(t for t in trajectories if t["solved"])
    assert [s["verdict"] for s in solved["steps"]] == ["LEAN_ERROR", "LEAN_ERROR", "PASS"]
    assert solved["steps"][0]["feedback"] == "error: linarith failed"

    memory = ProofMemory(tmp_path / "memory.jsonl")
    summary = export_run(out, tmp_path / "export.jsonl", memory=memory)
    assert (summary.verified, summary.trajectories, summary.added_to_memory) == (2, 3, 2)
    assert len((tmp_path / "export.jsonl").read_text().splitlines()) == 5
    assert len(ProofMemory(tmp_path / "memory.jsonl")) == 2
    # exporting again adds nothing new to the memory (its dedup)
    assert export_run(out, tmp_path / "export2.jsonl", memory=memory).added_to_memory == 0
