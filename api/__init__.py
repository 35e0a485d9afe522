"""The sorryless service: HTTP gateway, Redis job queue and workers.

Public names are imported lazily (``api.create_app`` etc.) so ``sorryless --help`` and
light imports such as ``api.errors`` stay fast.

- :func:`create_app` — the FastAPI gateway for a :class:`~sorryless.config.Settings`.
- :func:`run_worker` — serve the interactive and batch queues (``sorryless worker``).
- :class:`JobQueue` — the thin interface over saq (submit, abort, depth, workers, run_workers).
- :class:`JobStore`, :class:`JobRecord`, :class:`JobEvents` — the durable job record and its event stream.
- :class:`JobKind`, :class:`KindContext`, :class:`KindOutcome`, :func:`load_kinds` — job kinds.
- :class:`ApiError`, :class:`QueueError`, :class:`InfraError` — the API's exceptions.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "create_app": "api.app",
    "run_worker": "api.worker",
    "JobQueue": "api.queue",
    "JobStore": "api.store",
    "JobRecord": "api.store",
    "JobEvents": "api.events",
    "JobKind": "api.kinds",
    "KindContext": "api.kinds",
    "KindOutcome": "api.kinds",
    "load_kinds": "api.kinds",
    "ApiError": "api.errors",
    "QueueError": "api.errors",
    "InfraError": "api.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'api' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return __all__
