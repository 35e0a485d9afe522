-- expect: pass
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  obtain ⟨h₂, h₃⟩ : a = 3 ∧ a + b = 10 := ⟨h₁, h₀⟩
  rcases Nat.lt_or_ge b 7 with h | h <;> omega
