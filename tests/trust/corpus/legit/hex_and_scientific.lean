-- expect: pass
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  have : (0x10 : ℕ) = 16 := rfl
  have : (2.5 : ℝ) = 5 / 2 := by norm_num
  omega
