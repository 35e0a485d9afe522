-- expect: pass
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

namespace Helpers
theorem seven_of (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by omega
end Helpers

theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := Helpers.seven_of a b h₀ h₁
