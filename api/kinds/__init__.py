"""Job kinds: name -> handler module. Adding a kind is one module with a ``KIND`` and one line here.

Each module defines ``KIND = JobKind(name, params_model, run, description)`` where ``run(params,
ctx)`` is async, gets the validated params model and a :class:`KindContext`, and returns a
:class:`KindOutcome` (optionally ``charge=``: the prover attempts a job is charged against its
key's daily attempt quota when accepted). Raise :class:`api.errors.InfraError` (or let a ``LeanError`` / connection
error escape) for infrastructure failures: those are retried with backoff; anything the job
itself concluded is a result, never retried.
"""

from __future__ import annotations

import importlib

from api.kinds.base import JobKind, KindContext, KindOutcome, LeanParams, Resources

KIND_MODULES: dict[str, str] = {
    "verify": "api.kinds.verify",
    "prove": "api.kinds.prove",
}


def load_kinds() -> dict[str, JobKind]:
    """A fresh registry of the product's job kinds (callers may add their own to the copy)."""
    kinds: dict[str, JobKind] = {}
    for name, module_name in KIND_MODULES.items():
        kind = importlib.import_module(module_name).KIND
        assert isinstance(kind, JobKind) and kind.name == name, module_name
        kinds[name] = kind
    return kinds


__all__ = ["KIND_MODULES", "JobKind", "KindContext", "KindOutcome", "LeanParams", "Resources", "load_kinds"]
