"""The API's exceptions. Every HTTP error leaves as ``{"error": {"code", "message", "detail"?}}``.

SorrylessError
└── ApiError                  an HTTP answer other than 2xx (status, code, headers)
└── QueueError                the job queue could not accept or reach a job
└── InfraError                a job kind hit an infrastructure failure (retried with backoff)
"""

from __future__ import annotations

from typing import Any

from sorryless.errors import SorrylessError


class ApiError(SorrylessError):
    """An error answer: HTTP status, stable code, message, optional detail and headers."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        detail: Any = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.detail = detail
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.detail is not None:
            error["detail"] = self.detail
        return {"error": error}


def too_many(code: str, message: str, retry_after: float, detail: Any = None) -> ApiError:
    """429 with a Retry-After header (whole seconds, at least 1)."""
    seconds = max(1, int(retry_after + 0.999))
    return ApiError(429, code, message, detail=detail, headers={"Retry-After": str(seconds)})


class QueueError(SorrylessError):
    """The job queue could not accept or reach a job (Redis down, script failure)."""


class InfraError(SorrylessError):
    """Infrastructure failure inside a job (Lean backend down, LLM unreachable): retried with backoff."""
