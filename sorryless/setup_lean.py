"""`sorryless setup-lean`: install the pinned Lean environment, reproducibly.

Steps (each external command goes through an injectable runner, so tests cover the logic):

1. up to date already? (lock file matches the settings and its files exist) -> done in seconds;
2. network probe (3 s) -> without network: exit code 2 and a short explanation;
3. elan (on PATH / in ELAN_HOME, else Debian ``elan`` via apt-get, else the official
   elan-init script) and the pinned toolchain (``settings.lean_toolchain``);
4. the leanprover-community REPL at ``settings.repl_rev``, built for that exact toolchain;
5. a Lake project requiring Mathlib at ``settings.mathlib_rev``: ``lake update``,
   ``lake exe cache get``, then ``lake build`` of a tiny file that imports Mathlib;
6. everything is built in a staging folder under ``settings.lean_dir`` and swapped into
   place at the end, all or nothing: the previous REPL and project are renamed aside, both new
   ones moved in, then the lock file (toolchain, lean_version, Mathlib commit, REPL commit) is
   written; a failure at any point of the swap puts the previous ones back. Any failure removes
   the staging folder: nothing half-installed is left. File-system errors (``OSError``) come
   out as :class:`SetupError` with a one-line reason, never as a traceback.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import typer

from sorryless.config import Settings
from sorryless.errors import SorrylessError
from sorryless.lean_env import LeanLock, elan_home, probe_lean, read_lock, write_lock

ELAN_INIT_URL = "https://raw.githubusercontent.com/leanprover/elan/master/elan-init.sh"
CHECK_MODULE = "SorrylessCheck"
_STEP_TIMEOUT_S = 4 * 3600.0
_NO_NETWORK_HELP = (
    "setup-lean needs the network (elan, the Lean toolchain, the REPL and the Mathlib cache are "
    "downloaded from GitHub and releases.lean-lang.org), but {url} is not reachable ({timeout:g} s probe).\n"
    "Nothing was installed. Run `sorryless setup-lean` again on a machine with network access, or point "
    "SORRYLESS_LEAN_REPL_CMD / SORRYLESS_LEAN_BIN at an existing Lean installation."
)


class SetupError(SorrylessError):
    """setup-lean could not finish."""


class NoNetwork(SetupError):
    """The network probe failed: nothing can be downloaded."""


class StepFailed(SetupError):
    """An external command of the installation failed."""


class CommandRunner(Protocol):
    """Runs one external command and returns its output; raises StepFailed on failure."""

    def __call__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> str: ...


def run_subprocess(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """The real runner: captures stdout+stderr, raises StepFailed with the output's tail."""
    try:
        proc = subprocess.run(
            list(argv),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=_STEP_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StepFailed(f"`{' '.join(argv)}` could not run: {exc}") from exc
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.strip().splitlines()[-20:])
        raise StepFailed(f"`{' '.join(argv)}` failed with exit code {proc.returncode}:\n{tail}")
    return proc.stdout


def network_reachable(url: str, timeout_s: float = 3.0) -> bool:
    """True when ``url`` answers over HTTP within ``timeout_s`` (a 4xx/5xx, e.g. a proxy's denial, is no)."""
    import httpx

    try:
        with httpx.Client(timeout=httpx.Timeout(timeout_s), follow_redirects=False) as client:
            status = client.head(url).status_code
    except httpx.HTTPError:
        return False
    return status < 400


def download(url: str, dest: Path) -> None:
    """Fetch ``url`` into ``dest`` (used for the elan-init script)."""
    import httpx

    try:
        with httpx.Client(timeout=httpx.Timeout(30.0), follow_redirects=True) as client:
            resp = client.get(url)
            resp.raise_for_status()
    except httpx.HTTPError as exc:
        raise StepFailed(f"download of {url} failed: {exc}") from exc
    dest.write_bytes(resp.content)


_OUR_PROJECT_NAME = 'name = "SorrylessLean"'


def _lakefile(settings: Settings) -> str:
    return (
        f"{_OUR_PROJECT_NAME}\n"
        f'defaultTargets = ["{CHECK_MODULE}"]\n\n'
        "[[require]]\n"
        'name = "mathlib"\n'
        f'git = "{settings.mathlib_git_url}"\n'
        f'rev = "{settings.mathlib_rev}"\n\n'
        "[[lean_lib]]\n"
        f'name = "{CHECK_MODULE}"\n'
    )


_CHECK_FILE = "import Mathlib\n\nexample : (2 : ℕ) + 2 = 4 := by norm_num\n"
_VERSION_RE = re.compile(r"version (\d+\.\d+\.\d+(?:-[\w.]+)?)")


