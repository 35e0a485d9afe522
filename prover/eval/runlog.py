"""The attempt log of an evaluation run and its manifest.

A run directory holds:

- ``run.json``: the manifest (configuration, dataset version, environment stamp). Resuming with a
  different configuration is refused.
- ``attempts.jsonl``: append-only, one JSON object per line, flushed line by line:

  - ``{"type": "run", ...}`` once per start or resume (config, dataset, environment);
  - ``{"type": "event", ...}`` prover events (verdicts) as they happen, for live inspection;
  - ``{"type": "attempt", ...}`` every attempt as it happens (candidate, verdict, certificate),
    written from the prover's ``verdict`` event; attempts that never got a verdict (checks dropped
    after a PASS, errors) are written when their sample ends;
  - ``{"type": "sample", ...}`` the end of one (problem, sample) pair: solved or not, its cost,
    the verified proof and PASS certificate. A pair with a ``sample`` line is finished.

Every line of one prove call carries its ``uid``. The sample is the unit of resume: an interrupted
sample is run again from scratch under a new uid, and only the attempts whose uid has a ``sample``
line count, so the attempts of the interrupted try are never counted twice.

Every metric of a report is recomputed from these lines alone.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Collection, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from lean_server.verdict import Certificate
from prover.eval.datasets import DatasetVersion
from prover.eval.errors import RunConfigMismatch
from prover.types import Attempt, Budget, Cost
from sorryless.logging import get_logger

log = get_logger(__name__)

LOG_NAME = "attempts.jsonl"
MANIFEST_NAME = "run.json"
SCHEMA_VERSION = 2


def utcnow() -> datetime:
    return datetime.now(UTC)


class RunConfig(BaseModel):
    """What defines a run: resuming requires the same values."""

    benchmark: str
    split: str | None
    ids: list[str] | None = None
    strategy: str | None = None
    profile: str | None = None
    resolved_strategy: str | None = Field(
        default=None,
        description="The strategy the prover really runs (`strategy`, or the runner's default when "
        "unset); None when the gateway decides.",
    )
    llm_model: str | None = Field(
        default=None, description="Model the in-process runner calls (None: no LLM, or the gateway's)."
    )
    llm_profile: str | None = Field(
        default=None, description="Model profile really used (`profile` or the settings' default)."
    )
    budget: Budget = Field(description="Per-sample budget: each of the n samples is one prove run with it.")
    n: int = Field(ge=1, description="Independent samples (prove runs) per problem.")
    api: str | None = Field(default=None, description="Gateway URL, or None for the in-process runner.")
    memory: bool = Field(
        default=False, description="Whether the prover used (and grew) the retrieval memory."
    )
    dataset_sha256: str


class EnvironmentInfo(BaseModel):
    """Where and with what the run was made (the checker's own stamp is in each certificate)."""

    sorryless_version: str
    python: str
    platform: str
    hostname: str
    lean_lock: dict[str, Any] | None = Field(
        default=None, description="setup-lean lock: toolchain, Mathlib, REPL."
    )
    lean_backend: str | None = Field(
        default=None, description="Backend the local probe reports (repl/oneshot/none)."
    )
    lean_repl_cmd: str | None = None
    lean_server_url: str | None = None
    llm_model: str | None = None
    llm_base_url: str | None = None
    llm_profile: str | None = None


class RunManifest(BaseModel):
    schema_version: int = SCHEMA_VERSION
    run_id: str
    created_at: datetime
    config: RunConfig
    dataset: DatasetVersion
    environment: EnvironmentInfo
    ks: list[int] = Field(default_factory=lambda: [1])
    resumed_at: list[datetime] = Field(default_factory=list)


class RunLine(BaseModel):
    type: Literal["run"] = "run"
    schema_version: int = Field(
        default=1, description="Log schema of this start (1: before planned ids and the memory param)."
    )
    run_id: str
    at: datetime
    resumed: bool
    config: RunConfig
    dataset: DatasetVersion
    environment: EnvironmentInfo
    ks: list[int]
    planned_ids: list[str] | None = Field(
        default=None, description="Every problem id the run is meant to cover (None: an old log)."
    )
    n: int | None = Field(default=None, description="Samples planned per problem.")


class _SampleLineKey(BaseModel):
    """Which prove call a line belongs to: (problem, sample) and the call's own id."""

    problem_id: str
    sample: int
    uid: str = Field(
        description="Id of the prove call (a retried sample gets a new one); its event, attempt and "
        "sample lines share it."
    )


class EventLine(_SampleLineKey):
    type: Literal["event"] = "event"
    at: datetime
    kind: str
    attempt: int | None = None
    data: dict[str, Any] = Field(default_factory=dict)


class AttemptLine(_SampleLineKey):
    type: Literal["attempt"] = "attempt"
    attempt: Attempt


class SampleLine(_SampleLineKey):
    type: Literal["sample"] = "sample"
    benchmark: str
    split: str
    tags: list[str] = Field(default_factory=list)
    decl_kind: str = "theorem"
    statement: str = Field(description="The stub that was proved (header + preamble + statement).")
    statement_sha256: str
    statement_source: str | None = None
    dataset_sha256: str | None = Field(
        default=None, description="sha256 of the benchmark file the statement came from."
    )
    solved: bool
    stopped: str
    error: str | None = None
    infra_error: bool = Field(
        default=False, description="The prove call itself failed; resume runs it again."
    )
    strategy: str | None = None
    profile: str | None = None
    model: str | None = None
    cost: Cost = Field(default_factory=Cost)
    n_attempts: int = 0
    proof: str | None = None
    certificate: Certificate | None = None
    started_at: datetime
    finished_at: datetime
    wall_s: float = 0.0


LogLine = Annotated[RunLine | EventLine | AttemptLine | SampleLine, Field(discriminator="type")]
_LINE_ADAPTER: TypeAdapter[RunLine | EventLine | AttemptLine | SampleLine] = TypeAdapter(LogLine)


def read_log(path: Path) -> Iterator[RunLine | EventLine | AttemptLine | SampleLine]:
    """Every well-formed line; a torn last line (crash mid-write) is skipped."""
    if not path.exists():
        return
    with path.open(encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                yield _LINE_ADAPTER.validate_python(json.loads(raw))
            except (json.JSONDecodeError, ValidationError) as exc:
                log.warning("eval.log.bad_line", path=str(path), line=lineno, error=str(exc)[:200])


def latest_attempts(lines: Iterable[object], uids: Collection[str]) -> list[AttemptLine]:
    """The attempt lines of the prove calls ``uids``, one per (uid, attempt index): the last one
    written, which is the attempt's fullest record (a live line may be completed at the sample's end)."""
    chosen: dict[tuple[str, int], AttemptLine] = {}
    for line in lines:
        if isinstance(line, AttemptLine) and line.uid in uids:
            chosen[(line.uid, line.attempt.index)] = line
    return list(chosen.values())


def finished_pairs(path: Path) -> set[tuple[str, int]]:
    """(problem id, sample) pairs that ended, infrastructure failures excluded."""
    done: set[tuple[str, int]] = set()
    for line in read_log(path):
        if isinstance(line, SampleLine) and not line.infra_error:
            done.add((line.problem_id, line.sample))
    return done


class LogWriter:
    """Appends lines to attempts.jsonl, one flush per line."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        _drop_torn_tail(path)
        self._fh: IO[str] = path.open("a", encoding="utf-8")

    def write(self, line: BaseModel) -> None:
        self._fh.write(line.model_dump_json(exclude_none=False) + "\n")
        self._fh.flush()

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()


def _drop_torn_tail(path: Path) -> None:
    """A crash can leave a last line without its newline: cut it so appends stay line-aligned."""
    if not path.exists() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return
    keep = data.rfind(b"\n") + 1
    with path.open("r+b") as fh:
        fh.truncate(keep)
    log.warning("eval.log.torn_tail_dropped", path=str(path), bytes=len(data) - keep)


def open_manifest(out_dir: Path, manifest: RunManifest) -> tuple[RunManifest, bool]:
    """Write run.json for a new run, or check it against an existing one; returns (manifest, resumed)."""
    path = out_dir / MANIFEST_NAME
    if not path.exists():
        out_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
        return manifest, False
    existing = RunManifest.model_validate_json(path.read_text(encoding="utf-8"))
    old, new = existing.config.model_dump(mode="json"), manifest.config.model_dump(mode="json")
    if old != new:
        diffs = [
            f"{key}: {old.get(key)!r} -> {new.get(key)!r}" for key in new if old.get(key) != new.get(key)
        ]
        raise RunConfigMismatch(
            f"{out_dir} holds a run with another configuration ({'; '.join(diffs)}); "
            "use a new --out directory or the original options"
        )
    existing.resumed_at.append(utcnow())
    path.write_text(existing.model_dump_json(indent=2), encoding="utf-8")
    return existing, True


def file_sha256_or_none(path: Path) -> str | None:
    if not path.exists():
        return None
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
