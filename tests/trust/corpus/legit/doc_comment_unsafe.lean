-- expect: pass
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

/-- This helper is not `unsafe` and uses no `axiom`. -/
lemma helper_ok (a : ℕ) (h : a = 3) : a + 7 = 10 := by omega

theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  omega