@dataclass
class LeanInstaller:
    """Installs the pinned Lean environment described by ``settings``."""

    settings: Settings
    run: CommandRunner = run_subprocess
    network_ok: Callable[[str], bool] = network_reachable
    fetch: Callable[[str, Path], None] = download
    which: Callable[[str], str | None] = shutil.which
    say: Callable[[str], None] = print
    is_root: bool = field(default_factory=lambda: hasattr(os, "geteuid") and os.geteuid() == 0)

    # ---- public --------------------------------------------------------------------------
    def up_to_date(self) -> LeanLock | None:
        lock = read_lock(self.settings)
        if lock is not None and lock.matches(self.settings) and lock.files_present():
            return lock
        return None

    def install(self, *, force: bool = False) -> LeanLock:
        try:
            return self._install(force)
        except OSError as exc:
            where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
            raise SetupError(f"file system error{where}: {exc.strerror or exc}") from exc

    def _install(self, force: bool) -> LeanLock:
        if not force:
            lock = self.up_to_date()
            if lock is not None:
                self.say(f"Lean environment already set up ({self.settings.lean_lock_file}).")
                return lock
        self._refuse_foreign_project()
        url = self.settings.lean_probe_url
        if not self.network_ok(url):
            raise NoNetwork(_NO_NETWORK_HELP.format(url=url, timeout=3.0))
        lean_dir = self.settings.lean_dir
        created_lean_dir = not lean_dir.exists()
        staging = lean_dir / f".staging-{os.getpid()}"
        try:
            if staging.exists():
                shutil.rmtree(staging)
            staging.mkdir(parents=True)
            lock = self._build(staging)
            self._swap_into_place(staging, lock)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            if created_lean_dir and lean_dir.is_dir() and not any(lean_dir.iterdir()):
                lean_dir.rmdir()
            raise
        shutil.rmtree(staging, ignore_errors=True)
        self.say(f"Lean environment ready: {self.settings.lean_lock_file}")
        return lock

    # ---- steps -----------------------------------------------------------------------------
    def _refuse_foreign_project(self) -> None:
        """Never replace a Lake project that setup-lean did not create (SORRYLESS_LEAN_PROJECT)."""
        project = self.settings.lean_project_dir
        lakefile = project / "lakefile.toml"
        if project.exists() and not (
            lakefile.is_file() and _OUR_PROJECT_NAME in lakefile.read_text(encoding="utf-8")
        ):
            raise SetupError(
                f"{project} exists and was not created by setup-lean; refusing to replace it. "
                "Unset SORRYLESS_LEAN_PROJECT (or point it at an empty path) to install a fresh project."
            )

    def _env(self) -> dict[str, str]:
        home = elan_home(self.settings)
        env = dict(os.environ)
        env["ELAN_HOME"] = str(home)
        env["PATH"] = f"{home / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        return env

    def _elan(self, staging: Path) -> str:
        home = elan_home(self.settings)
        found = self.which("elan") or (
            str(home / "bin" / "elan") if (home / "bin" / "elan").exists() else None
        )
        if found:
            return found
        if self.is_root and self.which("apt-get"):
            self.say("[elan] installing Debian package `elan`")
            try:
                self.run(["apt-get", "install", "-y", "elan"], env=self._env())
                found = self.which("elan")
                if found:
                    return found
            except StepFailed as exc:
                self.say(f"[elan] apt-get failed, using the official installer instead ({exc})")
        self.say("[elan] installing elan with the official elan-init script")
        script = staging / "elan-init.sh"
        self.fetch(ELAN_INIT_URL, script)
        self.run(
            ["sh", str(script), "-y", "--default-toolchain", "none", "--no-modify-path"], env=self._env()
        )
        elan = home / "bin" / "elan"
        if not elan.exists():
            raise StepFailed(f"elan-init finished but {elan} does not exist")
        return str(elan)

    def _build(self, staging: Path) -> LeanLock:
        settings = self.settings
        env = self._env()
        toolchain = settings.lean_toolchain
        elan = self._elan(staging)
        self.say(f"[toolchain] {toolchain}")
        self.run([elan, "toolchain", "install", toolchain], env=env)
        lean_version_out = self.run([elan, "run", toolchain, "lean", "--version"], env=env)
        m = _VERSION_RE.search(lean_version_out)
        if m is None:
            raise StepFailed(f"cannot read the Lean version from {lean_version_out.strip()!r}")
        lean_version = m.group(1)

        repl_dir = staging / "repl"
        self.say(f"[repl] {settings.repl_git_url} @ {settings.repl_rev}")
        self.run(["git", "clone", "--quiet", settings.repl_git_url, str(repl_dir)], env=env)
        self.run(["git", "-C", str(repl_dir), "checkout", "--quiet", settings.repl_rev], env=env)
        (repl_dir / "lean-toolchain").write_text(toolchain + "\n", encoding="utf-8")
        self.run([elan, "run", toolchain, "lake", "build"], cwd=repl_dir, env=env)
        repl_commit = self.run(["git", "-C", str(repl_dir), "rev-parse", "HEAD"], env=env).strip()
        if not (repl_dir / ".lake" / "build" / "bin" / "repl").is_file():
            raise StepFailed("the REPL build finished but .lake/build/bin/repl is missing")

        project = staging / "project"
        project.mkdir()
        (project / "lean-toolchain").write_text(toolchain + "\n", encoding="utf-8")
        (project / "lakefile.toml").write_text(_lakefile(settings), encoding="utf-8")
        (project / f"{CHECK_MODULE}.lean").write_text(_CHECK_FILE, encoding="utf-8")
        self.say(f"[mathlib] {settings.mathlib_rev}: lake update, cache get, build (minutes)")
        self.run([elan, "run", toolchain, "lake", "update"], cwd=project, env=env)
        self.run([elan, "run", toolchain, "lake", "exe", "cache", "get"], cwd=project, env=env)
        self.run([elan, "run", toolchain, "lake", "build", CHECK_MODULE], cwd=project, env=env)
        mathlib_commit = _mathlib_commit(project)
        lake_bin = self.run([elan, "which", "lake"], cwd=project, env=env).strip()

        return LeanLock(
            toolchain=toolchain,
            lean_version=lean_version,
            mathlib_commit=mathlib_commit,
            repl_commit=repl_commit,
            project_dir=settings.lean_project_dir,
            repl_bin=settings.lean_dir / "repl" / ".lake" / "build" / "bin" / "repl",
            mathlib_rev=settings.mathlib_rev,
            repl_rev=settings.repl_rev,
            lake_bin=Path(lake_bin) if lake_bin else None,
        )

    def _swap_into_place(self, staging: Path, lock: LeanLock) -> None:
        """Move the staged REPL and project into place and write the lock: all or nothing.

        Both previous folders are renamed aside first (same directory: atomic), then both new ones
        moved in, then the lock written; on any failure what was moved in is removed and the
        previous folders are renamed back, so the old install (and its lock) stays as it was.
        """
        targets = [
            (staging / "repl", self.settings.lean_dir / "repl"),
            (staging / "project", self.settings.lean_project_dir),
        ]
        for staged, _ in targets:
            if not staged.is_dir():
                raise StepFailed(f"the staged {staged.name} folder is missing")
        cleared: list[Path] = []  # targets that are ours to fill (empty now, or renamed aside)
        backups: list[tuple[Path, Path]] = []
        try:
            for _, target in targets:
                if target.exists() or target.is_symlink():
                    backup = target.with_name(f".old-{os.getpid()}-{target.name}")
                    target.rename(backup)
                    backups.append((target, backup))
                cleared.append(target)
            for staged, target in targets:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(str(staged), str(target))
            write_lock(self.settings, lock)
        except BaseException:
            for target in cleared:
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target, ignore_errors=True)
                elif target.exists() or target.is_symlink():
                    target.unlink(missing_ok=True)
            for target, backup in backups:
                backup.rename(target)
            raise
        for _, backup in backups:
            shutil.rmtree(backup, ignore_errors=True)


