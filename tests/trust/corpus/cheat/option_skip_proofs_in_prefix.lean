-- expect: banned_option
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

set_option skip_proofs true in
lemma helper_false : (1 : ℕ) = 2 := by
  simp

theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  omega
