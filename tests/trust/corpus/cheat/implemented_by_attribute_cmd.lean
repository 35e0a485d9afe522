-- expect: implemented_by
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

def fastImpl : ℕ := 7
def slow : ℕ := 8
attribute [implemented_by fastImpl] slow
theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  omega
