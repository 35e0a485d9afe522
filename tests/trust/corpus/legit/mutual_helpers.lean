-- expect: pass
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

mutual
  def isEven : ℕ → Bool
    | 0 => true
    | n + 1 => isOdd n
  def isOdd : ℕ → Bool
    | 0 => false
    | n + 1 => isEven n
end

theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  omega
