"""ProverRunner end to end: fake OpenAI server + real LeanService over the fake REPL."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lean_server.service import LeanService
from lean_server.verdict import Verdict
from prover.llm import OpenAICompatibleLLM
from prover.memory import ProofMemory
from prover.runner import ProverRunner, build_runner
from prover.strategies import RepairStrategy
from prover.types import Budget, ProofTask, ProverEvent
from sorryless.config import Settings
from tests.fakes.fake_llm import FakeLLMScript, Reply
from tests.prover.conftest import STUB, lean_reply

BAD = lean_reply("linarith -- FAKE:error=linarith failed to find a contradiction")
GOOD = lean_reply("omega")
TASK = ProofTask(id="add_zero", statement=STUB)


def _all_text(body: dict[str, Any]) -> str:
    if "messages" in body:
        return "\n".join(str(m.get("content")) for m in body["messages"])
    return str(body.get("prompt"))


def fixed_by_feedback(body: dict[str, Any]) -> list[Reply]:
    """The fake model fixes its proof once the Lean error is in the prompt."""
    return [GOOD if "linarith failed" in _all_text(body) else BAD]


@pytest.fixture
def runner(
    llm_settings: Settings, llm: OpenAICompatibleLLM, service: LeanService, tmp_path: Path
) -> ProverRunner:
    return ProverRunner(llm_settings, service, llm, ProofMemory(tmp_path / "memory.jsonl"))


async def test_whole_sampling_solves_with_a_pass_certificate(
    runner: ProverRunner, script: FakeLLMScript
) -> None:
    script.replies = [BAD, GOOD]
    events: list[ProverEvent] = []

    async def sink(e: ProverEvent) -> None:
        events.append(e)

    out = await runner.prove(TASK, strategy="whole", budget=Budget(max_attempts=4), on_event=sink)
    assert out.solved and out.stopped == "solved"
    assert out.certificate is not None and out.certificate.verdict is Verdict.PASS
    assert out.certificate.tier("statement") is not None  # trust tiers ran: the snippet carried the stub
    assert out.proof is not None and out.proof.rstrip().endswith("omega")
    assert out.cost.samples == 4 and out.cost.attempts == 4 and out.cost.llm_calls == 1
    assert script.bodies()[0]["n"] == 4
    assert out.cost.prompt_tokens > 0 and out.cost.completion_tokens > 0 and out.cost.compile_calls >= 1
    kinds = {e.kind for e in events}
    assert {"attempt_started", "candidate_extracted", "verdict", "finished"} <= kinds
    # a verdict event carries its attempt for in-process listeners (the eval's live attempt log),
    # but never serialises it (SSE clients get the event's data only)
    checked = [e for e in events if e.kind == "verdict" and e.data.get("verdict") is not None]
    assert checked and all(e.record is not None and e.record.index == e.attempt for e in checked)
    passed = [e.record for e in checked if e.record is not None and e.record.verdict is Verdict.PASS]
    assert passed and passed[0].candidate == out.proof and passed[0].certificate is not None
    assert all("record" not in e.model_dump(mode="json") for e in events)
    assert len(runner.memory or []) == 1  # the verified proof joined the memory


async def test_repair_round_consumes_lean_feedback(runner: ProverRunner, script: FakeLLMScript) -> None:
    script.replies = fixed_by_feedback
    out = await runner.prove(
        TASK,
        strategy=RepairStrategy(parallel=1),
        budget=Budget(max_attempts=4, max_repair_rounds=2),
        profile="goedel-v2",
    )
    assert out.solved
    bodies = script.bodies("/v1/chat/completions")
    assert len(bodies) == 2
    assert "linarith failed" not in _all_text(bodies[0])
    round2 = bodies[1]["messages"]
    assert [m["role"] for m in round2] == ["user", "assistant", "user"]
    assert "linarith failed to find a contradiction" in round2[-1]["content"]
    assert (
        "<error>" in round2[-1]["content"] and "The proof (Round 0) is not correct" in round2[-1]["content"]
    )
    assert [(a.sample, a.round, a.verdict) for a in out.attempts] == [
        (0, 0, Verdict.LEAN_ERROR),
        (0, 1, Verdict.PASS),
    ]
    assert out.cost.repair_rounds == 1 and out.cost.samples == 1 and out.cost.attempts == 2


async def test_oprover_repair_prompt_carries_last_attempt_and_errors(
    runner: ProverRunner, script: FakeLLMScript
) -> None:
    script.replies = fixed_by_feedback
    out = await runner.prove(
        TASK, strategy=RepairStrategy(parallel=1), budget=Budget(max_attempts=2), profile="oprover"
    )
    assert out.solved
    (msg,) = script.bodies()[1]["messages"]
    assert "**Previous Failed Attempt:**" in msg["content"] and "FAKE:error=linarith failed" in msg["content"]
    assert "**Error Messages:**\n- line" in msg["content"]


async def test_budget_exhaustion_counts_repairs_as_attempts(
    runner: ProverRunner, script: FakeLLMScript
) -> None:
    script.replies = [BAD]
    out = await runner.prove(
        TASK, strategy=RepairStrategy(parallel=1), budget=Budget(max_attempts=3, max_repair_rounds=1)
    )
    assert not out.solved and out.stopped == "budget" and out.proof is None and out.certificate is None
    assert "max_attempts=3" in (out.error or "")
    assert out.cost.attempts == 3 and out.cost.samples == 2 and out.cost.repair_rounds == 1
    assert len(script.bodies()) == 3 and out.cost.compile_calls == 3
    capped = await runner.prove(TASK, strategy="whole", budget=Budget(max_attempts=10, max_compile_calls=2))
    assert capped.cost.compile_calls <= 2 and not capped.solved


async def test_truncated_generations_are_not_checked(runner: ProverRunner, script: FakeLLMScript) -> None:
    script.replies = [GOOD]
    runner.settings = runner.settings.model_copy(update={"llm_max_tokens": 5})
    out = await runner.prove(TASK, strategy="whole", budget=Budget(max_attempts=2))
    assert not out.solved
    assert out.cost.truncated == 2 and out.cost.compile_calls == 0
    assert all(a.finish_reason == "length" and a.error and "truncated" in a.error for a in out.attempts)


async def test_retrieval_grows_online_and_never_leaks(runner: ProverRunner, script: FakeLLMScript) -> None:
    first = ProofTask(id="p1", statement=STUB.replace("add_zero'", "p1"), benchmark="minif2f", split="test")
    script.replies = [GOOD.replace("add_zero'", "p1")]
    assert (await runner.prove(first, strategy="whole", budget=Budget(max_attempts=1))).solved
    assert runner.memory is not None and len(runner.memory) == 1
    hits: list[ProverEvent] = []

    async def sink(e: ProverEvent) -> None:
        if e.kind == "memory_hit":
            hits.append(e)

    related = ProofTask(id="p2", statement=STUB.replace("add_zero'", "p2").replace("0 < x", "1 < x"))
    script.replies = [GOOD.replace("add_zero'", "p2")]
    assert (
        await runner.prove(related, strategy="retrieval", budget=Budget(max_attempts=1), on_event=sink)
    ).solved
    assert hits and hits[0].data["task_ids"] == ["p1"]
    assert "theorem p1" in _all_text(script.bodies()[-1])
    # the same benchmark statement again: its own proof must not be shown
    hits.clear()
    again = ProofTask(id="p1", statement=first.statement, benchmark="minif2f", split="test")
    script.replies = [GOOD.replace("add_zero'", "p1")]
    await runner.prove(again, strategy="retrieval", budget=Budget(max_attempts=1), on_event=sink)
    assert all("p1" not in e.data["task_ids"] for e in hits)
    assert (
        "theorem p1 (x : ℕ) (h₀ : 0 < x) :\n    x + 0 = x := by\n  omega"
        not in _all_text(script.bodies()[-1]).split("Complete the following")[0]
    )


@pytest.mark.parametrize("strategy", ["whole", "repair"])
async def test_cancel_aborts_inflight_llm_requests(
    runner: ProverRunner, script: FakeLLMScript, strategy: str
) -> None:
    script.delay_s = 10.0
    task = asyncio.create_task(runner.prove(TASK, strategy=strategy, budget=Budget(max_attempts=2)))
    for _ in range(300):
        if script.bodies("/v1/chat/completions"):
            break
        await asyncio.sleep(0.01)
    rid = script.bodies("/v1/chat/completions")[0]["rid"]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert rid in script.aborted_rids


async def test_wall_deadline_stops_and_aborts(runner: ProverRunner, script: FakeLLMScript) -> None:
    script.delay_s = 10.0
    out = await runner.prove(TASK, strategy="whole", budget=Budget(max_attempts=2, max_wall_s=0.3))
    assert out.stopped == "deadline" and not out.solved
    assert script.aborted_rids


async def test_llm_calls_cut_by_the_deadline_are_still_counted(
    runner: ProverRunner, script: FakeLLMScript
) -> None:
    script.delay_s = 10.0
    out = await runner.prove(TASK, strategy="whole", budget=Budget(max_attempts=2, max_wall_s=0.3))
    assert out.stopped == "deadline"
    assert out.cost.llm_calls == len(script.bodies("/v1/chat/completions")) == 1
    assert out.cost.llm_seconds >= 0.25 and out.cost.completion_tokens == 0


async def test_longcat_tool_loop(runner: ProverRunner, script: FakeLLMScript) -> None:
    call = (
        "<longcat_think>check first</longcat_think><longcat_tool_call>lean4_compiler\n"
        "<longcat_arg_key>lean4_code</longcat_arg_key>\n<longcat_arg_value>import Mathlib\n"
        "theorem probe : 1 = 1 := by rfl -- FAKE:error=probe failed</longcat_arg_value>\n</longcat_tool_call>"
    )

    def replies(body: dict[str, Any]) -> list[Reply]:
        return [GOOD if any(m["role"] == "tool" for m in body["messages"]) else call]

    script.replies = replies
    out = await runner.prove(TASK, strategy="whole", budget=Budget(max_attempts=2), profile="longcat")
    assert out.solved
    assert out.cost.tool_calls == 1 and out.cost.compile_calls == 2
    assert out.cost.samples == 1 and out.cost.attempts == 2 and out.cost.llm_calls == 2
    second = script.bodies()[1]["messages"]
    assert second[-2]["role"] == "assistant" and second[-2]["content"].endswith("</longcat_tool_call>")
    tool = second[-1]
    assert tool["role"] == "tool" and tool["name"] == "lean4_compiler"
    info = json.loads(tool["content"])["info"]
    assert info["pass"] is False and info["errors"][0]["data"] == "probe failed"


async def test_llm_strategy_without_llm_is_an_error(settings: Settings, service: LeanService) -> None:
    runner = ProverRunner(settings, service, None, None)
    out = await runner.prove(TASK, strategy="repair")
    assert out.stopped == "error" and "needs an LLM" in (out.error or "")


async def test_portfolio_is_the_default_without_llm(
    settings: Settings, repl_rules: Callable[[list[dict[str, object]]], None]
) -> None:
    repl_rules(
        [
            {
                "match": r":= by\n  (rfl|decide|simp)\n",
                "messages": [
                    {
                        "severity": "error",
                        "pos": {"line": 1, "column": 0},
                        "endPos": None,
                        "data": "tactic failed",
                    }
                ],
            }
        ]
    )
    service = LeanService(settings)
    runner = build_runner(settings, service)
    try:
        assert runner.llm is None and runner.default_strategy() == "portfolio"
        out = await runner.prove(TASK, budget=Budget(max_attempts=3))
        assert out.strategy == "portfolio" and out.solved and out.proof is not None
        assert out.proof.rstrip().endswith("norm_num")
        assert out.cost.llm_calls == 0 and out.cost.attempts == 3
        failing = await runner.prove(TASK, budget=Budget(max_attempts=2))
        assert not failing.solved and failing.cost.attempts == 2
        assert {a.verdict for a in failing.attempts} == {Verdict.LEAN_ERROR}
    finally:
        await service.aclose()


async def test_llm_errors_end_the_search_with_an_error_outcome(
    runner: ProverRunner, script: FakeLLMScript
) -> None:
    script.fail_next(3, 400)
    out = await runner.prove(TASK, strategy="repair", budget=Budget(max_attempts=2))
    assert out.stopped == "error" and not out.solved
    assert (out.error or "").startswith("LLMBadRequest")
    assert len(script.bodies("/v1/chat/completions")) <= 2  # never retried


async def test_longcat_tool_rounds_count_against_the_budget(
    runner: ProverRunner, script: FakeLLMScript
) -> None:
    """A model that keeps calling the compiler: every generation is an attempt, so a budget of 3
    means 3 generations in all (1 sample + 2 tool rounds), not 1 + max_tool_calls."""
    call = (
        "<longcat_tool_call>lean4_compiler\n<longcat_arg_key>lean4_code</longcat_arg_key>\n"
        "<longcat_arg_value>import Mathlib\ntheorem probe : 1 = 1 := by rfl</longcat_arg_value>\n"
        "</longcat_tool_call>"
    )
    script.replies = [call]
    events: list[ProverEvent] = []

    async def sink(e: ProverEvent) -> None:
        events.append(e)

    out = await runner.prove(
        TASK, strategy="whole", budget=Budget(max_attempts=3), profile="longcat", on_event=sink
    )
    assert not out.solved and out.stopped == "budget"
    assert len(script.bodies("/v1/chat/completions")) == 3 == out.cost.llm_calls
    assert out.cost.attempts == 3 and out.cost.samples == 1 and out.cost.tool_calls == 2
    assert [e.data.get("tool_round") for e in events if e.kind == "log" and "tool_round" in e.data] == [1, 2]
    assert any(e.data.get("skipped") == "budget" for e in events if e.kind == "log")
