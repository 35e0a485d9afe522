"""sorryless/errors.py documents the exception tree: every class it names exists where it says,
descends from the parent it is drawn under, and the drawing names no class that does not exist."""

from __future__ import annotations

import importlib
import re

import sorryless.errors
from sorryless.errors import SorrylessError

# class name -> (module, documented parent)
DOCUMENTED: dict[str, tuple[str, str]] = {
    "ConfigError": ("sorryless.errors", "SorrylessError"),
    "SetupError": ("sorryless.setup_lean", "SorrylessError"),
    "NoNetwork": ("sorryless.setup_lean", "SetupError"),
    "StepFailed": ("sorryless.setup_lean", "SetupError"),
    "LeanError": ("lean_server.checker", "SorrylessError"),
    "BacklogFull": ("lean_server.checker", "LeanError"),
    "CheckerUnavailable": ("lean_server.checker", "LeanError"),
    "HttpError": ("lean_server.http_util", "SorrylessError"),
    "ClientGone": ("lean_server.http_util", "SorrylessError"),
    "ProverError": ("prover.errors", "SorrylessError"),
    "LLMError": ("prover.errors", "ProverError"),
    "EvalError": ("prover.eval.errors", "SorrylessError"),
    "ApiError": ("api.errors", "SorrylessError"),
    "QueueError": ("api.errors", "SorrylessError"),
    "InfraError": ("api.errors", "SorrylessError"),
}


def _resolve(name: str) -> type[BaseException]:
    if name == "SorrylessError":
        return SorrylessError
    module, _parent = DOCUMENTED[name]
    cls = getattr(importlib.import_module(module), name)
    assert isinstance(cls, type) and issubclass(cls, BaseException)
    return cls


def test_every_documented_class_exists_under_its_parent() -> None:
    for name, (_module, parent) in DOCUMENTED.items():
        assert issubclass(_resolve(name), _resolve(parent)), f"{name} is not a {parent}"


def test_the_drawing_names_exactly_the_documented_classes() -> None:
    doc = sorryless.errors.__doc__ or ""
    tree = doc[doc.index("SorrylessError\n") :]
    drawn = set(re.findall(r"\b[A-Z][A-Za-z]*(?:Error|Full|Unavailable|Failed|Gone|Network)\b", tree))
    assert drawn - {"SorrylessError"} == set(DOCUMENTED)


def test_infrastructure_failures_are_told_from_the_requests_fault() -> None:
    """What a worker retries and an eval resume re-runs: an unreachable, slow or garbling LLM and
    any Lean failure; never a rejected request or an unknown strategy/profile."""
    from lean_server.checker import BacklogFull, CheckerUnavailable, LeanError
    from prover.errors import (
        LLMBadRequest,
        LLMError,
        LLMProtocolError,
        LLMTimeout,
        LLMUnavailable,
        ProfileNotFound,
        StrategyUnavailable,
        TargetNotFound,
        is_infrastructure_failure,
    )

    retried = [
        LLMError("x"),
        LLMTimeout("x"),
        LLMUnavailable("x"),
        LLMProtocolError("x"),
        LeanError("x"),
        BacklogFull(1.0),
        CheckerUnavailable("x"),
    ]
    not_retried = [
        LLMBadRequest("x"),
        StrategyUnavailable("x"),
        ProfileNotFound("x"),
        TargetNotFound("x"),
        ValueError("x"),
    ]
    assert [is_infrastructure_failure(e) for e in retried] == [True] * len(retried)
    assert [is_infrastructure_failure(e) for e in not_retried] == [False] * len(not_retried)
