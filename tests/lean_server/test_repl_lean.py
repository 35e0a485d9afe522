"""The REPL backend on a real Lean + Mathlib project (SORRYLESS_LEAN_PROJECT, `lean` marker)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from lean_server.checker import Snippet
from lean_server.service import LeanService
from lean_server.verdict import Verdict
from sorryless.config import Settings
from sorryless.lean_env import probe_lean
from tests.lean_server.core_support import check_all

pytestmark = [pytest.mark.lean, pytest.mark.slow]

HEADER = "import Mathlib\nimport Aesop\n\nset_option maxHeartbeats 400000\n\nopen BigOperators Real Nat Topology Rat\n\n"
MINIF2F = HEADER + (
    "/-- The sum of two consecutive odd numbers is divisible by 4. -/\n"
    "theorem mathd_numbertheory_sum_odd (n : ℕ) : 4 ∣ (2 * n + 1) + (2 * n + 3) := by\n"
    "  exact ⟨n + 1, by ring⟩\n"
)
SORRY = HEADER + "theorem gap (a b : ℝ) (h : a < b) : a ≤ b := by\n  sorry\n"
NATIVE = HEADER + "theorem big : 2 ^ 20 % 7 = 4 := by native_decide\n"
ERROR = HEADER + "theorem wrong (n : ℕ) : n + 1 = n := by\n  simp\n"


@pytest.fixture
async def real_service(redis_url: str, redis_prefix: str) -> AsyncIterator[LeanService]:
    settings = Settings(
        redis_url=redis_url,
        redis_key_prefix=redis_prefix,
        lean_recheck_passing=False,
        lean_max_processes=2,
        lean_check_timeout_s=300,
        _env_file=None,
    )
    status = probe_lean(settings)
    assert status.backend == "repl", (
        f"SORRYLESS_LEAN_PROJECT is set but no REPL is usable: {status.describe()}"
    )
    service = LeanService(settings)
    await service.start()
    yield service
    await service.aclose()


async def test_minif2f_style_proof_sorry_native_and_error(real_service: LeanService) -> None:
    certs = await check_all(
        real_service,
        [
            Snippet(id="pass", code=MINIF2F),
            Snippet(id="sorry", code=SORRY),
            Snippet(id="native", code=NATIVE),
            Snippet(id="error", code=ERROR),
        ],
    )
    assert certs["pass"].verdict is Verdict.PASS, certs["pass"].reasons
    assert set(certs["pass"].axioms["mathd_numbertheory_sum_odd"]) <= {
        "propext",
        "Classical.choice",
        "Quot.sound",
    }
    assert certs["sorry"].verdict is Verdict.SORRY
    assert "sorryAx" in certs["sorry"].axioms["gap"]
    assert certs["native"].verdict is Verdict.CHEAT
    assert any("native" in r for r in certs["native"].reasons)
    assert certs["error"].verdict is Verdict.LEAN_ERROR
    error = next(m for m in certs["error"].messages if m.severity == "error")
    assert error.pos is not None and error.pos.line >= ERROR.count("\n") - 1  # in the original text
    stamp = certs["pass"].environment
    assert stamp.backend == "repl"
