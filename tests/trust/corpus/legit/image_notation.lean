-- expect: pass
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

lemma image_helper (f : ℕ → ℕ) (s : Set ℕ) : f '' s ⊆ Set.range f := by
  rintro _ ⟨x, _, rfl⟩
  exact ⟨x, rfl⟩

theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  omega
