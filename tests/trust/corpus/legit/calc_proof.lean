-- expect: pass
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  calc b = (a + b) - a := by omega
    _ = 10 - 3 := by rw [h₀, h₁]
    _ = 7 := by norm_num
