-- expect: implemented_by
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

def fastImpl : ℕ := 7
@[implemented_by fastImpl] def slow : ℕ := 8
theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  omega
