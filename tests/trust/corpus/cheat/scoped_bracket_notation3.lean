-- expect: syntax_extension
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

lemma helper_one : (1 : ℕ) = 1 := rfl
scoped[Nat] notation3 "seven" => (10 : ℕ)
theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  omega
