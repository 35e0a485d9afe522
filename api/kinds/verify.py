"""``verify``: check Lean code (optionally against its sorry-stub) and return the certificate."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from api.errors import InfraError
from api.kinds.base import JobKind, KindContext, KindOutcome, LeanParams
from lean_server.checker import Snippet, check_one
from lean_server.policy import resolve_policy
from lean_server.verdict import Verdict


class VerifyParams(LeanParams):
    """Parameters of a ``verify`` job."""

    code: str = Field(
        min_length=1, description="The Lean file to check: imports/options header + declarations."
    )
    stub: str | None = Field(
        default=None,
        description="The sorry-stub the code must prove; enables the statement-match and legality tiers.",
    )
    policy_overrides: dict[str, Any] | None = Field(
        default=None, description="Per-request policy fields (see the Policy model of lean_server)."
    )
    timeout_s: float | None = Field(
        default=None, gt=0, le=3600, description="Deadline of the check, seconds."
    )

    @model_validator(mode="after")
    def _policy_resolves(self) -> VerifyParams:
        resolve_policy(self.policy, self.policy_overrides)  # raises ValueError -> 422
        return self


async def run(params: VerifyParams, ctx: KindContext) -> KindOutcome:
    checker = await ctx.resources.checker()
    await ctx.progress(stage="checking")
    snippet = Snippet(
        id=ctx.job_id,
        code=params.code,
        stub=params.stub,
        policy=params.policy,
        policy_overrides=params.policy_overrides,
        timeout_s=params.timeout_s,
    )
    cert = await check_one(checker, snippet, priority=ctx.priority)
    if cert.verdict is Verdict.INFRA_ERROR:
        raise InfraError("; ".join(cert.reasons) or "Lean backend failed")
    return KindOutcome(
        status="succeeded",
        result={"verdict": cert.verdict.value, "passed": cert.passed, "reasons": cert.reasons},
        certificate=cert.model_dump(mode="json"),
    )


KIND = JobKind(
    name="verify",
    params_model=VerifyParams,
    run=run,
    description="Check Lean code (against its stub when given) and return the certificate.",
)
