-- expect: sorry
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

def down : ℕ → ℕ
  | 0 => 0
  | n + 1 => down (n / 2)
decreasing_by sorry

theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  omega
