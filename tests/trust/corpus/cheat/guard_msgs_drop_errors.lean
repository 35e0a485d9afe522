-- expect: suppressed_messages
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

#guard_msgs (drop error) in
lemma helper_bad : (1 : ℕ) = 2 := by
  skip
theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  omega
