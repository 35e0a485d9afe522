-- expect: syntax_extension
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

namespace Cheat
lemma helper_one : (1 : ℕ) = 1 := rfl
scoped notation "seven" => (10 : ℕ)
end Cheat
theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  omega
