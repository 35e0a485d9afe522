-- expect: new_variable
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

variable [Fact (1 < 2)]
omit [Fact (1 < 2)] in
lemma helper_one : (1 : ℕ) = 1 := rfl
theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  omega