def _mathlib_commit(project: Path) -> str:
    manifest = project / "lake-manifest.json"
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StepFailed(f"cannot read {manifest}: {exc}") from exc
    for pkg in data.get("packages", []):
        if pkg.get("name") == "mathlib" and pkg.get("rev"):
            return str(pkg["rev"])
    raise StepFailed(f"{manifest} has no mathlib package")


def register(app: typer.Typer) -> None:
    @app.command("setup-lean")
    def setup_lean(
        force: bool = typer.Option(False, "--force", help="Rebuild even when the lock file is up to date."),
        probe_url: str | None = typer.Option(
            None,
            "--probe-url",
            help="URL probed to detect network access (default: settings.lean_probe_url).",
        ),
    ) -> None:
        """Install elan, the pinned toolchain, the REPL and Mathlib; write the lock file."""
        settings = Settings()
        if probe_url:
            settings = settings.model_copy(update={"lean_probe_url": probe_url})
        installer = LeanInstaller(settings, say=lambda line: typer.echo(line))
        try:
            installer.install(force=force)
        except NoNetwork as exc:
            typer.echo(f"setup-lean: no network.\n{exc}", err=True)
            raise typer.Exit(2) from None
        except (SetupError, OSError) as exc:
            typer.echo(f"setup-lean failed; nothing was left half-installed.\n{exc}", err=True)
            raise typer.Exit(1) from None
        status = probe_lean(settings)
        typer.echo(f"lean: {status.describe()}")
