"""`ProverRunner`: prove one task with a strategy, a budget and a model profile.

Used in-process (CLI, evaluation) and by the API workers. Progress goes to ``on_event``;
cancelling the calling task aborts in-flight LLM requests, drops pending Lean checks and re-raises
``CancelledError``. Success is a PASS certificate from lean_server (compile + axioms + the trust
tiers, since every snippet carries ``stub=task.statement``), never just the absence of errors.
"""

from __future__ import annotations

import asyncio

from lean_server.checker import Checker, LeanError, Priority
from prover.budget import Meter
from prover.errors import (
    LLMError,
    LLMUnavailable,
    ProverError,
    StrategyUnavailable,
    is_infrastructure_failure,
)
from prover.llm import LLM
from prover.memory import ProofMemory
from prover.profiles import get_profile
from prover.strategies import build_strategy
from prover.strategies.base import Context, Strategy
from prover.types import Budget, EventSink, ProofOutcome, ProofTask
from sorryless.config import Settings
from sorryless.logging import get_logger

_log = get_logger(__name__)


class ProverRunner:
    """Holds the shared pieces (settings, checker, LLM, memory); one ``prove`` call per task."""

    def __init__(
        self,
        settings: Settings,
        checker: Checker,
        llm: LLM | None = None,
        memory: ProofMemory | None = None,
        *,
        priority: Priority = Priority.INTERACTIVE,
    ) -> None:
        self.settings = settings
        self.checker = checker
        self.llm = llm
        self.memory = memory
        self.priority = priority

    def default_strategy(self) -> str:
        if self.settings.prover_default_strategy:
            return self.settings.prover_default_strategy
        return "repair" if self.llm is not None else "portfolio"

    def resolve_strategy(self, strategy: str | None) -> Strategy:
        """The strategy called ``strategy`` (default: the runner's); raises StrategyUnavailable."""
        return build_strategy(
            strategy or self.default_strategy(),
            parallel=self.settings.prover_parallel,
            retrieval_k=self.settings.prover_retrieval_k,
        )

    async def preflight(self, strategy: str | None = None, profile: str | None = None) -> Strategy:
        """Check before any work that the strategy and profile exist and that the LLM a strategy
        needs is configured and answering; raises StrategyUnavailable, ProfileNotFound or
        LLMUnavailable with a message that says what to change."""
        chosen = self.resolve_strategy(strategy)
        get_profile(profile or self.settings.llm_profile)
        self._require_llm(chosen)
        if not chosen.needs_llm or self.llm is None:
            return chosen
        ready = getattr(self.llm, "ready", None)
        if ready is not None and not await ready():
            where = getattr(self.llm, "base_url", None) or self.settings.llm_base_url
            raise LLMUnavailable(
                f"the LLM server at {where} is not reachable or not ready "
                "(neither /health_generate nor /v1/models answered)"
            )
        return chosen

    def _require_llm(self, chosen: Strategy) -> None:
        """StrategyUnavailable when ``chosen`` cannot run at all without the LLM that is missing."""
        if chosen.needs_llm and self.llm is None and not has_llm_free_part(chosen):
            raise StrategyUnavailable(
                f"strategy {chosen.name!r} needs an LLM: pass --llm-url (or set SORRYLESS_LLM_BASE_URL), "
                "or use --strategy portfolio"
            )

    def default_budget(self) -> Budget:
        return Budget(max_attempts=self.settings.prover_default_budget)

    async def aclose(self) -> None:
        """Close the LLM client and the checker."""
        if self.llm is not None:
            await self.llm.aclose()
        await self.checker.aclose()

    async def prove(
        self,
        task: ProofTask,
        *,
        strategy: str | Strategy | None = None,
        budget: Budget | None = None,
        profile: str | None = None,
        on_event: EventSink | None = None,
        policy: str | None = None,
        job_id: str | None = None,
    ) -> ProofOutcome:
        chosen = (
            strategy
            if strategy is not None and not isinstance(strategy, str)
            else self.resolve_strategy(strategy)
        )
        prof = get_profile(profile or self.settings.llm_profile)
        meter = Meter(budget or self.default_budget())
        ctx = Context(
            settings=self.settings,
            checker=self.checker,
            llm=self.llm,
            profile=prof,
            memory=self.memory,
            meter=meter,
            task=task,
            on_event=on_event,
            policy=policy,
            priority=self.priority,
        )
        outcome = ProofOutcome(
            task_id=task.id,
            solved=False,
            strategy=chosen.name,
            profile=prof.name if chosen.needs_llm else None,
            model=self.llm.model if (self.llm is not None and chosen.needs_llm) else None,
        )
        log = _log.bind(task_id=task.id, job_id=job_id, strategy=chosen.name)
        try:
            self._require_llm(chosen)
            ctx.parts  # noqa: B018 - fail early on a statement without a target
            wall = meter.budget.max_wall_s
            async with asyncio.timeout(wall):
                solved = await chosen.run(task, ctx)
            if solved is not None and solved.certificate is not None and solved.certificate.passed:
                outcome.solved = True
                outcome.proof = solved.candidate
                outcome.certificate = solved.certificate
                outcome.stopped = "solved"
                if self.memory is not None and solved.candidate is not None:
                    self.memory.record_verified(task, solved.candidate, solved.certificate, job_id=job_id)
            else:
                outcome.stopped = "budget"
                outcome.error = meter.exhausted()
        except TimeoutError:
            outcome.stopped = "deadline"
            outcome.error = f"max_wall_s={meter.budget.max_wall_s} reached"
        except asyncio.CancelledError:
            outcome.stopped = "cancelled"
            log.info("proof search cancelled", attempts=len(ctx.attempts))
            raise
        # before ValueError: TargetNotFound is a ProverError and a ValueError
        except (LLMError, LeanError, ProverError) as exc:
            outcome.stopped = "error"
            outcome.error = f"{type(exc).__name__}: {exc}"
            outcome.infra_failure = is_infrastructure_failure(exc)
            log.warning("proof search failed", error=outcome.error, infra=outcome.infra_failure)
        except ValueError as exc:  # statement without a provable target
            outcome.stopped = "error"
            outcome.error = str(exc)
        finally:
            outcome.attempts = ctx.attempts
            outcome.cost = meter.finish()
        await ctx.emit(
            "finished",
            None,
            solved=outcome.solved,
            stopped=outcome.stopped,
            attempts=outcome.cost.attempts,
            compile_calls=outcome.cost.compile_calls,
            error=outcome.error,
        )
        return outcome


def has_llm_free_part(strategy: Strategy) -> bool:
    """A composed strategy with a part that runs without an LLM (e.g. ``portfolio,repair``)."""
    parts: list[Strategy] = list(getattr(strategy, "parts", None) or [])
    return any(not p.needs_llm for p in parts)


def build_runner(
    settings: Settings,
    checker: Checker | None = None,
    *,
    llm: LLM | None = None,
    memory: ProofMemory | None = None,
) -> ProverRunner:
    """A runner from settings: checker from ``lean_server.connect`` (HTTP client or in-process
    service), an LLM only when ``settings.llm_base_url`` is set, the JSONL memory under data_dir."""
    if checker is None:
        from lean_server.connect import connect

        checker = connect(settings)
    if llm is None and settings.llm_base_url:
        from prover.llm import OpenAICompatibleLLM

        llm = OpenAICompatibleLLM(settings)
    if memory is None:
        memory = ProofMemory.from_settings(settings, embeddings=settings.prover_memory_embeddings)
    return ProverRunner(settings, checker, llm, memory)
