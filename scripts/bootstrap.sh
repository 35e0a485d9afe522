#!/usr/bin/env bash
# One set-up for both `make run` and `make test`, safe to re-run (quick when nothing changed):
#   1. .venv with the package installed (`pip install -e '.[dev]'`; skipped while pyproject.toml
#      is unchanged since the last install, tracked by a stamp file in .venv);
#   2. a Redis server answering on 127.0.0.1:6379 (scripts/ensure_redis.sh);
#   3. Debian `chromium` (headless, for the eval report test) and a C compiler (for the
#      lean_core kernel) when missing and apt is available; failure is only a note;
#   4. with --lean: `sorryless setup-lean` (Lean toolchain + Mathlib + REPL; needs network);
#      failure is only a note, the service then reports Lean as unavailable.
set -euo pipefail
cd "$(dirname "$0")/.."

WITH_LEAN=0
for arg in "$@"; do
  case "$arg" in
    --lean) WITH_LEAN=1 ;;
    *) echo "bootstrap: unknown option $arg" >&2; exit 2 ;;
  esac
done

VENV=.venv
STAMP="$VENV/.sorryless-install-stamp"

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

pick_python() {
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 \
      && "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  return 1
}

# ---- 1. virtual environment + package -------------------------------------------------------
if [[ ! -x "$VENV/bin/python" ]]; then
  PYTHON=$(pick_python) || { echo "bootstrap: Python >= 3.11 is required" >&2; exit 1; }
  echo "bootstrap: creating $VENV with $PYTHON"
  if ! "$PYTHON" -m venv "$VENV" 2>/dev/null; then
    apt_install python3-venv || true
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
  fi
fi

want=$(sha256sum pyproject.toml | cut -d' ' -f1)
have=$(cat "$STAMP" 2>/dev/null || true)
if [[ "$want" != "$have" ]]; then
  echo "bootstrap: installing the package (pip install -e '.[dev]')"
  "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
  "$VENV/bin/python" -m pip install -q -e '.[dev]'
  echo "$want" > "$STAMP"
else
  echo "bootstrap: package up to date ($VENV)"
fi

# ---- 2. Redis -------------------------------------------------------------------------------
scripts/ensure_redis.sh

# ---- 3. system helpers (best effort) --------------------------------------------------------
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  echo "bootstrap: installing Debian chromium (headless, for the eval report test)"
  apt_install chromium || echo "bootstrap: note: could not install chromium; the eval report test needs it"
fi
if ! command -v cc >/dev/null 2>&1; then
  echo "bootstrap: installing a C compiler (for the lean_core kernel driver)"
  apt_install gcc libc6-dev || echo "bootstrap: note: no C compiler; lean_core tests will fail"
fi

# ---- 4. Lean (best effort; needs network) ----------------------------------------------------
if [[ "$WITH_LEAN" == "1" ]]; then
  if ! "$VENV/bin/sorryless" setup-lean; then
    echo "bootstrap: note: the Lean environment is not provisioned (see above; it needs network)."
    echo "           sorryless still runs; /health reports lean as unavailable until"
    echo "           \`$VENV/bin/sorryless setup-lean\` succeeds."
  fi
fi
echo "bootstrap: ready"
