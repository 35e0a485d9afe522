-- expect: unknown_command
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

-- a word the checker does not know, at column 0 after a finished helper
lemma helper_one : (1 : ℕ) = 1 := rfl
cheat_notation "seven" => (10 : ℕ)
theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  omega
