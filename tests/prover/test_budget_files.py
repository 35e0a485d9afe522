"""Budget accounting, strategy registry, and the sorry-ed-theorem file helpers."""

from __future__ import annotations

import pytest

from prover.budget import Meter
from prover.errors import StrategyUnavailable
from prover.extract import Candidate
from prover.files import apply_proofs, find_sorry_theorems, tasks_from_text
from prover.lean_text import split_stub
from prover.llm import Completion, OpenAICompatibleLLM
from prover.runner import build_runner
from prover.strategies import SequenceStrategy, build_strategy
from prover.types import Budget
from sorryless.config import Settings
from tests.prover.conftest import ScriptedChecker


def test_meter_caps_attempts_tokens_compiles_and_wall() -> None:
    clock = [0.0]
    meter = Meter(
        Budget(max_attempts=5, max_tokens=100, max_compile_calls=3, max_wall_s=10), clock=lambda: clock[0]
    )
    assert meter.reserve(3, sample=True) == 3 and meter.attempts_left() == 2
    assert meter.reserve(4, repair=True) == 2  # clipped to what is left
    assert meter.reserve(1) == 0 and "max_attempts=5" in (meter.exhausted() or "")
    meter.release(2, repair=True)
    assert meter.cost.attempts == 3 and meter.cost.repair_rounds == 0 and meter.exhausted() is None
    meter.record_llm(
        [Completion(text="x", finish_reason="length", prompt_tokens=60, completion_tokens=50)], 0.5
    )
    assert (
        meter.cost.truncated == 1 and meter.cost.tokens == 110 and "max_tokens" in (meter.exhausted() or "")
    )
    assert not meter.can_use_tool()
    meter2 = Meter(Budget(max_compile_calls=1, max_wall_s=10), clock=lambda: clock[0])
    meter2.record_check(0.2, tool_call=True)
    assert meter2.cost.tool_calls == 1 and meter2.reserve(1) == 0
    meter3 = Meter(Budget(max_wall_s=10), clock=lambda: clock[0])
    clock[0] = 11.0
    assert "max_wall_s" in (meter3.exhausted() or "") and meter3.finish().wall_seconds == 11.0


def test_strategy_registry() -> None:
    assert build_strategy("whole").name == "whole"
    assert build_strategy("repair").name == "repair" and build_strategy("repair").needs_llm
    assert not build_strategy("portfolio").needs_llm
    combo = build_strategy("portfolio, repair")
    assert isinstance(combo, SequenceStrategy) and combo.name == "portfolio,repair"
    with pytest.raises(StrategyUnavailable):
        build_strategy("magic")


async def test_build_runner_picks_llm_and_default_strategy(settings: Settings) -> None:
    plain = build_runner(settings, ScriptedChecker())
    assert plain.llm is None and plain.default_strategy() == "portfolio"
    with_llm = build_runner(
        settings.model_copy(update={"llm_base_url": "http://127.0.0.1:9/v1"}), ScriptedChecker()
    )
    try:
        assert isinstance(with_llm.llm, OpenAICompatibleLLM) and with_llm.default_strategy() == "repair"
        assert with_llm.memory is not None
    finally:
        await with_llm.aclose()


SOURCE = """import Mathlib

/-- first -/
theorem a (x : ℕ) : x = x := by
  sorry

theorem b : 2 = 2 := by rfl

theorem c (y : ℕ) : y + 0 = y := by
  simp
  sorry
"""


def test_find_tasks_and_write_back_with_helpers() -> None:
    found = find_sorry_theorems(SOURCE)
    assert [t.name for t in found] == ["a", "c"]
    tasks = tasks_from_text(SOURCE, file_id="f")
    assert [t.id for t in tasks] == ["f:a", "f:c"]
    assert tasks[1].statement.endswith("theorem c (y : ℕ) : y + 0 = y := by sorry\n")
    assert (
        "theorem a" not in tasks[1].statement and "/-- first -/" not in tasks[1].statement
    )  # unsolved: left out
    assert "theorem b : 2 = 2 := by rfl" in tasks[1].statement
    assert split_stub(tasks[0].statement, tasks[0].target).name == "a"
    filled = {
        "c": Candidate(
            code="", body=" by\n  exact helper y", helpers="lemma helper (z : ℕ) : z + 0 = z := by simp"
        )
    }
    out = apply_proofs(SOURCE, filled)
    assert "theorem a (x : ℕ) : x = x := by\n  sorry" in out  # unproved: untouched
    assert (
        "lemma helper (z : ℕ) : z + 0 = z := by simp\n\ntheorem c (y : ℕ) : y + 0 = y := by\n  exact helper y"
        in out
    )
    assert "simp\n  sorry" not in out


def test_write_back_keeps_the_crlf_line_endings_of_the_file() -> None:
    source = "import Mathlib\r\n\r\ntheorem t (n : ℕ) : n * 1 = n := by\r\n  sorry\r\n"
    filled = {"t": Candidate(code="", body=" by\n  simp\n  done", helpers="lemma h : 1 = 1 := by\n  rfl")}
    out = apply_proofs(source, filled)
    assert out == (
        "import Mathlib\r\n\r\nlemma h : 1 = 1 := by\r\n  rfl\r\n\r\n"
        "theorem t (n : ℕ) : n * 1 = n := by\r\n  simp\r\n  done\r\n"
    )
    assert "\n" not in out.replace("\r\n", "")  # no bare LF
