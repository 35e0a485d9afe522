"""Small pieces of the eval command: --budget parsing, the environment stamp, published data."""

from __future__ import annotations

import pytest

from prover.eval.budgetspec import parse_budget
from prover.eval.environment import environment_info
from prover.eval.published import PUBLISHED, published_for
from prover.types import Budget
from sorryless.config import Settings


def test_budget_forms() -> None:
    assert parse_budget(None, default_attempts=32) == Budget(max_attempts=32)
    assert parse_budget("8", default_attempts=32) == Budget(max_attempts=8)
    assert parse_budget("attempts=1,repairs=0,tokens=5000,compile=4,wall=60", default_attempts=32) == Budget(
        max_attempts=1, max_repair_rounds=0, max_tokens=5000, max_compile_calls=4, max_wall_s=60.0
    )
    assert parse_budget("repairs=1", default_attempts=7) == Budget(max_attempts=7, max_repair_rounds=1)
    with pytest.raises(ValueError, match="bad --budget item"):
        parse_budget("samples=3", default_attempts=1)
    with pytest.raises(ValueError, match="bad --budget value"):
        parse_budget("attempts=many", default_attempts=1)
    with pytest.raises(ValueError):
        parse_budget("attempts=0", default_attempts=1)  # Budget's own ge=1


def test_environment_stamp_keeps_no_credentials(settings: Settings) -> None:
    stamped = settings.model_copy(
        update={
            "llm_base_url": "http://user:secret@gpu-box:30000/v1",
            "llm_model": "m",
            "llm_api_key": "sk-x",
        }
    )
    env = environment_info(stamped, profile="kimina")
    assert env.llm_base_url == "http://gpu-box:30000/v1"
    assert "secret" not in env.model_dump_json() and "sk-x" not in env.model_dump_json()
    assert env.llm_model == "m" and env.llm_profile == "kimina"
    assert env.lean_repl_cmd == settings.lean_repl_cmd


def test_published_rows_state_budget_and_lean() -> None:
    assert {r.benchmark for r in PUBLISHED} == {"minif2f", "proofnet", "proverbench", "putnambench"}
    oprover = [r for r in published_for("minif2f") if r.system == "OProver-32B"]
    assert [(r.value, r.k, r.budget) for r in oprover] == [(93.3, 32, "samples")]
    longcat_tir = [r for r in published_for("proofnet") if r.setting == "sketch + TIR"]
    assert [(r.value, r.k, r.budget, r.lean) for r in longcat_tir] == [(47.3, 32, "attempts", "4.15")]
    assert all(r.unit in ("percent", "problems") for r in PUBLISHED)
