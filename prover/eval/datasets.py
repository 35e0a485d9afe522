"""The four benchmarks as :class:`Problem` records, with the version of the file they came from.

Every benchmark is one JSONL file in the common schema described in
``prover/eval/benchmarks/SOURCES.md`` (``id, benchmark, split, header, preamble, formal_statement,
decl_kind, lean4_code, ...``). Where the file is looked for, first hit wins:

1. ``data_dir`` given by the caller (``sorryless eval --data DIR``); the file must be there;
2. ``upstream=True`` (``sorryless eval --upstream``): the download cache
   ``<settings.data_dir>/benchmarks/``, else a download from the pinned public sources
   (:mod:`prover.eval.download`), written to the cache;
3. ``settings.benchmarks_dir`` (``SORRYLESS_BENCHMARKS_DIR``), when it holds the file;
4. the snapshot shipped with the package (``prover/eval/benchmarks/``), so evaluation works
   offline out of the box.

The file's sha256 and where it came from travel with every result (:class:`DatasetVersion`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from prover.eval import download
from prover.eval.errors import DatasetUnavailable, UnknownProblems
from prover.eval.schema import check_benchmark
from prover.types import ProofTask
from sorryless.config import Settings

Origin = Literal["path", "settings", "packaged", "cache", "download"]


class Problem(BaseModel):
    """One benchmark problem in the common schema."""

    id: str
    benchmark: str
    split: str
    header: str
    preamble: str = Field(
        default="", description="Defs / variables / `abbrev …_solution := sorry` before the theorem."
    )
    formal_statement: str = Field(description="The declaration, ending in `:= by sorry`.")
    decl_kind: str = "theorem"
    lean4_code: str = Field(description="header + preamble + formal_statement: the checkable stub.")
    informal_statement: str | None = None
    informal_proof: str | None = None
    tags: list[str] = Field(default_factory=list)
    statement_source: str | None = Field(default=None, description="Where this statement's text comes from.")
    requires_answer: bool = False
    answer_formal: list[dict[str, str]] | None = None

    @property
    def is_def(self) -> bool:
        """ProofNet's 14 `def … : CommGroup G := …` items are data declarations, not theorems."""
        return self.decl_kind == "def"

    def to_task(self) -> ProofTask:
        return ProofTask(
            id=self.id,
            statement=without_reference_answers(self.lean4_code, self.answer_formal),
            informal=self.informal_statement,
            benchmark=self.benchmark,
            split=self.split,
        )


def without_reference_answers(code: str, answers: list[dict[str, str]] | None) -> str:
    """The stub without the reference answers it carries as comments.

    PutnamBench's source files give each answer as a line comment under its
    ``abbrev …_solution := sorry`` (kept in ``answer_formal``); a prover shown that comment is
    shown the answer, so the statement the prover gets (and is checked against) drops every line
    comment whose text is one of the reference answers. Comments change nothing Lean checks.
    """
    if not answers:
        return code
    wanted = {" ".join(a.get("answer", "").split()) for a in answers} - {""}
    kept = [
        line
        for line in code.split("\n")
        if not (line.lstrip().startswith("--") and " ".join(line.lstrip()[2:].split()) in wanted)
    ]
    return "\n".join(kept)


class DatasetVersion(BaseModel):
    """Which file the problems came from: enough to tell two runs' statements apart."""

    benchmark: str
    sha256: str
    records: int
    path: str
    origin: Origin
    source: str = Field(
        description="Upstream provenance (repos @ commits, or the SOURCES.md the file came with)."
    )


class Dataset(BaseModel):
    version: DatasetVersion
    problems: list[Problem]

    def select(self, split: str | None = None, ids: list[str] | None = None) -> list[Problem]:
        """Problems of one split (None: all), restricted to `ids` in the order given."""
        pool = [p for p in self.problems if split is None or p.split == split]
        if not ids:
            return pool
        by_id = {p.id: p for p in pool}
        missing = [i for i in ids if i not in by_id]
        if missing:
            where = f"{self.version.benchmark}/{split}" if split else self.version.benchmark
            raise UnknownProblems(f"not in {where}: {', '.join(missing)}")
        return [by_id[i] for i in ids]


UPSTREAM: dict[str, str] = {
    "minif2f": "test: Goedel-LM/Goedel-Prover-V2@2e9036e1 dataset/minif2f.jsonl; "
    "valid: deepseek-ai/DeepSeek-Prover-V1.5@2c4ba911 datasets/minif2f.jsonl",
    "putnambench": "trishullab/PutnamBench@3c9b9268 lean4/src/*.lean + informal/putnam.json",
    "proverbench": "deepseek-ai/DeepSeek-ProverBench (HuggingFace)",
    "proofnet": "deepseek-ai/DeepSeek-Prover-V1.5@2c4ba911 datasets/proofnet.jsonl",
}


def packaged_benchmarks_dir() -> Path:
    """The folder of the benchmark files shipped with the package (with SOURCES.md and LICENSES/)."""
    return Path(__file__).resolve().with_name("benchmarks")


def cache_dir(settings: Settings) -> Path:
    return settings.data_dir / "benchmarks"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_problems(path: Path) -> list[Problem]:
    problems: list[Problem] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record: dict[str, Any] = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetUnavailable(f"{path}:{lineno}: not JSON ({exc})") from exc
            record["preamble"] = record.get("preamble") or ""
            record["tags"] = record.get("tags") or []
            problems.append(Problem.model_validate(record))
    return problems


def _source_note(path: Path, benchmark: str) -> str:
    sidecar = path.with_suffix(".source.json")
    if sidecar.exists():
        return str(json.loads(sidecar.read_text(encoding="utf-8")).get("source", UPSTREAM[benchmark]))
    return UPSTREAM[benchmark] + " (as converted in the SOURCES.md next to the file)"


def _locate(benchmark: str, settings: Settings, data_dir: Path | None, upstream: bool) -> tuple[Path, Origin]:
    file = f"{benchmark}.jsonl"
    if data_dir is not None:
        if upstream:
            raise DatasetUnavailable("--data and --upstream name two versions of the benchmark; choose one")
        path = data_dir / file
        if not path.is_file():
            raise DatasetUnavailable(f"{path} does not exist (--data points to {data_dir})")
        return path, "path"
    if upstream:
        cached = cache_dir(settings) / file
        if cached.is_file():
            return cached, "cache"
        return download.download_benchmark_sync(benchmark, cache_dir(settings)), "download"
    if settings.benchmarks_dir is not None and (settings.benchmarks_dir / file).is_file():
        return settings.benchmarks_dir / file, "settings"
    packaged = packaged_benchmarks_dir() / file
    if not packaged.is_file():  # an installation that left out the package data
        raise DatasetUnavailable(
            f"{packaged} is missing from this installation; pass --data DIR or --upstream"
        )
    return packaged, "packaged"


def load_dataset(
    benchmark: str, settings: Settings, *, data_dir: Path | None = None, upstream: bool = False
) -> Dataset:
    """Read a benchmark from the first place that has it (see the module docstring for the order)."""
    name = check_benchmark(benchmark)
    path, origin = _locate(name, settings, data_dir, upstream)
    problems = read_problems(path)
    source = _source_note(path, name)
    for problem in problems:
        if problem.statement_source is None:
            problem.statement_source = source
    version = DatasetVersion(
        benchmark=name,
        sha256=file_sha256(path),
        records=len(problems),
        path=str(path),
        origin=origin,
        source=source,
    )
    return Dataset(version=version, problems=problems)
