"""Root of sorryless's exception tree (each part's own module documents its branch in full).

SorrylessError
├── ConfigError                     sorryless.errors: configuration is missing or invalid
├── SetupError                      sorryless.setup_lean: setup-lean could not finish
│   ├── NoNetwork                   the network probe failed; nothing was installed
│   └── StepFailed                  an external command of the installation failed
├── LeanError                       lean_server.checker: talking to Lean failed (verdicts are never raised)
│   ├── BacklogFull                 pool wait queue full (carries retry_after)
│   └── CheckerUnavailable          no backend configured or reachable
├── HttpError, ClientGone           lean_server.http_util: lean-server answers / a client that went away
├── ProverError                     prover.errors: LLM (LLMError and its timeouts, refusals, protocol
│                                   errors), unknown strategy or profile, budget exhausted
├── EvalError                       prover.eval.errors: insufficient samples, missing dataset, unknown
│                                   problems, resumed run with another configuration, gateway job failed
└── ApiError, QueueError, InfraError
                                    api.errors: an HTTP error answer / the job queue / an infrastructure
                                    failure inside a job (retried with backoff)
"""

from __future__ import annotations


class SorrylessError(Exception):
    """Root of every exception sorryless raises on purpose."""


class ConfigError(SorrylessError):
    """Configuration is missing or invalid."""
