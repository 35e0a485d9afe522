"""The four benchmarks as :class:`Problem` records, with the version of the file they came from.

Every benchmark is one JSONL file in the common schema of ``shared/benchmarks/SOURCES.md``
(``id, benchmark, split, header, preamble, formal_statement, decl_kind, lean4_code, ...``).
Where the file is looked for, first hit wins:

1. ``data_dir`` given by the caller (``sorryless eval --data DIR``);
2. ``settings.benchmarks_dir``;
3. the download cache ``<settings.data_dir>/benchmarks/``;
4. a download from the canonical public sources (``prover.eval.download``), written to the cache.

The file's sha256 and where it came from travel with every result (:class:`DatasetVersion`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field

from prover.eval.errors import DatasetUnavailable, UnknownProblems
from prover.types import ProofTask
from sorryless.config import Settings

BenchmarkName = Literal["minif2f", "putnambench", "proverbench", "proofnet"]
BENCHMARKS: tuple[str, ...] = get_args(BenchmarkName)


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


def assemble_stub(header: str, preamble: str, formal_statement: str) -> str:
    """The common schema's `lean4_code` layout: header, preamble + blank line, statement, newline."""
    middle = f"{preamble}\n\n" if preamble else ""
    return f"{header}{middle}{formal_statement}\n"


class DatasetVersion(BaseModel):
    """Which file the problems came from: enough to tell two runs' statements apart."""

    benchmark: str
    sha256: str
    records: int
    path: str
    origin: Literal["path", "settings", "cache", "download"]
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


def check_benchmark(name: str) -> str:
    key = name.lower().replace("-", "").replace("_", "")
    if key not in BENCHMARKS:
        raise UnknownProblems(f"unknown benchmark {name!r}; choose one of {', '.join(BENCHMARKS)}")
    return key


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


def _locate(
    benchmark: str, settings: Settings, data_dir: Path | None
) -> tuple[Path, Literal["path", "settings", "cache"]] | None:
    candidates: list[tuple[Path | None, Literal["path", "settings", "cache"]]] = [
        (data_dir, "path"),
        (settings.benchmarks_dir, "settings"),
        (cache_dir(settings), "cache"),
    ]
    for folder, origin in candidates:
        if folder is None:
            continue
        path = folder / f"{benchmark}.jsonl"
        if path.is_file():
            return path, origin
        if origin == "path":
            raise DatasetUnavailable(f"{path} does not exist (--data points to {folder})")
    return None


def load_dataset(
    benchmark: str, settings: Settings, *, data_dir: Path | None = None, download: bool = True
) -> Dataset:
    """Read a benchmark (downloading it into the cache when it is nowhere on disk)."""
    name = check_benchmark(benchmark)
    found = _locate(name, settings, data_dir)
    if found is None:
        if not download:
            raise DatasetUnavailable(
                f"{name}.jsonl not found (no --data, settings.benchmarks_dir unset, nothing in {cache_dir(settings)})"
            )
        from prover.eval.download import download_benchmark_sync

        path = download_benchmark_sync(name, cache_dir(settings))
        origin: Literal["path", "settings", "cache", "download"] = "download"
    else:
        path, origin = found
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
