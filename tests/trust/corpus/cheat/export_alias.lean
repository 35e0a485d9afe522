-- expect: export_command
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

namespace Cheat
def b : ℕ := 7
end Cheat
export Cheat (b)
theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  omega
