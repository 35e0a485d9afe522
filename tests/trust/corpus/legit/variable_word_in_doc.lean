-- expect: pass
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

/-- Each variable is bounded; instance resolution is not involved. -/
lemma bounded (a : ℕ) (h : a = 3) : a ≤ 3 := by omega

theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  omega
