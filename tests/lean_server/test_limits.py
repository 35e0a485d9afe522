"""Pool sizing from cores and memory (the machine's figures are patched in)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from lean_server.limits import auto_max_processes, max_total_processes
from sorryless.config import Settings

_GB = 1024**3


def _machine(monkeypatch: pytest.MonkeyPatch, *, cores: int, memory_gb: int) -> None:
    monkeypatch.setattr("lean_server.limits.os.cpu_count", lambda: cores)
    monkeypatch.setattr(
        "lean_server.limits.psutil.virtual_memory", lambda: SimpleNamespace(total=memory_gb * _GB)
    )


def _auto(settings: Settings, spares: int) -> Settings:
    return settings.model_copy(
        update={"lean_max_processes": 0, "lean_warm_spares": spares, "lean_memory_limit_mb": 12_288}
    )


def test_memory_for_one_process_gives_one_not_two(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    _machine(monkeypatch, cores=8, memory_gb=8)  # one 7 GB Mathlib process fits
    assert auto_max_processes(_auto(settings, 0)) == 1
    assert auto_max_processes(_auto(settings, 1)) == 1  # never below one
    assert max_total_processes(_auto(settings, 1)) == 1


def test_the_automatic_cap_leaves_memory_for_the_warm_spares(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    _machine(monkeypatch, cores=8, memory_gb=24)  # three processes fit
    assert auto_max_processes(_auto(settings, 1)) == 2
    assert auto_max_processes(_auto(settings, 0)) == 3
    assert max_total_processes(_auto(settings, 1)) == 3


def test_cores_bound_the_running_processes(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    _machine(monkeypatch, cores=2, memory_gb=256)
    assert auto_max_processes(_auto(settings, 1)) == 2


def test_an_explicit_size_wins_and_has_no_memory_ceiling(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    _machine(monkeypatch, cores=2, memory_gb=8)
    explicit = settings.model_copy(update={"lean_max_processes": 5})
    assert auto_max_processes(explicit) == 5
    assert max_total_processes(explicit) is None
