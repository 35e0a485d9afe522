"""prover package: LLM client, model profiles, strategies, retrieval memory and the runner.

Public names are imported lazily (``prover.build_runner`` etc.) so importing a submodule such as
``prover.types`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "Meter": "prover.budget",
    "InputFileError": "prover.errors",
    "LLMBadRequest": "prover.errors",
    "LLMError": "prover.errors",
    "LLMProtocolError": "prover.errors",
    "LLMTimeout": "prover.errors",
    "LLMUnavailable": "prover.errors",
    "ProfileNotFound": "prover.errors",
    "ProverError": "prover.errors",
    "StrategyUnavailable": "prover.errors",
    "Candidate": "prover.extract",
    "extract": "prover.extract",
    "find_sorry_theorems": "prover.files",
    "tasks_from_text": "prover.files",
    "LLM": "prover.llm",
    "ChatMessage": "prover.llm",
    "Completion": "prover.llm",
    "CompletionRequest": "prover.llm",
    "OpenAICompatibleLLM": "prover.llm",
    "MemoryRecord": "prover.memory",
    "ProofMemory": "prover.memory",
    "Profile": "prover.profiles",
    "get_profile": "prover.profiles",
    "profile_names": "prover.profiles",
    "ProverRunner": "prover.runner",
    "build_runner": "prover.runner",
    "build_strategy": "prover.strategies",
    "Attempt": "prover.types",
    "Budget": "prover.types",
    "Cost": "prover.types",
    "EventSink": "prover.types",
    "ProofOutcome": "prover.types",
    "ProofTask": "prover.types",
    "ProverEvent": "prover.types",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'prover' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
