"""The common record schema of the benchmark files: benchmark names and the stub layout.

Both the reader (:mod:`prover.eval.datasets`) and the converter of the upstream sources
(:mod:`prover.eval.download`) build on it; the schema itself is described in
``prover/eval/benchmarks/SOURCES.md``.
"""

from __future__ import annotations

from typing import Literal, get_args

from prover.eval.errors import UnknownProblems

BenchmarkName = Literal["minif2f", "putnambench", "proverbench", "proofnet"]
BENCHMARKS: tuple[str, ...] = get_args(BenchmarkName)


def check_benchmark(name: str) -> str:
    """The canonical benchmark name (`MiniF2F`, `putnam-bench`, ... are accepted as spelled loosely)."""
    key = name.lower().replace("-", "").replace("_", "")
    if key not in BENCHMARKS:
        raise UnknownProblems(f"unknown benchmark {name!r}; choose one of {', '.join(BENCHMARKS)}")
    return key


def assemble_stub(header: str, preamble: str, formal_statement: str) -> str:
    """The common schema's `lean4_code` layout: header, preamble + blank line, statement, newline."""
    middle = f"{preamble}\n\n" if preamble else ""
    return f"{header}{middle}{formal_statement}\n"
