"""Root of sorryless's exception tree.

SorrylessError
├── ConfigError                 bad or missing configuration
├── lean_server.LeanError       talking to Lean failed (verdicts are never raised)
│   ├── BacklogFull             pool wait queue full (carries retry_after)
│   └── CheckerUnavailable      no backend configured or reachable
├── prover.ProverError          LLM or strategy failures (see prover)
└── api.QueueError              job queue failures (see api)
"""

from __future__ import annotations


class SorrylessError(Exception):
    """Root of every exception sorryless raises on purpose."""


class ConfigError(SorrylessError):
    """Configuration is missing or invalid."""
