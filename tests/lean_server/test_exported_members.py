"""``lean_server``'s public API: ``__all__`` lists exactly what it exports, and each name resolves."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import lean_server

EXPECTED = {
    "LeanService", "RawResult", "Reservation", "connect", "LeanServerClient", "create_app", "ReplPool",
    "PoolStats", "OneShotBackend", "Backend", "split_header", "ResultCache", "render_feedback", "evaluate",
    "Certificate", "Verdict", "TierResult", "Violation", "EnvironmentStamp", "Message", "Policy",
    "resolve_policy", "Snippet", "Priority", "Checker", "check_one", "LeanError", "BacklogFull",
    "CheckerUnavailable", "trust_tiers", "audit", "classify_axioms", "parse_axioms_message", "parse",
    "theorem_names",
}  # fmt: skip


def test_all_lists_the_public_api_sorted_without_duplicates() -> None:
    assert set(lean_server.__all__) == EXPECTED
    assert list(lean_server.__all__) == sorted(set(lean_server.__all__))
    assert set(lean_server._EXPORTS) | {"connect"} == EXPECTED  # the lazy table and __all__ agree


def test_connect_is_the_function_even_after_its_submodule_is_imported() -> None:
    importlib.import_module("lean_server.connect")
    assert callable(lean_server.connect) and lean_server.connect.__name__ == "connect"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_exported_name_resolves_to_its_defining_object(name: str) -> None:
    value = getattr(lean_server, name)
    namespace: dict[str, object] = {}
    exec(f"from lean_server import {name}", namespace)
    assert namespace[name] is value
    home = importlib.import_module(value.__module__) if hasattr(value, "__module__") else None
    assert home is not None and home.__name__.startswith("lean_server")
    assert name in dir(lean_server)


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from lean_server import *", namespace)
    assert set(namespace) - {"__builtins__"} == EXPECTED


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        _ = lean_server.NoSuchThing


def test_importing_the_package_stays_light() -> None:
    code = "import sys, lean_server; print(sorted(m for m in ('fastapi', 'httpx', 'redis', 'psutil') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
