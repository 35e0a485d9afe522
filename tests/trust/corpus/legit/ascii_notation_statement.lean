-- expect: pass
-- stub: forall
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

theorem corpus_forall : forall n : ℕ, n <= n + 1 /\ (exists m : ℕ, m >= n) := by
  intro n
  exact ⟨by omega, n, le_refl n⟩
