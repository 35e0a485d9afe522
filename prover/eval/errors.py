"""Batch evaluation's exceptions.

EvalError(SorrylessError)
├── InsufficientSamples         pass@k asked with fewer samples than k
├── DatasetUnavailable          benchmark file missing and no way to download it
├── UnknownProblems             --ids names problems the benchmark does not have
└── RunConfigMismatch           resuming a run directory with a different configuration
"""

from __future__ import annotations

from sorryless.errors import SorrylessError


class EvalError(SorrylessError):
    """Batch evaluation failed."""


class InsufficientSamples(EvalError, ValueError):
    """pass@k needs at least k samples per problem (n >= k)."""


class DatasetUnavailable(EvalError):
    """The benchmark file is not on disk and could not be downloaded."""


class UnknownProblems(EvalError):
    """Problem ids asked for are not in the benchmark split."""


class RunConfigMismatch(EvalError):
    """The run directory holds a run with another configuration."""
