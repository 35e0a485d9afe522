-- expect: pass
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  apply Nat.eq_of_mul_eq_mul_left (by norm_num : 0 < 2)
  omega
