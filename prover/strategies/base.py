"""The context a strategy runs in: generate, extract, check, count, report.

A strategy is a small object with ``name`` and ``async run(task, ctx) -> Attempt | None`` (the
PASS attempt, or None when the budget ran out). Everything it spends goes through the context's
:class:`~prover.budget.Meter`, and everything it does is reported as a :class:`ProverEvent`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from lean_server.checker import Checker, Priority, Snippet
from lean_server.verdict import Certificate
from prover.budget import Meter
from prover.errors import StrategyUnavailable
from prover.extract import Candidate, split_target
from prover.lean_text import StubParts
from prover.llm import LLM, ChatMessage, Completion
from prover.memory import MemoryRecord, ProofMemory
from prover.profiles.base import Profile, Prompt
from prover.types import Attempt, EventKind, EventSink, ProofTask, ProverEvent
from sorryless.config import Settings

_T = TypeVar("_T")


class Strategy(Protocol):
    name: str

    @property
    def needs_llm(self) -> bool: ...

    async def run(self, task: ProofTask, ctx: Context) -> Attempt | None: ...


@dataclass
class Generated:
    """One model answer turned into an attempt, with what is needed to repair it."""

    attempt: Attempt
    prompt: Prompt
    output: str
    candidate: Candidate | None
    certificate: Certificate | None = None


@dataclass
class Context:
    """Everything a strategy may use for one task."""

    settings: Settings
    checker: Checker
    llm: LLM | None
    profile: Profile
    memory: ProofMemory | None
    meter: Meter
    task: ProofTask
    on_event: EventSink | None = None
    policy: str | None = None
    priority: Priority = Priority.INTERACTIVE
    attempts: list[Attempt] = field(default_factory=list)
    retrieved: list[MemoryRecord] = field(default_factory=list)
    _parts: StubParts | None = None

    @property
    def parts(self) -> StubParts:
        if self._parts is None:
            self._parts = split_target(self.task.statement, self.task.target)
        return self._parts

    # ---- events ------------------------------------------------------------------------
    async def emit(
        self, kind: EventKind, attempt: int | None = None, *, record: Attempt | None = None, **data: Any
    ) -> None:
        if self.on_event is not None:
            await self.on_event(
                ProverEvent(kind=kind, task_id=self.task.id, attempt=attempt, data=data, record=record)
            )

    def new_attempt(self, strategy: str, *, sample: int, round: int) -> Attempt:
        attempt = Attempt(index=len(self.attempts), sample=sample, round=round, strategy=strategy)
        attempt.memory_hits = [r.id for r in self.retrieved]
        self.attempts.append(attempt)
        return attempt

    # ---- LLM ---------------------------------------------------------------------------
    def require_llm(self) -> LLM:
        if self.llm is None:
            raise StrategyUnavailable("this strategy needs an LLM (set SORRYLESS_LLM_BASE_URL or --llm-url)")
        return self.llm

    async def generate(self, prompt: Prompt, n: int) -> list[Completion]:
        llm = self.require_llm()
        fields: dict[str, Any] = {
            "temperature": self.settings.llm_temperature,
            "top_p": self.settings.llm_top_p,
            "max_tokens": self.settings.llm_max_tokens,
        }
        fields.update(self.profile.sampling())
        request = prompt.request(n=n, rid=uuid.uuid4().hex, **fields)
        started = time.monotonic()
        completions: list[Completion] = []
        try:
            completions = await llm.complete(request)
        finally:  # a call that failed or was cancelled (aborted) still counts, without its tokens
            self.meter.record_llm(completions, time.monotonic() - started)
        return completions

    # ---- Lean --------------------------------------------------------------------------
    def snippet(self, attempt: Attempt, code: str) -> Snippet:
        """The check of a candidate: ``stub`` enables the statement and legality tiers."""
        return Snippet(
            id=f"{self.task.id}#{attempt.index}", code=code, stub=self.task.statement, policy=self.policy
        )

    async def check_many(
        self, items: Sequence[tuple[Attempt, str]]
    ) -> AsyncGenerator[tuple[Attempt, Certificate]]:
        """Check candidates together; yields in completion order (closing early drops the rest)."""
        if not items:
            return
        by_id = {f"{self.task.id}#{a.index}": a for a, _ in items}
        snippets = [self.snippet(a, code) for a, code in items]
        started = time.monotonic()
        stream = self.checker.check(snippets, priority=self.priority)
        try:
            async for cert in stream:
                attempt = by_id.get(cert.id)
                if attempt is None:
                    continue
                seconds = _lean_seconds(cert, time.monotonic() - started)
                self.meter.record_check(seconds)
                attempt.verdict = cert.verdict
                attempt.certificate = cert
                await self.emit(
                    "verdict",
                    attempt.index,
                    record=attempt,
                    verdict=cert.verdict.value,
                    reasons=cert.reasons[:5],
                    cached=cert.cached,
                )
                yield attempt, cert
        finally:
            await _close_stream(stream)

    async def check_tool_code(self, code: str) -> Certificate:
        """A model's own compiler call (TIR): compile only, no statement tiers."""
        snippet = Snippet(id=f"{self.task.id}#tool-{uuid.uuid4().hex[:8]}", code=code, policy=self.policy)
        started = time.monotonic()
        stream = self.checker.check([snippet], priority=self.priority)
        try:
            async for cert in stream:
                self.meter.record_check(_lean_seconds(cert, time.monotonic() - started), tool_call=True)
                return cert
        finally:
            await _close_stream(stream)
        raise StrategyUnavailable("checker returned no certificate for a tool call")

    # ---- one attempt end to end ----------------------------------------------------------
    async def answer(
        self, strategy: str, prompt: Prompt, completion: Completion, *, sample: int, round: int
    ) -> Generated:
        """Turn a completion into an attempt with an extracted candidate (tool loop included)."""
        attempt = self.new_attempt(strategy, sample=sample, round=round)
        await self.emit("attempt_started", attempt.index, sample=sample, round=round, strategy=strategy)
        completion, prompt = await self._tool_loop(prompt, completion, attempt)
        attempt.finish_reason = completion.finish_reason
        attempt.prompt_tokens += completion.prompt_tokens
        attempt.completion_tokens += completion.completion_tokens
        attempt.seconds += completion.seconds
        candidate: Candidate | None = None
        if completion.truncated:
            attempt.error = "truncated: the generation hit max_tokens"
        else:
            candidate = self.profile.extract(completion.text, self.task, continuation=prompt.continuation)
            if candidate is None:
                attempt.error = "no Lean proof found in the model output"
        if candidate is not None:
            attempt.candidate = candidate.code
            await self.emit(
                "candidate_extracted", attempt.index, chars=len(candidate.code), source=candidate.source
            )
        else:
            await self.emit("verdict", attempt.index, record=attempt, verdict=None, error=attempt.error)
        return Generated(attempt=attempt, prompt=prompt, output=completion.text, candidate=candidate)

    async def _tool_loop(
        self, prompt: Prompt, completion: Completion, attempt: Attempt
    ) -> tuple[Completion, Prompt]:
        """Model-native tool calls (TIR): compile the code, answer with the result, generate again.

        Every generation after a tool result is one more attempt against the budget (LongCat's
        definition: parallel inferences x tool calls <= the budget), so pass@32 stays 32
        generations; the tool's compile is a compile call (and a ``tool_calls`` count)."""
        profile = self.profile
        calls = 0
        while profile.max_tool_calls and calls < profile.max_tool_calls and not completion.truncated:
            call = profile.parse_tool_call(completion.text)
            if call is None or "lean4_code" not in call.arguments:
                break
            if not self.meter.can_use_tool() or not self.meter.reserve(1):
                await self.emit("log", attempt.index, tool=call.name, skipped="budget")
                break
            calls += 1
            cert = await self.check_tool_code(call.arguments["lean4_code"])
            await self.emit(
                "log", attempt.index, tool=call.name, tool_round=calls, verdict=cert.verdict.value
            )
            prompt = Prompt(
                messages=(
                    *prompt.messages,
                    ChatMessage(role="assistant", content=call.text_before),
                    profile.tool_result(call, cert),
                )
            )
            attempt.prompt_tokens += completion.prompt_tokens
            attempt.completion_tokens += completion.completion_tokens
            (completion,) = (await self.generate(prompt, 1))[:1]
        return completion, prompt

    async def check_generated(self, items: Sequence[Generated]) -> Generated | None:
        """Check every candidate; the first PASS (remaining checks dropped) or None."""
        todo = [(g.attempt, g.candidate.code) for g in items if g.candidate is not None]
        by_index = {g.attempt.index: g for g in items}
        async for attempt, cert in self.check_many(todo):
            gen = by_index[attempt.index]
            gen.certificate = cert
            if cert.passed:
                return gen
        return None


async def _close_stream(stream: AsyncIterator[Certificate]) -> None:
    """Close a checker's stream early (drops the checks it has not answered yet)."""
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()


def _lean_seconds(cert: Certificate, fallback: float) -> float:
    if cert.timings:
        total = cert.timings.get("total")
        return float(total) if total is not None else float(sum(cert.timings.values()))
    return fallback
