-- expect: pass
-- stub: forall
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

theorem corpus_forall : ∀ n : ℕ, n ≤ n + 1 ∧ (∃ m : ℕ, m ≥ n)
  | n => ⟨by omega, n, le_refl n⟩
