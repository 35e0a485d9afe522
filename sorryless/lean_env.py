"""What Lean environment this machine has: the lock file setup-lean writes, and a probe.

``probe_lean(settings)`` answers, without starting Lean, which backend can run:

* ``repl``: a REPL command is configured (``settings.lean_repl_cmd``), or setup-lean's lock
  file is present with its REPL binary and Lake project;
* ``oneshot``: only a ``lean`` binary (``settings.lean_bin``, PATH, or an elan toolchain);
* ``none``: nothing; the reason says how to fix it.
"""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from sorryless.config import Settings

NO_TOOLCHAIN_REASON = "no toolchain (run: sorryless setup-lean; needs network)"


class LeanLock(BaseModel):
    """The pinned Lean environment setup-lean installed (``settings.lean_lock_file``)."""

    toolchain: str = Field(description="elan toolchain, e.g. leanprover/lean4:v4.24.0")
    lean_version: str = Field(description="`lean --version` number, e.g. 4.24.0")
    mathlib_commit: str = Field(description="Mathlib git commit from lake-manifest.json")
    repl_commit: str = Field(description="leanprover-community/repl git commit")
    project_dir: Path = Field(description="Lake project with Mathlib (REPL processes run here)")
    repl_bin: Path = Field(description="The built REPL executable")
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    mathlib_rev: str | None = Field(default=None, description="The requested Mathlib revision (tag/commit)")
    repl_rev: str | None = Field(default=None, description="The requested REPL revision (tag/commit)")
    lake_bin: Path | None = Field(default=None, description="`lake` of the toolchain (for `lake env repl`)")

    def matches(self, settings: Settings) -> bool:
        """True when this lock was made for the toolchain and revisions ``settings`` pin."""
        return (
            self.toolchain == settings.lean_toolchain
            and self.mathlib_rev in (None, settings.mathlib_rev)
            and self.repl_rev in (None, settings.repl_rev)
            and self.project_dir == settings.lean_project_dir
        )

    def files_present(self) -> bool:
        return self.repl_bin.is_file() and self.project_dir.is_dir()


class LeanStatus(BaseModel):
    """Which Lean backend can run here, and why not when none can."""

    available: bool
    reason: str | None = None
    backend: Literal["repl", "oneshot", "none"]
    lock: LeanLock | None = None
    repl_argv: list[str] | None = Field(default=None, description="argv that starts one REPL process")
    repl_cwd: Path | None = Field(default=None, description="working directory for repl_argv (the project)")
    lean_bin: str | None = Field(default=None, description="`lean` for the one-shot backend, if any")

    def describe(self) -> str:
        """One line for /health and the CLI."""
        if not self.available:
            return f"unavailable — {self.reason}"
        if self.backend == "repl" and self.lock is not None:
            return f"repl (Lean {self.lock.lean_version}, Mathlib {self.lock.mathlib_commit[:12]})"
        return self.backend


def read_lock(settings: Settings) -> LeanLock | None:
    """The lock file's content, or None when it is missing or unreadable."""
    path = settings.lean_lock_file
    try:
        return LeanLock.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, ValidationError):
        return None


def write_lock(settings: Settings, lock: LeanLock) -> Path:
    """Write the lock file atomically; returns its path."""
    path = settings.lean_lock_file
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(lock.model_dump_json(indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def elan_home(settings: Settings) -> Path:
    if settings.elan_home is not None:
        return settings.elan_home
    env = os.environ.get("ELAN_HOME")
    return Path(env) if env else Path.home() / ".elan"


def _has_elan_toolchain(home: Path) -> bool:
    toolchains = home / "toolchains"
    return toolchains.is_dir() and any(toolchains.iterdir())


def find_lean_bin(settings: Settings) -> str | None:
    """A runnable `lean`: settings.lean_bin, else PATH, else elan's proxy when a toolchain exists."""
    if settings.lean_bin:
        found = shutil.which(settings.lean_bin)
        return found if found else None
    home = elan_home(settings)
    on_path = shutil.which("lean")
    if on_path is not None:
        is_elan_proxy = Path(on_path).resolve().parent == (home / "bin").resolve()
        if not is_elan_proxy or _has_elan_toolchain(home):
            return on_path
    proxy = home / "bin" / "lean"
    if proxy.exists() and _has_elan_toolchain(home):
        return str(proxy)
    return None


def probe_lean(settings: Settings) -> LeanStatus:
    """Say which backend can check proofs here (no process is started)."""
    lock = read_lock(settings)
    lean_bin = find_lean_bin(settings)
    if settings.lean_repl_cmd:
        argv = settings.repl_argv()
        return LeanStatus(available=True, backend="repl", lock=lock, repl_argv=argv, lean_bin=lean_bin)
    if lock is not None and lock.files_present():
        lake = str(lock.lake_bin) if lock.lake_bin is not None else (shutil.which("lake") or "lake")
        return LeanStatus(
            available=True,
            backend="repl",
            lock=lock,
            repl_argv=[lake, "env", str(lock.repl_bin)],
            repl_cwd=lock.project_dir,
            lean_bin=lean_bin,
        )
    if lean_bin is not None:
        return LeanStatus(available=True, backend="oneshot", lock=lock, lean_bin=lean_bin)
    return LeanStatus(available=False, backend="none", reason=NO_TOOLCHAIN_REASON, lock=lock)
