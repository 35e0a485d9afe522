"""Fixtures shared by the lean_server tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def repl_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake REPL's request log (one JSON line per request: pid, request, response)."""
    path = tmp_path / "repl.log"
    monkeypatch.setenv("FAKE_REPL_LOG", str(path))
    return path
