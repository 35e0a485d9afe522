"""What a job kind is: a params model, an async ``run(params, ctx)``, and what it returns."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from lean_server.checker import Checker, Priority
from lean_server.policy import PolicyName
from sorryless.config import Settings

if TYPE_CHECKING:
    from prover.runner import ProverRunner


class Resources(Protocol):
    """Per-worker-process shared clients, created on first use."""

    async def checker(self) -> Checker: ...

    async def prover(self, *, memory: bool = True) -> ProverRunner:
        """The prover runner; ``memory=False``: one that neither reads nor writes the retrieval memory."""
        ...


EmitFn = Callable[[str, dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class KindContext:
    """What a running job may use."""

    settings: Settings
    job_id: str
    attempt: int
    priority: Priority
    resources: Resources
    emit: EmitFn

    async def progress(self, **data: Any) -> None:
        await self.emit("progress", data)


class LeanParams(BaseModel):
    """Options every Lean-checked kind takes (unknown fields are refused)."""

    model_config = ConfigDict(extra="forbid")

    policy: PolicyName | None = Field(
        default=None,
        description="Verification policy preset of every check: strict (default), sketch, lenient.",
    )
    environment: Literal["default"] = Field(
        default="default",
        description="Lean environment: the worker's configured toolchain + Mathlib (stamped on the certificate).",
    )


class KindOutcome(BaseModel):
    """What a kind's ``run`` returns. ``failed`` is a job that ran and failed on its own terms."""

    status: Literal["succeeded", "failed"] = "succeeded"
    result: dict[str, Any] = Field(default_factory=dict)
    certificate: dict[str, Any] | None = None
    cost: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


RunFn = Callable[[Any, KindContext], Awaitable[KindOutcome]]
ChargeFn = Callable[[Any, Settings], int]
"""Prover attempts a job may spend (validated params, settings): charged to the key's daily
attempt quota at submit."""


@dataclass(frozen=True)
class JobKind:
    """One job kind: ``name``, its params model (extra fields forbidden), its ``run``, and what a
    job costs of the daily attempt quota (``charge``; none: nothing)."""

    name: str
    params_model: type[BaseModel]
    run: RunFn
    description: str
    default_queue: Literal["interactive", "batch"] = "interactive"
    charge: ChargeFn | None = None

    def attempts(self, params: Any, settings: Settings) -> int:
        return self.charge(params, settings) if self.charge is not None else 0
