#!/usr/bin/env python3
"""Source audits per second (statement match + legality, no Lean) on the prover-output fixtures.

Audits every record of ``tests/data/prover_outputs_dev.jsonl`` against its MiniF2F stub (the
benchmark file shipped in ``prover/eval/benchmarks/``), on one core, and prints audits/s.
``--cold`` clears the parse cache before every audit, so the stub is re-parsed each time (the
worst case); by default stubs are parsed once per batch, as in a real run.

    .venv/bin/python benchmarks/bench_audit.py [--repeat 3] [--cold]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lean_server.policy import Policy  # noqa: E402
from lean_server.trust import audit, parse_cached  # noqa: E402
from prover.eval.datasets import packaged_benchmarks_dir  # noqa: E402

OUTPUTS = REPO / "tests" / "data" / "prover_outputs_dev.jsonl"


def _load() -> list[tuple[str, str]]:
    stubs: dict[tuple[str, str], str] = {}
    with (packaged_benchmarks_dir() / "minif2f.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            stubs[(r["id"], r["split"])] = r["lean4_code"]
    pairs: list[tuple[str, str]] = []
    with OUTPUTS.open(encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            pairs.append((stubs[(r["problem_id"], r["split"])], r["proof"]))
    return pairs


def _run(pairs: list[tuple[str, str]], cold: bool) -> tuple[float, int]:
    policy = Policy()
    passed = 0
    start = time.perf_counter()
    for stub, proof in pairs:
        if cold:
            parse_cached.cache_clear()
        passed += audit(stub, proof, policy).ok
    return time.perf_counter() - start, passed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cold", action="store_true", help="re-parse the stub for every audit")
    args = parser.parse_args()
    pairs = _load()
    rates: list[float] = []
    passed = 0
    for _ in range(args.repeat):
        parse_cached.cache_clear()
        seconds, passed = _run(pairs, args.cold)
        rates.append(len(pairs) / seconds)
    chars = sum(len(p) for _, p in pairs) / len(pairs)
    print(
        json.dumps(
            {
                "audits": len(pairs),
                "passed": passed,
                "mean_proof_chars": round(chars),
                "cold_stub_parse": args.cold,
                "audits_per_s_median": round(statistics.median(rates), 1),
                "audits_per_s_runs": [round(r, 1) for r in rates],
                "target_per_s": 200,
            }
        )
    )


if __name__ == "__main__":
    main()
