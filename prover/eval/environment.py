"""The environment stamp of a run: versions, host, Lean lock and model, read at start-up."""

from __future__ import annotations

import importlib.metadata
import platform
import socket
import sys
from typing import Any
from urllib.parse import urlsplit

from prover.eval.runlog import EnvironmentInfo
from sorryless import lean_env
from sorryless.config import Settings


def _version() -> str:
    try:
        return importlib.metadata.version("sorryless")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _lean_probe(settings: Settings) -> tuple[dict[str, Any] | None, str | None]:
    """The setup-lean lock and the backend the local probe sees (None when the probe fails)."""
    lock = lean_env.read_lock(settings)
    lock_data = lock.model_dump(mode="json") if lock is not None else None
    try:
        status = lean_env.probe_lean(settings)
    except Exception:  # a probe failure must not stop an evaluation
        return lock_data, None
    return lock_data, str(status.backend)


def _host_only(url: str | None) -> str | None:
    """Keep scheme://host:port/path of a URL, never credentials."""
    if not url:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def environment_info(settings: Settings, *, profile: str | None) -> EnvironmentInfo:
    lock, backend = _lean_probe(settings)
    return EnvironmentInfo(
        sorryless_version=_version(),
        python=sys.version.split()[0],
        platform=platform.platform(),
        hostname=socket.gethostname(),
        lean_lock=lock,
        lean_backend=backend,
        lean_repl_cmd=settings.lean_repl_cmd,
        lean_server_url=_host_only(settings.lean_server_url),
        llm_model=settings.llm_model,
        llm_base_url=_host_only(settings.llm_base_url),
        llm_profile=profile or settings.llm_profile,
    )
