"""Verification policies: what a check accepts.

A policy is chosen by name (``strict`` is the default, ``sketch`` allows ``sorry`` gaps,
``lenient`` allows native evaluation and search tactics) and can be overridden field by field
per request. Both lean_server (axiom tier) and the trust checker (legality tier) read it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

PolicyName = Literal["strict", "sketch", "lenient"]

STANDARD_AXIOMS: frozenset[str] = frozenset({"propext", "Classical.choice", "Quot.sound"})


class Policy(BaseModel):
    """What a check accepts. Frozen: derive a changed copy with :meth:`with_overrides`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: PolicyName = Field(default="strict", description="Preset this policy started from.")
    allowed_axioms: tuple[str, ...] = Field(
        default=tuple(sorted(STANDARD_AXIOMS)), description="Axioms a proof may depend on."
    )
    allow_sorry: bool = Field(default=False, description="`sorry`/`admit` allowed (sketches).")
    allow_native: bool = Field(
        default=False,
        description="Native evaluation (`native_decide`, `decide +native`, Lean.ofReduceBool, "
        "Lean.trustCompiler, <thm>._native.*) allowed.",
    )
    allow_search_tactics: bool = Field(
        default=False, description="`apply?`, `exact?`, `rw?`, `hint` allowed."
    )
    allowed_imports: tuple[str, ...] | None = Field(
        default=None,
        description="Module prefixes a candidate may import (None = the stub's own imports only, "
        "or anything when there is no stub).",
    )
    max_heartbeats: int | None = Field(
        default=None,
        description="Largest `maxHeartbeats` a candidate may set (None = may not change it; 0 means unlimited "
        "and is only allowed when this is 0).",
    )
    allow_eval_commands: bool = Field(
        default=False, description="`#eval`, `run_cmd`, `run_tac`, `run_elab` allowed."
    )
    banned_options: tuple[str, ...] = Field(
        default=(
            "debug.skipKernelTC",
            "skip_proofs",
            "warningAsError",
            "check_evidence",
            "debug.byAsSorry",
            "Elab.async",
            "trace.profiler",
        ),
        description="`set_option` names (or prefixes) a candidate may not set.",
    )

    def with_overrides(self, overrides: dict[str, Any] | None) -> Policy:
        """A copy with the given fields replaced (validated)."""
        if not overrides:
            return self
        data = self.model_dump()
        data.update(overrides)
        return Policy.model_validate(data)


def preset(name: PolicyName) -> Policy:
    """The named preset."""
    if name == "strict":
        return Policy()
    if name == "sketch":
        return Policy(name="sketch", allow_sorry=True, allowed_axioms=(*sorted(STANDARD_AXIOMS), "sorryAx"))
    if name == "lenient":
        return Policy(
            name="lenient",
            allow_native=True,
            allow_search_tactics=True,
            allow_eval_commands=True,
            max_heartbeats=0,
        )
    raise ValueError(f"unknown policy {name!r}; choose strict, sketch or lenient")


def resolve_policy(name: str | None = None, overrides: dict[str, Any] | None = None) -> Policy:
    """Policy from a preset name (default ``strict``) plus per-request overrides."""
    chosen = name or "strict"
    if chosen not in ("strict", "sketch", "lenient"):
        raise ValueError(f"unknown policy {chosen!r}; choose strict, sketch or lenient")
    return preset(chosen).with_overrides(overrides)  # type: ignore[arg-type]
