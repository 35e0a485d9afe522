-- expect: unsafe
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

mutual
  unsafe def loopA : ℕ → False := fun n => loopB n
  unsafe def loopB : ℕ → False := fun n => loopA n
end
theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  omega
