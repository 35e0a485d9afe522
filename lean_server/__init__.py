"""lean_server: Lean 4 checking as a service (REPL pool, verdict tiers, HTTP API, Kimina routes).

Public names are imported lazily (``lean_server.LeanService`` etc.) so importing a submodule
such as ``lean_server.verdict`` stays light::

    from lean_server import LeanService, Snippet, check_one
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Eager, and before anything else can import the submodule: importing ``lean_server.connect``
# binds the *module* as the package attribute ``connect``; this rebinds it to the function.
from lean_server.connect import connect

_EXPORTS: dict[str, str] = {
    # service and backends
    "LeanService": "lean_server.service",
    "RawResult": "lean_server.service",
    "Reservation": "lean_server.service",
    "LeanServerClient": "lean_server.client",
    "create_app": "lean_server.app",
    "ReplPool": "lean_server.pool",
    "PoolStats": "lean_server.pool",
    "OneShotBackend": "lean_server.oneshot",
    "Backend": "lean_server.backend",
    "split_header": "lean_server.header",
    "ResultCache": "lean_server.cache",
    "render_feedback": "lean_server.feedback",
    "evaluate": "lean_server.tiers",
    # contracts
    "Certificate": "lean_server.verdict",
    "EnvironmentStamp": "lean_server.verdict",
    "Message": "lean_server.verdict",
    "TierResult": "lean_server.verdict",
    "Verdict": "lean_server.verdict",
    "Violation": "lean_server.verdict",
    "Policy": "lean_server.policy",
    "resolve_policy": "lean_server.policy",
    "BacklogFull": "lean_server.checker",
    "Checker": "lean_server.checker",
    "CheckerUnavailable": "lean_server.checker",
    "LeanError": "lean_server.checker",
    "Priority": "lean_server.checker",
    "Snippet": "lean_server.checker",
    "check_one": "lean_server.checker",
    # trust
    "audit": "lean_server.trust",
    "classify_axioms": "lean_server.trust",
    "parse_axioms_message": "lean_server.trust",
    "trust_tiers": "lean_server.trust",
    "parse": "lean_server.source",
    "theorem_names": "lean_server.source",
}

__all__ = [
    "Backend",
    "BacklogFull",
    "Certificate",
    "Checker",
    "CheckerUnavailable",
    "EnvironmentStamp",
    "LeanError",
    "LeanServerClient",
    "LeanService",
    "Message",
    "OneShotBackend",
    "Policy",
    "PoolStats",
    "Priority",
    "RawResult",
    "ReplPool",
    "Reservation",
    "ResultCache",
    "Snippet",
    "TierResult",
    "Verdict",
    "Violation",
    "audit",
    "check_one",
    "classify_axioms",
    "connect",
    "create_app",
    "evaluate",
    "parse",
    "parse_axioms_message",
    "render_feedback",
    "resolve_policy",
    "split_header",
    "theorem_names",
    "trust_tiers",
]

if TYPE_CHECKING:
    from lean_server.app import create_app
    from lean_server.backend import Backend
    from lean_server.cache import ResultCache
    from lean_server.checker import (
        BacklogFull,
        Checker,
        CheckerUnavailable,
        LeanError,
        Priority,
        Snippet,
        check_one,
    )
    from lean_server.client import LeanServerClient
    from lean_server.feedback import render_feedback
    from lean_server.header import split_header
    from lean_server.oneshot import OneShotBackend
    from lean_server.policy import Policy, resolve_policy
    from lean_server.pool import PoolStats, ReplPool
    from lean_server.service import LeanService, RawResult, Reservation
    from lean_server.source import parse, theorem_names
    from lean_server.tiers import evaluate
    from lean_server.trust import audit, classify_axioms, parse_axioms_message, trust_tiers
    from lean_server.verdict import Certificate, EnvironmentStamp, Message, TierResult, Verdict, Violation


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lean_server' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
