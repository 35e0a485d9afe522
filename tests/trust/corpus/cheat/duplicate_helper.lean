-- expect: duplicate_declaration
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

lemma aux : (1 : ℕ) = 1 := rfl
lemma aux : (1 : ℕ) = 1 := rfl
theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  omega
