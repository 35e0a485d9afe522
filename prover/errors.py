"""The prover's exceptions.

ProverError(SorrylessError)
├── LLMError                    talking to the LLM server failed
│   ├── LLMTimeout              no answer (or no chunk) in time
│   ├── LLMUnavailable          connection refused / 429 / 5xx after retries
│   ├── LLMBadRequest           the server rejected the request (4xx, never retried)
│   └── LLMProtocolError        the answer could not be understood
├── StrategyUnavailable         strategy unknown, or needs an LLM that is not configured
├── ProfileNotFound             unknown model profile
├── InputFileError              the file to prove cannot be read as Lean source
└── TargetNotFound              the statement has no declaration to prove (also a ValueError)
"""

from __future__ import annotations

from lean_server.checker import LeanError
from sorryless.errors import SorrylessError


class ProverError(SorrylessError):
    """LLM or strategy failure."""


class LLMError(ProverError):
    """Talking to the LLM server failed."""


class LLMTimeout(LLMError):
    """The server did not answer (or stopped streaming) in time."""


class LLMUnavailable(LLMError):
    """The server is unreachable, overloaded (429) or failing (5xx), retries included."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class LLMBadRequest(LLMError):
    """The server rejected the request (4xx other than 429); never retried."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class LLMProtocolError(LLMError):
    """The server's answer could not be parsed as an OpenAI-compatible response."""


class StrategyUnavailable(ProverError):
    """Unknown strategy, or one that needs an LLM when none is configured."""


class ProfileNotFound(ProverError):
    """Unknown model profile name."""


class InputFileError(ProverError):
    """The file to prove cannot be read (missing, not UTF-8 text)."""


class TargetNotFound(ProverError, ValueError):
    """The statement has no declaration to prove (no ``sorry``-ed theorem, lemma or definition with
    a ``:=`` body): there is nothing to splice a proof into."""


def is_infrastructure_failure(exc: BaseException) -> bool:
    """Whether a search that stopped on ``exc`` failed through no fault of the request: the LLM
    server or Lean was unreachable, overloaded, too slow or answered garbage. Such a search is
    worth running again (a worker retries the job, ``sorryless eval`` re-runs the sample on resume);
    a rejected request, an unknown strategy or profile, or a statement without target is not."""
    if isinstance(exc, LeanError):
        return True
    return isinstance(exc, LLMError) and not isinstance(exc, LLMBadRequest)
