-- expect: syntax_extension
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

unif_hint (n : ℕ) where
  n =?= 7 ⊢ n + 0 =?= 7
theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  omega
